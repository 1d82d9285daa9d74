"""Benchmark: ordering apply's calls when one environment has many variables.

    .venv/bin/python tests/perf/bench_call_graph.py [VARIABLES ...]   # default 1000 10000

Each variable is its own change; the changes of a batch of 50 share one
`environments.setEnvironmentVariables` call (the platform's limit per call), and the call
graph (`reconciler.apply.call_graph.CallGraph`) finds, for every change without a call, the
batch call that decides it. Prints the CPU time per variable of building the graph at each
size, the growth between the first and the last size (target <= 1.2: no term that grows with
the square of the variables), and the machine's load.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from reconciler.apply.call_graph import CallGraph
from tests.engine.apply_plans import plan_of, variables

GROWTH_TARGET = 1.2


def cpu_per_variable(count: int, repeats: int = 3) -> float:
    """The lowest CPU seconds per variable of building the graph, over `repeats` builds."""
    plan = plan_of(*variables("shop", "web", "production", [f"K{i}" for i in range(count)]))
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        CallGraph(plan)
        best = min(best, time.process_time() - started)
    return best / count


def growth(sizes: list[int]) -> float:
    """CPU per variable at the last size over the first, measured in a fresh interpreter: the
    collector's passes walk the whole heap, and a caller's own heap (run_all's, after its
    other benchmarks) would be measured with it."""
    done = subprocess.run(
        [sys.executable, __file__, *map(str, sizes)], capture_output=True, text=True, check=False
    )
    found = re.search(r"^growth \S+: ([\d.]+)", done.stdout, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"bench_call_graph failed:\n{done.stdout}{done.stderr[-2000:]}")
    return float(found.group(1))


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [1000, 10000]
    print(f"machine: {os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    per = {n: cpu_per_variable(n) for n in sizes}
    for n, seconds in per.items():
        print(f"{n} variables in one environment: {seconds * 1e6:.1f} us CPU per variable")
    growth = per[sizes[-1]] / per[sizes[0]]
    print(
        f"growth {sizes[-1]}/{sizes[0]}: {growth:.2f} (target <= {GROWTH_TARGET}); "
        f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    return 0 if growth <= GROWTH_TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
