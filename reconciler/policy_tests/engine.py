"""Evaluating an ordered policy list against requests, as the platform's gateway does.

Policies run in list order and disabled ones are skipped. A policy applies when every item of
its `match` matches (no items: every request), and an item matches when every member in it
does. A logging policy that applies records the request and evaluation goes on; the first
firewall policy that applies blocks the request (403) and ends evaluation.

`compile_policies` reads a list in the API's JSON shape (what `gateway.listPolicies` returns,
`gateway.setPolicies` takes and the manifest's `Policy.to_api()` produces) and compiles every
pattern once; `PolicyList.evaluate` then decides one request and explains, for each policy,
what happened to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from reconciler.policy_tests.matchers import (
    MEMBER_KINDS,
    Member,
    PolicyError,
    exactly_one,
    mapping,
    member,
    sequence,
    text,
)
from reconciler.policy_tests.request import Request

Rule = Literal["firewall", "logging"]
FIREWALL_ACTIONS = ("ACTION_DENY",)
BLOCKED_STATUS = 403


class Verdict(Enum):
    ALLOW = "allow"
    DENY = "deny"


class Outcome(Enum):
    SKIPPED = "skipped"  # disabled
    APPLIED = "applied"  # logging: recorded; firewall: blocked
    NOT_APPLIED = "not applied"  # an item did not match
    NOT_REACHED = "not reached"  # an earlier firewall policy ended evaluation


@dataclass(frozen=True)
class PolicyRef:
    index: int
    name: str

    def __str__(self) -> str:
        return f"#{self.index} {self.name!r}"


@dataclass(frozen=True)
class Mismatch:
    """The first member that did not match: `match[item].member`, the request's value it
    compared (None: absent) and why."""

    item: int
    member: str
    compared: str | None
    reason: str

    def __str__(self) -> str:
        return f"match[{self.item}].{self.member}: {self.reason}"


@dataclass(frozen=True)
class PolicyTrace:
    policy: PolicyRef
    rule: Rule
    outcome: Outcome
    mismatch: Mismatch | None = None

    def __str__(self) -> str:
        head = f"{self.policy} ({self.rule})"
        if self.outcome is Outcome.SKIPPED:
            return f"{head}: skipped, disabled"
        if self.outcome is Outcome.NOT_REACHED:
            return f"{head}: not reached, evaluation had ended"
        if self.outcome is Outcome.NOT_APPLIED:
            return f"{head}: did not apply, {self.mismatch}"
        effect = "blocked the request (403)" if self.rule == "firewall" else "recorded the request"
        return f"{head}: applied, {effect}"


@dataclass(frozen=True)
class Decision:
    """What the gateway does with one request: `decided_by` is the firewall policy that blocked
    it (None: allowed), `logged_by` the logging policies that recorded it, in order, and `trace`
    one entry per policy of the list, in order."""

    verdict: Verdict
    decided_by: PolicyRef | None
    logged_by: tuple[PolicyRef, ...]
    trace: tuple[PolicyTrace, ...]

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW

    def explain(self) -> str:
        if self.decided_by is None:
            head = "allowed: no firewall policy applied"
        else:
            head = f"denied (403) by {self.decided_by}"
        return "\n".join([head, *(f"  {entry}" for entry in self.trace)])


@dataclass(frozen=True)
class CompiledPolicy:
    ref: PolicyRef
    enabled: bool
    rule: Rule
    items: tuple[tuple[Member, ...], ...]

    def first_mismatch(self, request: Request) -> Mismatch | None:
        for index, members in enumerate(self.items):
            for one in members:
                miss = one.check(request)
                if miss is not None:
                    return Mismatch(index, one.kind, miss.compared, miss.reason)
        return None


@dataclass(frozen=True)
class PolicyList:
    policies: tuple[CompiledPolicy, ...]

    def evaluate(self, request: Request) -> Decision:
        trace: list[PolicyTrace] = []
        logged: list[PolicyRef] = []
        decided: PolicyRef | None = None
        for policy in self.policies:
            outcome, mismatch = self._outcome(policy, request, ended=decided is not None)
            trace.append(PolicyTrace(policy.ref, policy.rule, outcome, mismatch))
            if outcome is Outcome.APPLIED:
                if policy.rule == "logging":
                    logged.append(policy.ref)
                else:
                    decided = policy.ref
        verdict = Verdict.ALLOW if decided is None else Verdict.DENY
        return Decision(verdict, decided, tuple(logged), tuple(trace))

    @staticmethod
    def _outcome(
        policy: CompiledPolicy, request: Request, *, ended: bool
    ) -> tuple[Outcome, Mismatch | None]:
        if ended:
            return Outcome.NOT_REACHED, None
        if not policy.enabled:
            return Outcome.SKIPPED, None
        mismatch = policy.first_mismatch(request)
        return (Outcome.APPLIED, None) if mismatch is None else (Outcome.NOT_APPLIED, mismatch)


def compile_policies(policies: Sequence[Mapping[str, Any]]) -> PolicyList:
    """Compile a policy list (API JSON shape); PolicyError names the first thing it cannot run."""
    listed = sequence(policies, "policies")
    return PolicyList(tuple(_policy(index, p) for index, p in enumerate(listed)))


def _policy(index: int, spec: Any) -> CompiledPolicy:
    where = f"policies[{index}]"
    spec = mapping(spec, where)
    name = text(spec.get("name"), f"{where}.name")
    enabled = spec.get("enabled")
    if not isinstance(enabled, bool):
        raise PolicyError(f"{where}.enabled", "must be a boolean")
    items = sequence(spec.get("match") or (), f"{where}.match")
    compiled = tuple(_item(item, f"{where}.match[{i}]") for i, item in enumerate(items))
    return CompiledPolicy(PolicyRef(index, name), enabled, _rule(spec, where), compiled)


def _rule(spec: Mapping[str, Any], where: str) -> Rule:
    if exactly_one(spec, ("firewall", "logging"), where) == "logging":
        mapping(spec["logging"], f"{where}.logging")
        return "logging"
    action = mapping(spec["firewall"], f"{where}.firewall").get("action")
    if action not in FIREWALL_ACTIONS:
        allowed = ", ".join(FIREWALL_ACTIONS)
        raise PolicyError(f"{where}.firewall.action", f"must be one of {allowed}")
    return "firewall"


def _item(spec: Any, where: str) -> tuple[Member, ...]:
    spec = mapping(spec, where)
    unknown = sorted(set(spec) - set(MEMBER_KINDS))
    if unknown:
        raise PolicyError(where, f"unknown member(s) {', '.join(unknown)}")
    members = tuple(
        member(kind, spec[kind], f"{where}.{kind}") for kind in MEMBER_KINDS if kind in spec
    )
    if not members:
        raise PolicyError(where, f"a match item needs at least one of {', '.join(MEMBER_KINDS)}")
    return members
