"""When and how long to wait before resending a request, and how long a call may take.

429 means nothing was processed, so it is retried for every operation, after
`Retry-After` when the platform sends one. 5xx and lost responses are retried
with exponential backoff and full jitter, but only for operations that are safe
to repeat (see `Operation.safe_to_repeat`). Both are bounded in attempts and in
total time. Sleep, randomness and clocks are injectable so tests run instantly.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime

RETRIED_SERVER_STATUSES = frozenset({500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds and timing of retries.

    `max_attempts` counts every request sent for one call (1 means no retry).
    `attempt_deadline` is the most seconds one attempt may take, from sending the
    request to the last byte of the answer: httpx's timeouts bound each wait for the
    next byte, so a server trickling bytes would pass them forever. `max_elapsed` is
    the most seconds one call may spend from its first attempt on, attempts and waits
    included (waits for a turn under the client's pace too; time queued for a free slot
    under `--parallelism`, behind the client's own calls, does not count): an attempt still
    running then is cut, and a wait that would pass it is not taken.
    """

    max_attempts: int = 5
    max_elapsed: float = 120.0
    attempt_deadline: float = 60.0
    base_delay: float = 0.5
    max_delay: float = 10.0
    max_retry_after: float = 30.0
    jitter: bool = True
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)
    random: Callable[[], float] = field(default=random.random, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    wall_clock: Callable[[], float] = field(default=time.time, repr=False)

    def backoff(self, failures: int) -> float:
        """Seconds to wait after the `failures`-th failed attempt (1-based), with full jitter."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        return self.random() * ceiling if self.jitter else ceiling

    def retry_after(self, header: str | None, failures: int) -> float:
        """Seconds to wait after a 429: the server's `Retry-After` (capped), else backoff."""
        seconds = parse_retry_after(header, now=self.wall_clock())
        if seconds is None:
            return self.backoff(failures)
        return min(seconds, self.max_retry_after)


class CallDeadline:
    """The time left to one call under `policy`, counted from its first attempt."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self._started: float | None = None

    def next_attempt(self) -> tuple[float, bool]:
        """Seconds the attempt starting now may take, and whether the call's deadline (not the
        attempt's own) is what bounds it."""
        now = self.policy.clock()
        if self._started is None:
            self._started = now
        left = self.policy.max_elapsed - (now - self._started)
        if left < self.policy.attempt_deadline:
            return max(0.0, left), True
        return self.policy.attempt_deadline, False

    def exclude(self, seconds: float) -> None:
        """Leave `seconds` out of the call's time: queued for a free slot under
        `--parallelism`, behind the client's own calls, not the platform's doing."""
        if self._started is not None:
            self._started += seconds

    def left(self) -> float | None:
        """Seconds the call has left; None before its first attempt."""
        if self._started is None:
            return None
        return max(0.0, self.policy.max_elapsed - (self.policy.clock() - self._started))

    def allows_wait(self, seconds: float) -> bool:
        """Whether waiting `seconds` before the next attempt stays within the call's deadline."""
        started = self.policy.clock() if self._started is None else self._started
        return self.policy.clock() - started + seconds <= self.policy.max_elapsed


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """`Retry-After` as seconds from `now` (delta-seconds or an HTTP date); None when unusable."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        return _seconds_until_http_date(text, now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN or infinite
        return None
    return max(0.0, seconds)


def _seconds_until_http_date(text: str, now: float) -> float | None:
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:  # "-0000" parses as naive; HTTP dates are always GMT
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, moment.timestamp() - now)
