"""Which event loop commands run on: uvloop's where it can be, else asyncio's.

uvloop (libuv) is a dependency on every CPython but Windows' (the emulator's server wants it
too), and a plan's client spends a tenth less CPU per call on it than on asyncio's loop
(`tests/perf/bench_client.py`). But libuv aborts the process when it closes a descriptor below
3, and a process started with standard input, output or error closed (`<&-`, `>&-`, `2>&-`)
hands that descriptor to the next epoll instance or socket it opens (libuv/libuv#4558).
asyncio's loop has no such assumption, so it runs those.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable


def factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory, or None for asyncio's (`asyncio.Runner(loop_factory=...)`)."""
    if not all(_is_open(descriptor) for descriptor in (0, 1, 2)):
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _is_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return False
    return True
