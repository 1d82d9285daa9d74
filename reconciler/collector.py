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

_OFF = 2**31 - 1  # a third threshold no count of young passes reaches
_pauses = 0  # pauses running now; they overlap when plans are built concurrently
_threshold = 0  # the third threshold to restore when the last of them ends


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block without the collector's full passes; they come back when the last
    pause running ends, whatever order pauses that overlap (two plans in one loop) end in."""
    global _pauses, _threshold
    young, middle, old = gc.get_threshold()
    if _pauses == 0:
        _threshold = old
        gc.set_threshold(young, middle, _OFF)
    _pauses += 1
    try:
        yield
    finally:
        _pauses -= 1
        if _pauses == 0:
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, _threshold)
