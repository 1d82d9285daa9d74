"""One pace for the whole client (reconciler/platform/pacing.py): a 429 slows every call.

Counted on a fake clock that moves only when the client waits: which requests waited for a
turn, how many 429s a rate-limited stand-in answered, how much fake time the calls took."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx
import pytest

from reconciler import errors
from reconciler.platform.pacing import Pacer
from tests.platform.helpers import FakeTime, VirtualTime, make_client, run

BODY = {"project": "shop", "app": "web"}
OK = {"data": {"id": "app_12345678", "slug": "web"}}


@dataclass
class Burst:
    """Answers 429 (Retry-After 1) to the first `refused` requests, then 200, each after 10 ms
    of virtual latency; records each request's call (its `app`), when it was sent and its
    status, and when the first 429 was answered."""

    time: VirtualTime
    refused: int
    log: list[tuple[str, float, int]] = field(default_factory=list)
    first_429_answered: float | None = None

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        sent = self.time.now
        app = request.read().decode().split('"app":"')[1].split('"')[0]
        status = 429 if len(self.log) < self.refused else 200
        self.log.append((app, sent, status))
        await self.time.elapse(0.01)
        if status == 429:
            if self.first_429_answered is None:
                self.first_429_answered = self.time.now
            return httpx.Response(429, headers={"Retry-After": "1"})
        return httpx.Response(200, json=OK)


def calls_at_once(refused: int) -> tuple[Burst, list[tuple[str, float, int]], int]:
    """24 calls, 4 at a time, against `Burst(refused)`: the stand-in, the requests sent after
    its first 429 was answered by calls never answered 429, and the turns the pace made wait."""
    time = VirtualTime()
    platform = Burst(time, refused)
    client = make_client(platform, time=time, parallelism=4)

    async def many() -> None:
        async with client:
            apps = (f"app-{i:02d}" for i in range(24))
            await asyncio.gather(*(client.call("apps.getApp", {**BODY, "app": a}) for a in apps))

    run(time.drive(many()))
    limited = {app for app, _, status in platform.log if status == 429}
    answered = platform.first_429_answered or 0.0
    after = [r for r in platform.log if r[1] >= answered and r[0] not in limited]
    return platform, after, client.pacer.waited


def test_a_burst_of_429s_slows_every_call_of_the_client() -> None:
    platform, after, waited = calls_at_once(refused=4)
    assert [status for _, _, status in platform.log].count(429) == 4
    assert len(after) == 20  # the calls never refused, all sent after the burst was answered
    sent = [at for _, at, _ in after]
    assert len(set(sent)) == len(sent)  # one at a time: spaced by the pace, never 4 at once
    assert waited >= len(after)  # each waited for its turn


def test_without_a_429_nothing_waits_for_a_turn() -> None:
    platform, _, waited = calls_at_once(refused=0)
    sent = [at for _, at, _ in platform.log]
    assert waited == 0
    assert len(set(sent)) == len(sent) // 4  # four at a time, as `parallelism` allows


@dataclass
class TokenBucket:
    """A platform limited to `rate` requests a (fake) second, bursts of `rate`, answering 429
    with a Retry-After of whole seconds, as the emulator's `--rate-limit` does."""

    time: VirtualTime
    rate: float
    tokens: float = 0.0
    updated: float = 0.0
    answered: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tokens = self.rate

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        await self.time.elapse(0.01)  # half of a 20 ms latency, each way
        now = self.time.now
        self.tokens = min(self.rate, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            status = 200
        else:
            status = 429
        self.answered[status] = self.answered.get(status, 0) + 1
        await self.time.elapse(0.01)
        if status == 200:
            return httpx.Response(200, json=OK)
        return httpx.Response(429, headers={"Retry-After": "1"})


@pytest.mark.parametrize(
    ("rate", "used_up"), [(10, False), (20, False), (100, False), (20, True), (100, True)]
)
def test_the_pace_settles_near_the_platforms_rate(rate: int, used_up: bool) -> None:
    """Few 429s, and the calls take about what the platform's rate allows, not much more:
    the calls that were in flight when the first 429 came (at most `parallelism`), and a few
    each time the pace, grown past the rate, has emptied the platform's bucket. Also when the
    platform's limit was used up before the client started (its pace then is a guess, probed
    upward faster)."""
    time = VirtualTime()
    platform = TokenBucket(time, rate)
    if used_up:  # by others before the client starts: its first answers are 429s
        platform.tokens = 0
    client = make_client(platform, time=time, parallelism=16)
    calls = 600

    async def many() -> None:
        async with client:
            await asyncio.gather(*(client.call("apps.getApp", BODY) for _ in range(calls)))

    run(time.drive(many()))
    assert platform.answered[200] == calls
    assert platform.answered.get(429, 0) <= 0.05 * calls
    assert time.now <= 1.25 * calls / rate


def test_a_platform_that_never_stops_limiting_still_ends_each_call() -> None:
    time = FakeTime()
    client = make_client(lambda _: httpx.Response(429, headers={"Retry-After": "1"}), time=time)

    async def one() -> None:
        async with client:
            await client.call("apps.getApp", BODY)

    with pytest.raises(errors.RateLimited) as caught:
        run(one())
    assert "still rate limiting after 5 attempts" in str(caught.value)


def test_unpaced_until_the_first_429() -> None:
    time = FakeTime()
    pacer = Pacer(clock=time.clock, sleep=time.pace)

    async def turns() -> None:
        for _ in range(100):
            await pacer.turn()
            pacer.succeeded()

    run(turns())
    assert pacer.rate is None and time.paced == [] and time.now == 0


def test_a_429_sent_before_the_last_decrease_does_not_decrease_again() -> None:
    time = FakeTime()
    pacer = Pacer(clock=time.clock, sleep=time.pace)

    async def burst() -> list[int]:
        return [await pacer.turn() for _ in range(10)]

    generations = run(burst())
    for generation in generations:  # ten answers of requests in flight together
        pacer.limited(generation)
    assert pacer.decreases == 1 and pacer.rate == pytest.approx(0.7 * 10)


def test_a_platform_that_never_stops_limiting_ends_every_call_of_a_busy_client() -> None:
    """However slow the pace falls, each call ends with the rate-limiting message within its
    attempts and deadline: a retry whose turn would come too late is not waited for."""
    time = VirtualTime()

    async def refusing(_: httpx.Request) -> httpx.Response:
        await time.elapse(0.01)
        return httpx.Response(429, headers={"Retry-After": "1"})

    client = make_client(refusing, time=time, parallelism=8)
    sent_before = len(time.paced)

    async def many() -> list[BaseException | None]:
        async with client:
            return await asyncio.gather(
                *(client.call("apps.getApp", BODY) for _ in range(40)), return_exceptions=True
            )

    outcomes = run(time.drive(many()))
    assert all(isinstance(o, errors.RateLimited) for o in outcomes)
    assert all("still rate limiting after" in str(o) for o in outcomes)
    assert client.calls <= 40 * 5 and client.pacer.rate == 1.0  # the floor
    assert time.now <= 40 * 5 / client.pacer.rate and len(time.paced) > sent_before
