"""Ctrl-C and SIGTERM: how a command stops, in one place.

CI sends SIGTERM to cancel a job and `kill` sends it by default; both must stop a command
the way Ctrl-C does (exit 130, with what an interrupted apply did), whatever the command is
doing when the signal comes:

- in synchronous code (reading manifests, rendering), a KeyboardInterrupt is raised there;
- while the event loop runs, the signal cancels the command's task, which stops at its next
  `await` and unwinds through its own clean-up; only then is it a KeyboardInterrupt.
  Raising from a signal handler there would raise at whatever line the loop is on (inside
  the selector, a transport's callback), and nothing could report from it;
- at a question (`apply`'s confirmation), the loop waits for the person, not for an
  `await`: the signal raises at once.

asyncio's own SIGINT handling does the second for Ctrl-C, but only when SIGINT has its
default handler; a shell starts a background job (`reconciler apply &`) with SIGINT ignored,
and then SIGTERM is the only way to stop it. SIGINT keeps whatever disposition the process
was started with.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from reconciler.cli import event_loop

T = TypeVar("T")


def _in_main_thread() -> bool:
    # Only the main thread may set signal handlers (tests run some commands in others).
    return threading.current_thread() is threading.main_thread()


def interrupt_on_sigterm() -> Callable[[], None]:
    """Handle SIGTERM as Ctrl-C until the returned function is called."""
    if not _in_main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`, where SIGTERM cancels `work` as asyncio's Ctrl-C does, and
    either then raises KeyboardInterrupt once the loop has closed."""
    with asyncio.Runner(loop_factory=event_loop.factory()) as runner:
        outcome = runner.run(_cancelled_on_sigterm(work))
    if isinstance(outcome, _Terminated):
        raise KeyboardInterrupt
    return outcome


class _Terminated:
    """What `_cancelled_on_sigterm` returns when SIGTERM cancelled the work."""


async def _cancelled_on_sigterm(work: Coroutine[Any, Any, T]) -> T | _Terminated:
    if not _in_main_thread():
        return await work
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None  # asyncio.run runs this coroutine as a task
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    outside = signal.getsignal(signal.SIGTERM)
    loop.add_signal_handler(signal.SIGTERM, terminate)
    try:
        return await work
    except asyncio.CancelledError:
        if not terminated:
            raise
        return _Terminated()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)  # which leaves SIG_DFL, not `outside`
        signal.signal(signal.SIGTERM, outside)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop a question at once.

    While the loop runs, both only ask the running task to stop at its next `await`, and a
    person typing at the question never reaches one: nothing would happen until Enter."""
    if not _in_main_thread():
        yield
        return
    numbers = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        numbers.append(signal.SIGINT)
    previous = {number: signal.signal(number, signal.default_int_handler) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
