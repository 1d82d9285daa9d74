"""Benchmark: plan and apply against a rate-limited platform, as commands, at each rate.

    .venv/bin/python tests/perf/bench_rate_limit.py [--rates 20,100,500] [--apps 200]
                                                    [--latency-ms 20] [--parallelism N]

For each rate R a fresh `reconciler emulator --rate-limit R --latency-ms N` (a token bucket
of R requests a second, bursts of R, answering 429 with `Retry-After`) serves on loopback from
its own process, and two commands run in their own processes, as users run them:
`reconciler apply -f WORKSPACE --auto-approve` from an empty platform (its plan's reads and its
writes), then `reconciler plan -f WORKSPACE` against what it made (every read, no change). For
each: its exit code, its wall time, the requests the emulator answered (`/_emulator/requests`)
and how many were 429, and the wall time over `calls / R` (calls: the requests answered
otherwise than 429, so the least time the rate allows them, the bucket's first burst aside).
Goals: exit 0, wall / (calls / R) <= 1.25, 429s <= 5% of requests. The workspace is
`team_workspace` (projects of 20 image apps), as in run_all.py. The fixed start-up of a command
(interpreter, imports, manifest; run_all.py measures it) is inside the wall time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PERF = Path(__file__).resolve().parent
ROOT = PERF.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(PERF))

import bench_emulator_cpu  # noqa: E402

from tests.fixtures.manifests import team_workspace  # noqa: E402

APPS_PER_PROJECT = 20
WALL_GOAL = 1.25
LIMITED_GOAL = 0.05


@dataclass
class Run:
    rate: float
    command: str  # "apply" or "plan"
    exit_code: int
    seconds: float
    requests: int
    limited: int  # answered 429
    load: str

    @property
    def calls(self) -> int:
        return self.requests - self.limited

    @property
    def wall_ratio(self) -> float:
        return self.seconds / (self.calls / self.rate)

    @property
    def limited_share(self) -> float:
        return self.limited / self.requests if self.requests else 0.0

    @property
    def met(self) -> bool:
        return (
            self.exit_code == 0
            and self.wall_ratio <= WALL_GOAL
            and self.limited_share <= LIMITED_GOAL
        )

    def row(self) -> str:
        return (
            f"| {self.rate:g}/s | `reconciler {self.command}` | {self.exit_code} | "
            f"{self.requests} | {self.limited} ({self.limited_share:.1%}) | {self.seconds:.2f} | "
            f"{self.calls / self.rate:.2f} | {self.wall_ratio:.2f} | {self.load} |"
        )


HEADER = [
    "| rate limit | command | exit | requests | answered 429 | wall s | calls / R s | ratio | load |",
    "|---:|---|---:|---:|---:|---:|---:|---:|---|",
]


def run_command(
    base_url: str, rate: float, command: str, manifest: Path, parallelism: int | None
) -> Run:
    before = len(bench_emulator_cpu.emulator_requests(base_url))
    argv = [
        sys.executable,
        "-m",
        "reconciler",
        command,
        "-f",
        str(manifest),
        "--base-url",
        base_url,
    ]
    if command == "apply":
        argv.append("--auto-approve")
    if parallelism is not None:
        argv += ["--parallelism", str(parallelism)]
    env = {**os.environ, "RECONCILER_API_KEY": bench_emulator_cpu.KEY}
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    answered = bench_emulator_cpu.emulator_requests(base_url)[before:]
    limited = sum(1 for r in answered if r["status"] == 429)
    return Run(
        rate, command, done.returncode, seconds, len(answered), limited, bench_emulator_cpu.load()
    )


def measure(rates: list[float], apps: int, latency_ms: int, parallelism: int | None) -> list[Run]:
    runs: list[Run] = []
    projects = max(1, -(-apps // APPS_PER_PROJECT))
    with tempfile.TemporaryDirectory() as directory:
        manifest = Path(directory) / "workspace.yaml"
        manifest.write_text(team_workspace(apps, projects), encoding="utf-8")
        for rate in rates:
            command = [
                *bench_emulator_cpu.emulator_command(latency_ms),
                *("--rate-limit", f"{rate:g}"),
            ]
            with bench_emulator_cpu.server(command) as emulator:
                for name in ("apply", "plan"):
                    runs.append(run_command(emulator.base_url, rate, name, manifest, parallelism))
                    print(f"  rate {rate:g}/s: {name} measured", file=sys.stderr, flush=True)
    return runs


def report(runs: list[Run], apps: int, latency_ms: int, parallelism: int | None) -> list[str]:
    shown = "the default" if parallelism is None else str(parallelism)
    return [
        f"Rate-limited platform: {apps} apps, emulator --latency-ms {latency_ms} --rate-limit R, "
        f"parallelism {shown}; goals: exit 0, wall <= {WALL_GOAL} x calls / R, "
        f"<= {LIMITED_GOAL:.0%} of requests answered 429.",
        "",
        *HEADER,
        *(r.row() for r in runs),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="20,100,500")
    parser.add_argument("--apps", type=int, default=200)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=None)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    runs = measure(rates, args.apps, args.latency_ms, args.parallelism)
    print("\n".join(report(runs, args.apps, args.latency_ms, args.parallelism)))
    return 0 if all(r.met for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
