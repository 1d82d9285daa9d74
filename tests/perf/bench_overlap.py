"""Benchmark: what the plan's reads lose when the manifest's load runs beside them.

    .venv/bin/python tests/perf/bench_overlap.py [--apps 200] [--rounds 2]
                                                 [--latency-ms 20] [--parallelism 10]

The whole command loads the manifest before its first read. Overlapping the two is the only
way left to take the load's time off the whole command (docs/performance.md), so this
measures what an overlap would gain before anyone builds one. Against one `reconciler
emulator --latency-ms N` process holding the issue's workspace (`team_workspace`, converged),
the converged plan phase runs in turn:

- alone;
- while the same manifest is loaded again on another thread (the real load: a loader on a
  thread of its own);
- beside a stand-in for the load done on the event loop itself: arithmetic of the load's CPU
  time in slices of 0.3, 1 and 5 ms, each slice yielding to the loop (what a loader that
  hands the loop back every slice, a streaming one, would cost at best: the stand-in creates
  no objects, so it brings on none of the collector's passes a real load does).

For each it prints the time until both the plan and what ran beside it are done, over the
plan's bound, and the share of the load's time it hid (1 - (that time - plan alone) / load
alone, none when negative): 1 is a perfect overlap, 0 none.
Variants run in `--rounds` interleaved rounds, in a rotated order each round; the lowest time
of each is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF.parents[1]))
sys.path.insert(0, str(PERF))

import bench_apply  # noqa: E402
import bench_emulator_cpu  # noqa: E402

from reconciler.apply import ApplyOptions, execute  # noqa: E402
from reconciler.cli.interrupts import run_async  # noqa: E402
from reconciler.manifest.model import Manifest  # noqa: E402
from reconciler.manifest.validate import load_manifest  # noqa: E402
from reconciler.plan.planner import PlanOptions, build_plan  # noqa: E402
from reconciler.plan.secrets import resolve_ref  # noqa: E402
from reconciler.platform.client import PlatformClient  # noqa: E402
from tests.fixtures.manifests import team_workspace  # noqa: E402

SLICES_MS = (0.3, 1.0, 5.0)
Beside = Callable[[], Awaitable[None]]  # started with the plan, awaited after it


def load_seconds(path: Path) -> float:
    started = time.perf_counter()
    load_manifest([path])
    return time.perf_counter() - started


def load_on_thread(path: Path) -> Beside:
    """The real load, on a thread of its own."""

    async def beside() -> None:
        await asyncio.to_thread(load_manifest, [path])

    return beside


def cpu_in_slices(seconds: float, slice_ms: float) -> Beside:
    """`seconds` of CPU on the event loop, handing it back after every `slice_ms`."""

    async def beside() -> None:
        done = 0.0
        while done < seconds:
            started = time.thread_time()
            until = started + slice_ms / 1000
            while time.thread_time() < until:
                sum(range(200))
            done += time.thread_time() - started
            await asyncio.sleep(0)

    return beside


async def plan_seconds(
    client: PlatformClient, manifest: Manifest, beside: Beside | None
) -> tuple[float, float, int]:
    """Wall seconds until the converged plan and `beside` (started with it) are both done,
    the event loop's CPU seconds over them, and the plan's calls."""
    client.calls = 0
    started, cpu = time.perf_counter(), time.thread_time()
    work = asyncio.ensure_future(beside()) if beside is not None else None
    plan = await build_plan(manifest, client, PlanOptions())
    if work is not None:
        await work  # a load that ends after the plan is still part of the command's time
    seconds, cpu = time.perf_counter() - started, time.thread_time() - cpu
    if plan.changes:
        raise RuntimeError(f"the plan is not converged: {len(plan.changes)} changes")
    return seconds, cpu, client.calls


async def measure(args: argparse.Namespace, base_url: str, path: Path) -> list[str]:
    manifest = load_manifest([path])
    load = min(load_seconds(path) for _ in range(3))
    variants: dict[str, Beside | None] = {
        "plan alone": None,
        "load on another thread": load_on_thread(path),
        **{f"stand-in on the loop, {s:g} ms slices": cpu_in_slices(load, s) for s in SLICES_MS},
    }
    best: dict[str, tuple[float, float]] = {}  # name: (wall, loop CPU) of its fastest round
    names = list(variants)
    async with PlatformClient(base_url, bench_apply.API_KEY, parallelism=args.parallelism) as c:
        plan = await build_plan(manifest, c, PlanOptions())
        await execute(
            plan, c, resolve=resolve_ref, options=ApplyOptions(parallelism=args.parallelism)
        )
        for turn in range(args.rounds):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                seconds, cpu, calls = await plan_seconds(c, manifest, variants[name])
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, cpu)
    bound = math.ceil(calls / args.parallelism) * args.latency_ms / 1000
    alone, busy = best["plan alone"]
    lines = [
        f"machine: {bench_emulator_cpu.load()}",
        f"{args.apps} apps, {calls} calls, bound {bound:.2f} s; manifest load alone {load:.3f} s",
        f"plan alone: {alone:.2f} s, of which the event loop's CPU {busy:.2f} s",
        "| beside the plan's reads | until both are done / bound | share of the load hidden |",
        "|---|---:|---:|",
    ]
    for name, (seconds, _) in best.items():
        hidden = 1 - (seconds - alone) / load
        shown = "" if name == "plan alone" else f"{hidden:.2f}" if hidden > 0 else "none"
        lines.append(f"| {name} | {seconds / bound:.3f} | {shown} |")
    lines.append(f"machine after: {bench_emulator_cpu.load()}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, choices=range(1, 21), metavar="1..20")
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--parallelism", type=int, default=10)
    args = parser.parse_args()
    projects = max(1, math.ceil(args.apps / 20))
    with (
        bench_apply.emulator_process(args.latency_ms) as base_url,
        tempfile.TemporaryDirectory() as directory,
    ):
        path = Path(directory) / "workspace.yaml"
        path.write_text(team_workspace(args.apps, projects), encoding="utf-8")
        print("\n".join(run_async(measure(args, base_url, path))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
