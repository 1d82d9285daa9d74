"""`--parallelism`: one bound on requests in flight across the whole client."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.platform.helpers import FakeTime, make_client, run


class InFlight:
    """An async mock platform that records the most requests it saw at once."""

    def __init__(self, failures_first: int = 0) -> None:
        self.current = 0
        self.peak = 0
        self.seen = 0
        self.failures_first = failures_first

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.current += 1
        self.seen += 1
        self.peak = max(self.peak, self.current)
        try:
            await asyncio.sleep(0.002)
            if self.seen <= self.failures_first:
                return httpx.Response(503)
            return httpx.Response(200, json={"data": {"id": "x"}})
        finally:
            self.current -= 1


@pytest.mark.parametrize("parallelism", [1, 3, 10])
def test_requests_in_flight_never_exceed_parallelism(parallelism: int) -> None:
    platform = InFlight()
    client = make_client(platform, parallelism=parallelism)

    async def many() -> None:
        async with client:
            body = {"project": "p", "app": "a"}
            await asyncio.gather(*(client.call("apps.getApp", body) for _ in range(25)))

    run(many())
    assert platform.peak == parallelism
    assert client.calls == 25


def test_lists_and_single_calls_share_the_bound() -> None:
    pages_left = {"n": 0}

    class Mixed(InFlight):
        async def __call__(self, request: httpx.Request) -> httpx.Response:
            response = await super().__call__(request)
            if request.url.path.endswith("listApps"):
                pages_left["n"] += 1
                more = pages_left["n"] % 3 != 0
                cursor = f"c{pages_left['n']}"
                page = [{"id": f"app_{pages_left['n']}"}]
                return httpx.Response(
                    200, json={"data": page, "pagination": {"hasMore": more, "cursor": cursor}}
                )
            return response

    platform = Mixed()
    client = make_client(platform, parallelism=2)

    async def mixed() -> None:
        async with client:
            await asyncio.gather(
                client.list_all("apps.listApps", {"project": "p"}),
                *(client.call("projects.getProject", {"project": "p"}) for _ in range(6)),
            )

    run(mixed())
    assert platform.peak == 2


def test_waiting_to_retry_does_not_hold_a_slot() -> None:
    # With parallelism 1, a call sleeping before its retry must let another call through.
    platform = InFlight(failures_first=1)
    time = FakeTime()
    order: list[str] = []

    async def scenario() -> None:
        gate = asyncio.Event()

        async def slow_sleep(seconds: float) -> None:
            order.append("sleeping")
            await gate.wait()

        client = make_client(platform, parallelism=1, time=time, sleep=slow_sleep)
        async with client:
            first = asyncio.create_task(client.call("projects.getProject", {"project": "a"}))
            await asyncio.sleep(0.01)
            await client.call("projects.getProject", {"project": "b"})
            order.append("second done")
            gate.set()
            await first
            order.append("first done")

    run(scenario())
    assert order == ["sleeping", "second done", "first done"]
