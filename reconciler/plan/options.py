"""The options a plan is built with."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlanOptions:
    targets: tuple[str, ...] = ()  # --target ADDRESS (repeatable), subtree prefixes
    max_deletes: int = 10
    allow_replace: bool = False
    fingerprint_key: bytes | None = None  # RECONCILER_FINGERPRINT_KEY
