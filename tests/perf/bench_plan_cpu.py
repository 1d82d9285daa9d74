"""Benchmark the plan's own CPU time on one project of many apps (no network at all).

    .venv/bin/python tests/perf/bench_plan_cpu.py [APPS ...]   (default: 2000 8000)

The workspace and the client that answers every read at once are tests/engine/large_plans.py's,
so what is measured is the planner itself (diffing, ordering, dependencies, notes, the live
digest), then rendering the plan as text and JSON. Prints, per size, the CPU seconds and the
microseconds per app: a linear planner keeps the second figure flat as the size grows.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # runnable as a script

from reconciler.cli.interrupts import run_async
from reconciler.plan.planner import PlanOptions, build_plan
from reconciler.report.plan_json import render_json, render_text
from tests.engine.large_plans import InstantClient, large_manifest


def measure(apps: int) -> tuple[float, float, int]:
    desired = large_manifest(apps)
    started = time.process_time()
    plan = run_async(build_plan(desired, InstantClient(apps), PlanOptions(max_deletes=apps)))
    planned = time.process_time()
    render_text(plan)
    render_json(plan)
    rendered = time.process_time()
    return planned - started, rendered - planned, len(plan.changes)


def main(sizes: list[int]) -> None:
    for apps in sizes:
        plan_seconds, render_seconds, changes = measure(apps)
        print(
            f"{apps} apps ({changes} changes): plan {plan_seconds:.2f} s CPU "
            f"({plan_seconds / apps * 1e6:.0f} us per app), render text+json "
            f"{render_seconds:.2f} s ({render_seconds / apps * 1e6:.0f} us per app)"
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2000, 8000])
