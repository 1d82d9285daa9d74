"""One pace for the whole client, learned from the platform's 429s.

The platform's request-rate limits are not shown in its spec: they are learned from its answers.
Until the first 429 nothing is paced (no cost, no guess). A 429 then slows every call of the
client, not only the one answered (which still waits out its own `Retry-After`):

- decrease: the client sends at most `backoff` (0.7) x the pace it had (or, unpaced, x what it
  sent in the last `window` second), and, when that second brought `evidence` (4) successes or
  more, at most `shrink` (0.9) x those successes. A platform that refuses past its rate answers
  successes at its rate, so one decrease lands near it; a second is taken only for a 429 of a
  request sent at the new pace (a generation), never for the answers of requests already in
  flight at the old one;
- increase: every success raises the pace by `growth` (0.2) requests per second, so the pace
  grows by a fifth a second at any rate, and finds a limit that was raised or guessed low;
- each request waits for its turn, `1 / pace` after the one before: retries too, so the calls
  a 429 held back come back spread, not in one wave at the second their `Retry-After` ends.

Clock and sleep are injected (the client's `RetryPolicy`'s), so tests count rather than time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable


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
        floor: float = 0.1,
        evidence: int = 4,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._window = window
        self._shrink = shrink
        self._backoff = backoff
        self._growth = growth
        self._floor = floor
        self._evidence = evidence
        self.rate: float | None = None  # requests per second; None until the first 429
        self.generation = 0  # bumped by each decrease
        self.decreases = 0
        self.waited = 0  # requests that waited for their turn
        self._next = 0.0  # when the next request may be sent
        self._line: deque[asyncio.Future[None]] = deque()  # requests waiting for a turn
        self._sent: deque[float] = deque()  # send times within the window
        self._answered: deque[float] = deque()  # times of successes within the window

    async def turn(self) -> int:
        """Wait for this request's turn; the generation it is sent in (for `limited`).

        Requests take their turns in order; only the first in line waits on the clock, until
        `1 / pace` after the last one sent, at the pace in force when it is sent (a decrease
        while it waits pushes its turn back)."""
        if self.rate is not None and (self._line or self._clock() < self._next):
            await self._wait_in_line()
        now = self._clock()
        if self.rate is not None:
            self._next = max(now, self._next) + 1.0 / self.rate
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
            self.rate += self._growth

    def limited(self, generation: int) -> None:
        """A 429 to a request sent in `generation`: slow every call, once per generation."""
        if generation != self.generation:
            return  # sent before the last decrease: that decrease already answered it
        now = self._clock()
        self._forget(self._sent, now)
        self._forget(self._answered, now)
        pace = self.rate if self.rate is not None else len(self._sent) / self._window
        rate = self._backoff * pace
        if len(self._answered) >= self._evidence:  # successes enough to tell the platform's rate
            rate = min(rate, self._shrink * len(self._answered) / self._window)
        self.rate = max(self._floor, rate)
        self._next = max(self._next, now + 1.0 / self.rate)
        self.generation += 1
        self.decreases += 1

    def _forget(self, times: deque[float], now: float) -> None:
        while times and times[0] <= now - self._window:
            times.popleft()
