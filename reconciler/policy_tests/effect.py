"""What a change of a policy list does to the manifest's policy tests: every test is evaluated
against the live list and against the manifest's, and those whose verdict differs are shown
in the plan (`GET /admin/users from 198.51.100.7: allow -> deny (admin-only-from-office)`),
so a reviewer sees the effect of a rule diff on requests, not only the diff.

A verdict that depends on a policy the evaluator cannot evaluate (a kind this reconciler does
not know, engine.py) is `unknown`, with that policy named; `unknown` on both sides is no
change anyone could see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.policy_tests.cases import PolicyTestCase
from reconciler.policy_tests.engine import Decision, compile_policies
from reconciler.policy_tests.run import decider_name, describe, request_of

UNKNOWN_VERDICT = "unknown"
"""The outcome of a test on a list holding a policy the evaluator cannot evaluate."""


@dataclass(frozen=True)
class OutcomeChange:
    """One test whose verdict the change turns around. `policy` is the firewall policy that
    decides the `deny` side (after the change for allow -> deny, before it for deny -> allow),
    or, where a side is `unknown`, the policy the evaluator cannot evaluate there."""

    name: str
    request: str
    before: str
    after: str
    policy: str | None

    def __str__(self) -> str:
        if self.policy is None:
            why = ""
        elif self.after == UNKNOWN_VERDICT:
            why = f" ({self.policy} cannot be evaluated offline)"
        elif self.before == UNKNOWN_VERDICT:
            why = f" (was {self.policy}, which cannot be evaluated offline)"
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
        was, now = _verdict(before), _verdict(after)
        if was != now:
            changed.append(
                OutcomeChange(test.name, describe(test), was, now, _policy(before, after, now))
            )
    return tuple(changed)


def _verdict(decision: Decision) -> str:
    return decision.verdict.value if decision.verdict_known else UNKNOWN_VERDICT


def _policy(before: Decision, after: Decision, now: str) -> str | None:
    """The policy that makes the difference: the one the evaluator cannot evaluate on an
    `unknown` side (after first), else the firewall policy deciding the `deny` side."""
    for decision in (after, before) if now == UNKNOWN_VERDICT else (before, after):
        if not decision.verdict_known:
            return next(t.policy.name for t in decision.trace if t.may_block)
    deciding = after if after.decided_by is not None else before
    return decider_name(deciding)


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
