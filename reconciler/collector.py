"""Pausing Python's cyclic garbage collector while a large model is built.

Loading a manifest and planning a workspace create hundreds of thousands of long-lived
objects and almost no reference cycles. The collector's full passes rescan every one of them,
more often the more there are: measured on the planner alone, 669 us per app at 10,000 apps
against 471 at 1,000 with them, 472 and 450 without (`tests/perf/bench_plan_cpu.py`), so
pausing them is what keeps the per-app cost flat.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block without the collector's full passes; restore them as they were (nests)."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, 2**31 - 1)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)
