"""The loopback server the end-to-end tests serve the emulator from (tests/fixtures/loopback.py)
stops at once, even while it holds a request: a test that interrupts a command mid-call leaves
one held (an emulator fault's latency of a minute), and its teardown must not wait for it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

from tests.e2e.processes import DEADLINE
from tests.fixtures.loopback import LoopbackServer


def test_a_held_request_does_not_keep_the_server_from_stopping() -> None:
    arrived = threading.Event()

    async def hold_forever(scope: Any, receive: Any, send: Any) -> None:
        arrived.set()
        await asyncio.Event().wait()  # nothing sets it: only a stop ends the request

    server = LoopbackServer(hold_forever)
    answers: list[int | str] = []

    def call() -> None:
        try:
            answers.append(httpx.post(f"{server.base_url}/v1/x", timeout=DEADLINE).status_code)
        except httpx.HTTPError as error:
            answers.append(type(error).__name__)

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    assert arrived.wait(DEADLINE), "the request never arrived"
    server.stop()
    assert not server.running  # stopped, not left serving in the background
    caller.join(DEADLINE)
    assert answers, "the held request was still open after the server stopped"
