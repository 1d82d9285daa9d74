"""The client's transport: one connection per request slot (reconciler/platform/transport.py),
each httpcore's connection with httpx's face.

Each slot is a transport of its own; a request takes an idle slot (the one used last), makes
one while fewer than the bound exist, or waits; the slot comes back when the answer is closed
or the request fails. Counted with stand-in slots, never timed."""

from __future__ import annotations

import asyncio
import ssl

import httpx
import pytest

from reconciler.platform.transport import OneConnection, SlotTransport, origin_transport
from tests.platform.helpers import run
from tests.platform.servers import raw_server

URL = "http://platform.test/v1/apps.getApp"


class Body(httpx.AsyncByteStream):
    """A body read as it streams, as a real connection's is (not read whole beforehand)."""

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        yield b"{}"


class Slots:
    """Makes stand-in slots; each answers after `release` is set and records what it served."""

    def __init__(self) -> None:
        self.made: list[httpx.MockTransport] = []
        self.served: list[int] = []  # the index of the slot that served each request
        self.release = asyncio.Event()
        self.in_flight = 0
        self.peak = 0
        self.fail_next = False

    def make(self) -> httpx.AsyncBaseTransport:
        index = len(self.made)

        async def handler(request: httpx.Request) -> httpx.Response:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                await self.release.wait()
                if self.fail_next:
                    self.fail_next = False
                    raise httpx.ConnectError("refused", request=request)
                self.served.append(index)
                return httpx.Response(200, stream=Body())
            finally:
                self.in_flight -= 1

        transport = httpx.MockTransport(handler)
        self.made.append(transport)
        return transport


async def send(transport: httpx.AsyncBaseTransport) -> bytes:
    response = await transport.handle_async_request(httpx.Request("POST", URL))
    try:
        return await response.aread()
    finally:
        await response.aclose()


def test_concurrent_requests_each_get_a_slot_of_their_own_up_to_the_bound() -> None:
    slots = Slots()
    transport = SlotTransport(slots.make, 3)

    async def many() -> None:
        tasks = [asyncio.ensure_future(send(transport)) for _ in range(7)]
        for _ in range(5):
            await asyncio.sleep(0)
        assert slots.in_flight == 3  # the other four wait for a slot
        slots.release.set()
        await asyncio.gather(*tasks)

    run(many())
    assert len(slots.made) == 3 and slots.peak == 3
    assert len(slots.served) == 7


def test_one_request_after_another_reuses_the_slot_used_last() -> None:
    slots = Slots()
    slots.release.set()
    transport = SlotTransport(slots.make, 10)

    async def in_turn() -> None:
        for _ in range(5):
            await send(transport)

    run(in_turn())
    assert len(slots.made) == 1 and slots.served == [0] * 5


def test_a_failed_request_gives_its_slot_back() -> None:
    slots = Slots()
    slots.release.set()
    transport = SlotTransport(slots.make, 1)

    async def fail_then_succeed() -> None:
        slots.fail_next = True
        with pytest.raises(httpx.ConnectError):
            await send(transport)
        assert await send(transport) == b"{}"  # one slot: it came back

    run(fail_then_succeed())
    assert len(slots.made) == 1


def test_an_answer_read_whole_by_its_slot_gives_the_slot_back_at_once() -> None:
    transport = SlotTransport(lambda: httpx.MockTransport(lambda _: httpx.Response(200)), 1)

    async def twice() -> None:
        for _ in range(2):  # a stand-in's answer is read whole: nothing to close, one slot
            await transport.handle_async_request(httpx.Request("POST", URL))

    run(twice())
    assert transport.connections_made == 1


def test_an_answer_closed_unread_gives_its_slot_back_once() -> None:
    slots = Slots()
    slots.release.set()
    transport = SlotTransport(slots.make, 1)

    async def close_twice() -> None:
        response = await transport.handle_async_request(httpx.Request("POST", URL))
        await response.aclose()
        await response.stream.aclose()  # type: ignore[union-attr]  # a second close: no second slot
        assert transport._idle == [slots.made[0]]

    run(close_twice())


def test_the_origin_transport_has_one_slot_per_request_in_flight() -> None:
    transport = origin_transport("http://127.0.0.1:9", 12)
    assert isinstance(transport, SlotTransport) and transport.slots == 12
    assert transport.connections_made == 1  # the first, made to check the settings
    run(transport.aclose())


def test_a_connection_the_server_closed_is_replaced_before_the_next_request() -> None:
    """The server answers one request per connection, then closes it: each request after the
    first finds its kept connection closed and is sent on a new one, not failed."""
    accepted = []

    async def one_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()

    async def three() -> list[bytes]:
        async with raw_server(one_answer) as base_url:
            connection = OneConnection(base_url, ssl.create_default_context())
            try:
                found = []
                for _ in range(3):
                    response = await connection.handle_async_request(
                        httpx.Request("POST", f"{base_url}/v1/apps.getApp", content=b"{}")
                    )
                    found.append(await response.aread())
                    await response.aclose()
                    for _ in range(20):  # the server's close reaches the client
                        await asyncio.sleep(0)
                return found
            finally:
                await connection.aclose()

    assert run(three()) == [b"{}"] * 3
    assert len(accepted) == 3


def test_httpcore_failures_are_raised_as_httpx_s() -> None:
    async def refused() -> None:
        connection = OneConnection("http://127.0.0.1:9", ssl.create_default_context())
        try:
            await connection.handle_async_request(httpx.Request("POST", "http://127.0.0.1:9/v1/x"))
        finally:
            await connection.aclose()

    with pytest.raises(httpx.ConnectError):
        run(refused())
