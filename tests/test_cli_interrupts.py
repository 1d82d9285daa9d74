"""SIGTERM stops a command's event loop at an `await`, never in the middle of a step.

A signal handler that raises runs between any two bytecodes: inside the loop it would break a
step halfway (a result half recorded, a connection half returned), and that is what the
interrupted apply's report is then built from. These tests send the signal while a step runs
and check that the step completes and the command's work is cancelled at its next await.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from reconciler.cli.interrupts import interrupt_on_sigterm, run_async

STEPS = 10_000


@pytest.fixture(params=[False, True], ids=["foreground", "background-job"])
def sigterm_as_interrupt(request: pytest.FixtureRequest) -> Iterator[None]:
    """The command group's signal set-up; a shell starts a background job with SIGINT ignored."""
    sigint = signal.signal(
        signal.SIGINT, signal.SIG_IGN if request.param else signal.default_int_handler
    )
    restore = interrupt_on_sigterm()
    try:
        yield
    finally:
        restore()
        signal.signal(signal.SIGINT, sigint)


def test_sigterm_lets_the_running_step_finish_and_cancels_at_the_next_await(
    sigterm_as_interrupt: None,
) -> None:
    done: list[int] = []
    cleaned_up: list[bool] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            for step in range(STEPS):  # a step of synchronous bookkeeping
                done.append(step)
            await asyncio.sleep(30)
            done.append(-1)  # never: cancelled at the await above
        finally:
            cleaned_up.append(True)

    with pytest.raises(KeyboardInterrupt):
        run_async(work())
    assert len(done) == STEPS
    assert cleaned_up == [True]


def test_sigterm_outside_the_loop_is_a_keyboard_interrupt_at_once(
    sigterm_as_interrupt: None,
) -> None:
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(STEPS):
            pass


def test_the_handlers_outside_the_loop_come_back_after_it(sigterm_as_interrupt: None) -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 7

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    assert run_async(work()) == 7
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
