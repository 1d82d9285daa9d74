"""Injected failures: fault rules set through the admin API, a random fault rate, a rate limit."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Any

from reconciler.emulator.validation import Arr, Int, Num, Obj, Str

RULE = Obj(
    fields={
        "operation": Str(min=1, max=256),
        "probability": Num(min=0, max=1),
        "after": Int(min=0),
        "times": Int(min=0),
        "status": Int(min=400, max=599),
        "retryAfter": Int(min=0, max=3600, nullable=True),  # null: a 429 without the header
        "latencyMs": Int(min=0, max=60000),
        "phase": Str(enum=("before", "after")),
    }
)
RULES = Obj(fields={"rules": Arr(item=RULE, max=100)}, required=("rules",))


@dataclass
class Fault:
    """What to do to one call: delay it, and/or answer `status` before or after processing."""

    status: int | None = None
    retry_after: int | None = None
    latency_ms: int = 0
    phase: str = "before"


@dataclass
class FaultRule:
    spec: dict[str, Any]
    seen: int = 0
    fired: int = 0

    def applies(self, operation: str, rng: random.Random) -> bool:
        wanted = self.spec.get("operation")
        if wanted is not None and wanted != operation:
            return False
        self.seen += 1
        if self.seen <= self.spec.get("after", 0):
            return False
        times = self.spec.get("times")
        if times is not None and self.fired >= times:
            return False
        probability = self.spec.get("probability", 1.0)
        if probability < 1.0 and rng.random() >= probability:
            return False
        self.fired += 1
        return True

    def fault(self) -> Fault:
        status = self.spec.get("status")
        retry_after = self.spec.get("retryAfter")
        if status == 429 and "retryAfter" not in self.spec:
            retry_after = 1
        return Fault(
            status, retry_after, self.spec.get("latencyMs", 0), self.spec.get("phase", "before")
        )


class Faults:
    def __init__(self, fault_rate: float, seed: int | None) -> None:
        self.fault_rate = fault_rate
        self.random = random.Random(seed)
        self.rules: list[FaultRule] = []

    def set_rules(self, rules: list[dict[str, Any]]) -> None:
        self.rules = [FaultRule(rule) for rule in rules]

    def pick(self, operation: str) -> Fault | None:
        """First matching rule wins; otherwise the random fault rate may fire."""
        for rule in self.rules:
            if rule.applies(operation, self.random):
                return rule.fault()
        if self.fault_rate > 0 and self.random.random() < self.fault_rate:
            # 503 is only listed for domains.listDomains
            choices = [429, 500, 503] if operation == "domains.listDomains" else [429, 500]
            status = self.random.choice(choices)
            return Fault(status, 1 if status == 429 else None)
        return None


class RateLimiter:
    """Token bucket: `rate` requests per second, bursts up to max(1, rate)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.tokens = self.capacity
        self.updated = time.monotonic()

    def take(self) -> int | None:
        """None when allowed, else the seconds to wait (for Retry-After)."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return None
        return max(1, math.ceil((1 - self.tokens) / self.rate))
