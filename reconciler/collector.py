"""Pausing Python's cyclic garbage collector while a large model is built, and at exit.

Loading a manifest and planning a workspace create hundreds of thousands of long-lived
objects and almost no reference cycles. The collector's full passes rescan every one of them,
more often the more there are: measured on the planner alone, 669 us per app at 10,000 apps
against 471 at 1,000 with them, 472 and 450 without (`tests/perf/bench_plan_cpu.py`), so
pausing them is what keeps the per-app cost flat.
"""

from __future__ import annotations

import atexit
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


def skip_collection_at_exit() -> None:
    """Leave the interpreter's last collection, at exit, nothing to walk (once per process).

    Before it exits, Python runs one full collection over every object still alive (a
    200-app plan's model, live state and plan: about 30 ms) and then frees them by reference
    counting all the same. Freezing them at exit (moving them out of the collector's sight)
    skips that walk. What it gives up: objects in reference cycles that are garbage by then
    are not finalized, as objects alive at exit may not be (the language promises no
    `__del__` then); a command has closed its files, its client and its loop when it returns,
    so nothing it writes waits on a finalizer."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
