"""One pace for the whole client, learned from the platform's 429s.

The platform's request-rate limits are not shown in its spec: they are learned from its answers.
Until the first 429 nothing is paced (no cost, no guess). A 429 then slows every call of the
client, not only the one answered (which still waits out its own `Retry-After`):

- decrease: the client sends at most `backoff` (0.7) x the pace it had (or, unpaced, x what it
  sent in the last `window` second), and, when that second brought `evidence` (4) successes or
  more to a client sending for a whole window, at most `shrink` (0.9) x those successes. A
  platform that refuses past its rate answers successes at its rate, so one decrease lands
  near it; a second is taken only for a 429 of a request sent at the new pace (a generation),
  never for the answers of requests already in flight at the old one;
- increase: every success raises the pace by `growth` (0.05) requests per second, so the pace
  grows by a twentieth a second at any rate, and finds a limit that was raised; after a
  decrease made without evidence (fewer than `evidence` successes in the window, or a client
  younger than the window: the platform refused before it showed its rate, as when others
  used its limit up first) by `probe` (1.0), so the guess grows e-fold a second, until the
  next 429;
- each request waits for its turn, `1 / pace` after the one before: retries too, so the calls
  a 429 held back come back spread, not in one wave at the second their `Retry-After` ends.

The pace never falls below `floor` (1) request a second. The wait for a turn counts against a
retried call's deadline (`PlatformClient`): a retry whose turn would come after it is not
taken, and the call ends with its last 429, so a platform that never stops refusing still ends
each call within its attempts and its 120 s.

Clock and sleep are injected (the client's `RetryPolicy`'s), so tests count rather than time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable


class NoTurn(Exception):
    """A request's turn would come later than its call may wait."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the next turn is {seconds:.1f} s away")
        self.seconds = seconds


class Pacer:
    """Spaces the client's requests once the platform has answered 429 (see the module)."""

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        window: float = 1.0,
        shrink: float = 0.9,
        backoff: float = 0.7,
        growth: float = 0.05,
        floor: float = 1.0,
        evidence: int = 4,
        probe: float = 1.0,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._window = window
        self._shrink = shrink
        self._backoff = backoff
        self._growth = growth
        self._floor = floor
        self._evidence = evidence
        self._probe = probe
        self._probing = False  # the pace is a guess made without successes to go by
        self._started: float | None = None  # the first request's turn
        self.rate: float | None = None  # requests per second; None until the first 429
        self.generation = 0  # bumped by each decrease
        self.decreases = 0
        self.waited = 0  # requests that waited for their turn
        self._next = 0.0  # when the next request may be sent
        self._line: deque[asyncio.Future[None]] = deque()  # requests waiting for a turn
        self._sent: deque[float] = deque()  # send times within the window
        self._answered: deque[float] = deque()  # times of successes within the window

    async def turn(self, within: float | None = None) -> int:
        """Wait for this request's turn; the generation it is sent in (for `limited`).

        Requests take their turns in order; only the first in line waits on the clock, until
        `1 / pace` after the last one sent, at the pace in force when it is sent (a decrease
        while it waits pushes its turn back). `NoTurn` when the turn would come more than
        `within` seconds from now (a retry whose call has no time left for it)."""
        if self.rate is not None and (self._line or self._clock() < self._next):
            if within is not None:
                now = self._clock()
                expected = max(now, self._next) + len(self._line) / self.rate - now
                if expected > within:
                    raise NoTurn(expected)
            await self._wait_in_line()
        now = self._clock()
        if self.rate is not None:
            self._next = max(now, self._next) + 1.0 / self.rate
        if self._started is None:
            self._started = now
        self._sent.append(now)
        self._forget(self._sent, now)
        return self.generation

    async def _wait_in_line(self) -> None:
        first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._line.append(first)
        if len(self._line) == 1:
            first.set_result(None)
        try:
            await first  # the first in line now
            self.waited += 1
            while self.rate is not None and (now := self._clock()) < self._next:
                await self._sleep(self._next - now)
        finally:
            self._line.remove(first)
            if self._line and not self._line[0].done():
                self._line[0].set_result(None)

    def succeeded(self) -> None:
        """An answer that was not a 429 (any status): the platform took the request."""
        now = self._clock()
        self._answered.append(now)
        self._forget(self._answered, now)
        if self.rate is not None:
            self.rate += self._probe if self._probing else self._growth

    def limited(self, generation: int) -> None:
        """A 429 to a request sent in `generation`: slow every call, once per generation."""
        if generation != self.generation:
            return  # sent before the last decrease: that decrease already answered it
        now = self._clock()
        self._forget(self._sent, now)
        self._forget(self._answered, now)
        pace = self.rate if self.rate is not None else len(self._sent) / self._window
        rate = self._backoff * pace
        # successes enough to tell the platform's rate; without them the pace is a guess,
        # probed upward faster until the next 429
        young = self._started is None or now - self._started < self._window
        self._probing = young or len(self._answered) < self._evidence
        if not self._probing:
            rate = min(rate, self._shrink * len(self._answered) / self._window)
        self.rate = max(self._floor, rate)
        self._next = max(self._next, now + 1.0 / self.rate)
        self.generation += 1
        self.decreases += 1

    def _forget(self, times: deque[float], now: float) -> None:
        while times and times[0] <= now - self._window:
            times.popleft()
