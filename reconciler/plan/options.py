"""The options a plan is built with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlanOptions:
    targets: tuple[str, ...] = ()  # --target ADDRESS (repeatable), subtree prefixes
    max_deletes: int = 10
    allow_replace: bool = False
    fingerprint_key: bytes | None = None  # RECONCILER_FINGERPRINT_KEY
    # secret references planned as missing: apply PLANFILE rebuilds the plan without the
    # secrets the saved plan was made without, so the two compare call by call
    unavailable_secrets: frozenset[str] = frozenset()
