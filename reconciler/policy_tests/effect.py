"""What a change of a policy list does to the manifest's policy tests: every test is evaluated
against the live list and against the manifest's, and those whose verdict differs are shown
in the plan (`GET /admin/users from 198.51.100.7: allow -> deny (admin-only-from-office)`),
so a reviewer sees the effect of a rule diff on requests, not only the diff.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.policy_tests.cases import PolicyTestCase
from reconciler.policy_tests.engine import compile_policies
from reconciler.policy_tests.run import decider_name, describe, request_of


@dataclass(frozen=True)
class OutcomeChange:
    """One test whose verdict the change turns around. `policy` is the firewall policy that
    decides the `deny` side (after the change for allow -> deny, before it for deny -> allow)."""

    name: str
    request: str
    before: str
    after: str
    policy: str | None

    def __str__(self) -> str:
        if self.policy is None:
            why = ""
        elif self.after == "deny":
            why = f" ({self.policy})"
        else:
            why = f" (was {self.policy})"
        return f"{self.request}: {self.before} -> {self.after}{why}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "request": self.request,
            "before": self.before,
            "after": self.after,
            "policy": self.policy,
        }


def changed_outcomes(
    live: Sequence[Mapping[str, Any]],
    desired: Sequence[Mapping[str, Any]],
    tests: Sequence[PolicyTestCase],
) -> tuple[OutcomeChange, ...]:
    """The tests whose verdict differs between the `live` and `desired` lists (API shape), in
    the tests' order. Raises `PolicyError` when a list cannot be evaluated."""
    if not tests:
        return ()
    before_list, after_list = compile_policies(live), compile_policies(desired)
    changed = []
    for test in tests:
        request = request_of(test)
        before, after = before_list.evaluate(request), after_list.evaluate(request)
        if before.verdict is not after.verdict:
            deciding = after if after.decided_by is not None else before
            changed.append(
                OutcomeChange(
                    test.name,
                    describe(test),
                    before.verdict.value,
                    after.verdict.value,
                    decider_name(deciding),
                )
            )
    return tuple(changed)


def outcome_change_from_json(data: Mapping[str, Any]) -> OutcomeChange:
    """The inverse of `OutcomeChange.to_json` (a saved plan's); KeyError/TypeError when the
    object does not have that shape."""
    name, request, before, after = (
        _text(data[key]) for key in ("name", "request", "before", "after")
    )
    policy = data.get("policy")
    return OutcomeChange(name, request, before, after, None if policy is None else _text(policy))


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a policy test outcome holds strings")
    return value
