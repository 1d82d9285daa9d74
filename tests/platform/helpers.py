"""Test doubles for the platform client: a scripted mock platform and instant retries."""

from __future__ import annotations

import asyncio
import heapq
import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from reconciler.platform.client import PlatformClient
from reconciler.platform.log import CallLog
from reconciler.platform.pacing import Pacer
from reconciler.platform.retry import RetryPolicy

T = TypeVar("T")
BASE_URL = "https://platform.test"
SENTINEL_KEY = "sk-SENTINEL-7f3a9c-do-not-leak"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@dataclass
class FakeTime:
    """A clock that only moves when the client sleeps; records every wait."""

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)  # waits before retries
    paced: list[float] = field(default_factory=list)  # waits for a turn under the client's pace

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    async def pace(self, seconds: float) -> None:
        self.paced.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


class VirtualTime(FakeTime):
    """A clock for many calls at once: each wait suspends its task until virtual time reaches
    it, and time jumps to the earliest wait once every task is waiting (`drive`). No real
    clock is read or waited on; `elapse` is a wait that is not recorded (a stand-in's latency).
    """

    def __init__(self) -> None:
        super().__init__()
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._made = 0

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await self.elapse(seconds)

    async def pace(self, seconds: float) -> None:
        self.paced.append(seconds)
        await self.elapse(seconds)

    async def elapse(self, seconds: float) -> None:
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._made += 1
        heapq.heappush(self._timers, (self.now + max(0.0, seconds), self._made, woken))
        await woken

    async def drive(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` to its end, moving time on whenever nothing else can run."""
        task = asyncio.ensure_future(work)
        idle = 0
        while not task.done():
            for _ in range(50):  # every task that can run, runs (to its next wait)
                await asyncio.sleep(0)
            if task.done():
                break
            if not self._timers:
                idle += 1
                if idle > 1000:
                    raise AssertionError("every task waits, and not on this clock")
                continue
            idle = 0
            at, _, woken = heapq.heappop(self._timers)
            self.now = max(self.now, at)
            woken.set_result(None)
        return task.result()


def instant_policy(time: FakeTime, **overrides: Any) -> RetryPolicy:
    settings: dict[str, Any] = {
        "sleep": time.sleep,
        "clock": time.clock,
        "random": lambda: 0.5,
        "wall_clock": lambda: 1_700_000_000.0,
    }
    settings.update(overrides)
    return RetryPolicy(**settings)


def json_response(status: int, payload: Any, **kwargs: Any) -> httpx.Response:
    return httpx.Response(status, json=payload, **kwargs)


def problem(status: int, detail: str) -> httpx.Response:
    body = {"type": "about:blank", "title": "Problem", "status": status, "detail": detail}
    return httpx.Response(status, json=body, headers={"Content-Type": "application/problem+json"})


Handler = Callable[[httpx.Request], Any]


class Recorder:
    """Wraps a handler; keeps every request with its decoded JSON body."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> Any:
        self.requests.append(request)
        return self.handler(request)

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) for r in self.requests]


def scripted(*responses: httpx.Response | Exception) -> Recorder:
    """A handler answering each request with the next response (or raising the next error)."""
    queue = list(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return Recorder(handle)


PLATFORM_CHECK_BODY = {"limit": 1}


def is_platform_check(request: httpx.Request) -> bool:
    """The client's one `projects.listProjects` (limit 1) made before it believes a 404."""
    return request.url.path.endswith("/projects.listProjects") and (
        json.loads(request.content) == PLATFORM_CHECK_BODY
    )


def answering_platform_check(handler: Handler) -> Handler:
    """`handler`, except that the check of the base URL is answered as the platform would
    (an empty workspace), without reaching `handler`: scripts stand for the platform."""

    def handle(request: httpx.Request) -> Any:
        if is_platform_check(request):
            return json_response(200, {"data": [], "pagination": {"hasMore": False}})
        return handler(request)

    return handle


def make_client(
    handler: Handler,
    *,
    api_key: str | None = SENTINEL_KEY,
    time: FakeTime | None = None,
    call_log: CallLog | None = None,
    parallelism: int = 10,
    platform_check: bool = True,
    **policy: Any,
) -> PlatformClient:
    """A client of the scripted `handler`; with `platform_check` the check of the base URL is
    answered as the platform would, else it reaches `handler` like any call."""
    time = time or FakeTime()
    return PlatformClient(
        BASE_URL,
        api_key,
        parallelism=parallelism,
        transport=httpx.MockTransport(
            answering_platform_check(handler) if platform_check else handler
        ),
        retry=instant_policy(time, **policy),
        call_log=call_log,
        pacer=Pacer(clock=time.clock, sleep=time.pace),
    )


async def call_once(client: PlatformClient, operation: str, body: dict[str, Any], **kw: Any) -> Any:
    async with client:
        return await client.call(operation, body, **kw)


async def list_once(client: PlatformClient, operation: str, body: dict[str, Any]) -> Any:
    async with client:
        return await client.list_all(operation, body)
