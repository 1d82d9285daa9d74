"""Benchmark: `reconciler plan` and `apply` as users run them, at real latencies and parallelisms.

    .venv/bin/python tests/perf/bench_parallelism.py [--quick]

Every figure is of commands in their own processes against `reconciler emulator` processes on
loopback, each emulator serving a state seeded beforehand (with no latency) from `--state`:

- the fixed start-up of a command: `reconciler plan` of the workspace with a key the platform
  refuses (interpreter, imports, manifest load, one call answered 401, exit); the median of 3;
- the whole `reconciler plan` of 200 apps (converged) at 20 ms and `--parallelism` 10, 32, 64
  and 128, the median of 3, over its bound: ceil(calls / parallelism) x latency + the fixed
  start-up (goal <= 1.3);
- the same plan at 5, 50 and 100 ms and parallelism 10, 32 and 64: what the default is chosen
  from; and 1,000 apps over 100 ms at the default (goal <= 1.3);
- `reconciler apply` of 1,000 apps from an empty platform at 5 ms, at parallelism 10 (as the
  issue measured it) and at the default: its calls, the `domains.getDomain` answered 404 among
  them (goal 0), and its wall time over its bound (ceil(calls / parallelism) + 6 rounds of
  dependencies) x latency + the fixed start-up (goal <= 1.5);
- `reconciler plan` of 10,000 apps (200 projects of 50) at 5 ms: wall time (goal <= 40 s),
  peak memory, and its CPU per app over the same at 1,000 apps (goal <= 1.2).

The workspace is `team_workspace` (image apps; both environments with runtime settings, a
region, 2 variables, a firewall policy and a custom domain). Ratios measured in one run; the
machine's load is printed with each.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PERF = Path(__file__).resolve().parent
ROOT = PERF.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(PERF))

import bench_emulator_cpu  # noqa: E402
import httpx  # noqa: E402

from reconciler.apply import ApplyOptions, execute  # noqa: E402
from reconciler.cli.interrupts import run_async  # noqa: E402
from reconciler.cli.options import DEFAULT_PARALLELISM  # noqa: E402
from reconciler.emulator.app import EmulatorConfig, create_app  # noqa: E402
from reconciler.manifest.validate import load_manifest  # noqa: E402
from reconciler.plan.planner import PlanOptions, build_plan  # noqa: E402
from reconciler.plan.secrets import resolve_ref  # noqa: E402
from reconciler.platform.client import PlatformClient  # noqa: E402
from tests.fixtures.manifests import team_workspace  # noqa: E402

KEY = bench_emulator_cpu.KEY
APPLY_DEPTH = 6  # rounds of dependencies of an apply from nothing (project, app, settings...)


@dataclass
class Measured:
    exit_code: int
    seconds: float
    cpu: float  # the command's own CPU seconds (user + system)
    peak_mib: float
    calls: int = 0
    not_found_lookups: int = 0


GNU_TIME = Path("/usr/bin/time")


def command(argv: list[str], key: str = KEY) -> Measured:
    """Run `reconciler ARGV` in its own process; its wall time, CPU and peak memory.

    The peak is GNU time's report where it is installed: a child's own `ru_maxrss` counts the
    memory of the process it was forked from (this one, large after the seeding) until it
    runs the command, and GNU time forks it from a small process."""
    env = {**os.environ, "RECONCILER_API_KEY": key}
    env.pop("RECONCILER_PARALLELISM", None)
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak"
        wrapper = [str(GNU_TIME), "-f", "%M", "-o", str(peak_file)] if GNU_TIME.exists() else []
        with tempfile.TemporaryFile() as output:
            started = time.perf_counter()
            child = subprocess.Popen(
                [*wrapper, sys.executable, "-m", "reconciler", *argv],
                stdout=output,
                stderr=output,
                env=env,
                cwd=ROOT,
            )
            _, status, usage = os.wait4(child.pid, 0)
            seconds = time.perf_counter() - started
        peak_kib = usage.ru_maxrss
        if wrapper and peak_file.exists():
            peak_kib = int(peak_file.read_text().split()[-1])
    return Measured(
        os.waitstatus_to_exitcode(status), seconds, usage.ru_utime + usage.ru_stime, peak_kib / 1024
    )


def counted(base_url: str, argv: list[str], key: str = KEY) -> Measured:
    """`command`, with the calls the emulator answered to it and its getDomain 404s."""
    before = len(bench_emulator_cpu.emulator_requests(base_url))
    measured = command(argv, key)
    answered = bench_emulator_cpu.emulator_requests(base_url)[before:]
    measured.calls = len(answered)
    measured.not_found_lookups = sum(
        1 for r in answered if r["operation"] == "domains.getDomain" and r["status"] == 404
    )
    return measured


@contextmanager
def emulator(latency_ms: int, state: Path | None = None) -> Iterator[str]:
    command_line = bench_emulator_cpu.emulator_command(latency_ms, state)
    with bench_emulator_cpu.server(command_line) as server:
        yield server.base_url


def workspace(directory: Path, apps: int, per_project: int) -> Path:
    path = directory / f"workspace-{apps}.yaml"
    path.write_text(team_workspace(apps, max(1, math.ceil(apps / per_project))), encoding="utf-8")
    return path


def seeded(directory: Path, manifest: Path) -> Path:
    """A state file holding the workspace applied: in-process, with no latency, saved once
    (an emulator serving `--state` saves its whole state after each change)."""
    state = directory / f"{manifest.stem}.state.json"

    async def apply() -> None:
        app = create_app(EmulatorConfig(dev_key=KEY))
        transport = httpx.ASGITransport(app=app)
        async with PlatformClient("http://local", KEY, parallelism=32, transport=transport) as c:
            planned = await build_plan(load_manifest([manifest]), c, PlanOptions(max_deletes=0))
            done = await execute(
                planned, c, resolve=resolve_ref, options=ApplyOptions(parallelism=32)
            )
        if not done.complete:
            raise RuntimeError(f"seeding {manifest.name} failed")
        store = app.state.emulator.store
        store.path = state
        store.save()

    run_async(apply())
    return state


def fresh(state: Path) -> Path:
    """A copy of a seeded state for one emulator (it writes its state back)."""
    copy = state.with_name(f"{state.stem}.{time.monotonic_ns()}.json")
    shutil.copyfile(state, copy)
    return copy


def plan(base_url: str, manifest: Path, parallelism: int) -> list[str]:
    return ["plan", "-f", str(manifest), "--base-url", base_url, "--parallelism", str(parallelism)]


def median_of(base_url: str, argv: list[str], runs: int, key: str = KEY) -> Measured:
    """The run of median wall time of `runs` after one untimed run."""
    command(argv, key)
    found = sorted((counted(base_url, argv, key) for _ in range(runs)), key=lambda m: m.seconds)
    return found[len(found) // 2]


def fixed_startup(base_url: str, manifest: Path, runs: int = 3) -> float:
    """Wall seconds of a plan that stops at its first call (a refused key): everything a
    command pays besides its reads."""
    argv = plan(base_url, manifest, DEFAULT_PARALLELISM)
    return median_of(base_url, argv, runs, key="refused-key-0000").seconds


@dataclass
class Row:
    what: str
    latency_ms: int
    parallelism: int
    measured: Measured
    bound: float  # seconds, the fixed start-up included
    fixed: float
    load: str

    @property
    def ratio(self) -> float:
        return self.measured.seconds / self.bound

    def line(self) -> str:
        m = self.measured
        return (
            f"| {self.what} | {self.latency_ms} | {self.parallelism} | {m.exit_code} | {m.calls} | "
            f"{m.seconds:.2f} | {self.bound - self.fixed:.2f} + {self.fixed:.2f} | "
            f"{self.ratio:.2f} | {m.cpu / max(1, m.calls) * 1000:.2f} | {m.peak_mib:.0f} | "
            f"{self.load} |"
        )


HEADER = [
    "| command | latency ms | parallelism | exit | calls | wall s | bound s (reads + start-up) "
    "| ratio | command CPU ms/call | peak MiB | load |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
]


def plan_row(
    what: str, state: Path, manifest: Path, latency_ms: int, parallelism: int, runs: int
) -> tuple[Row, float]:
    with emulator(latency_ms, fresh(state)) as base_url:
        fixed = fixed_startup(base_url, manifest)
        measured = median_of(base_url, plan(base_url, manifest, parallelism), runs)
    reads = math.ceil(measured.calls / parallelism) * latency_ms / 1000
    row = Row(
        what, latency_ms, parallelism, measured, reads + fixed, fixed, bench_emulator_cpu.load()
    )
    return row, fixed


@dataclass
class Results:
    rows: list[Row]
    by_parallelism: dict[int, Row]  # 200 apps at 20 ms
    sweep: dict[tuple[int, int], Row]  # (latency, parallelism) -> 200 apps
    far: Row  # 1,000 apps over 100 ms at the default
    apply_empty: dict[int, Row]  # by parallelism: 10 (the measurement) and the default
    scale_small: Row
    scale_large: Row


def measure(quick: bool = False) -> Results:
    runs = 1 if quick else 3
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        small = workspace(directory, 200, 20)
        small_state = seeded(directory, small)
        by_parallelism = {}
        for parallelism in (10, 32, 64, 128):
            row, _ = plan_row("plan, 200 apps", small_state, small, 20, parallelism, runs)
            by_parallelism[parallelism] = row
            rows.append(row)
        print("  200 apps at 20 ms measured", file=sys.stderr, flush=True)
        sweep = {}
        for latency in (5, 50, 100):
            for parallelism in (10, 32, 64):
                row, _ = plan_row("plan, 200 apps", small_state, small, latency, parallelism, 1)
                sweep[latency, parallelism] = row
                rows.append(row)
        print("  the latency sweep measured", file=sys.stderr, flush=True)
        middle = workspace(directory, 1000, 20)
        middle_state = seeded(directory, middle)
        far, _ = plan_row("plan, 1,000 apps", middle_state, middle, 100, DEFAULT_PARALLELISM, 1)
        rows.append(far)
        applies = {}
        for parallelism in (10, DEFAULT_PARALLELISM):
            with emulator(5) as base_url:
                fixed = fixed_startup(base_url, middle)
                argv = ["apply", "-f", str(middle), "--base-url", base_url, "--auto-approve"]
                measured = counted(base_url, [*argv, "--parallelism", str(parallelism)])
            rounds = math.ceil(measured.calls / parallelism) + APPLY_DEPTH
            applies[parallelism] = Row(
                "apply from empty, 1,000 apps",
                5,
                parallelism,
                measured,
                rounds * 0.005 + fixed,
                fixed,
                bench_emulator_cpu.load(),
            )
            rows.append(applies[parallelism])
        print("  1,000 apps measured", file=sys.stderr, flush=True)
        scale_small, _ = plan_row(
            "plan, 1,000 apps", middle_state, middle, 5, DEFAULT_PARALLELISM, 1
        )
        large = workspace(directory, 10_000, 50)
        large_state = seeded(directory, large)
        scale_large, _ = plan_row(
            "plan, 10,000 apps", large_state, large, 5, DEFAULT_PARALLELISM, 1
        )
        rows += [scale_small, scale_large]
        print("  10,000 apps measured", file=sys.stderr, flush=True)
    return Results(rows, by_parallelism, sweep, far, applies, scale_small, scale_large)


def report(results: Results) -> list[str]:
    return [
        "Commands in their own processes; emulator in its own, serving a seeded state. "
        "Bound: ceil(calls / parallelism) x latency (+ 6 rounds for an apply) + the fixed "
        "start-up measured beside it.",
        "",
        *HEADER,
        *(row.line() for row in results.rows),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each, not 3")
    args = parser.parse_args()
    print("\n".join(report(measure(args.quick))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
