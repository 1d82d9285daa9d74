"""Evaluating an ordered policy list against requests, as the platform's gateway does.

Policies run in list order and disabled ones are skipped. A policy applies when every item of
its `match` matches (no items: every request), and an item matches when every member in it
does. A logging policy that applies records the request and evaluation goes on; the first
firewall policy that applies blocks the request (403) and ends evaluation.

`compile_policies` reads a list in the API's JSON shape (what `gateway.listPolicies` returns,
`gateway.setPolicies` takes and the manifest's `Policy.to_api()` produces) and compiles every
pattern once; `PolicyList.evaluate` then decides one request and explains, for each policy,
what happened to it.

What this evaluator does not know (a newer platform's: a policy of another kind such as
`rateLimit`, a match member or condition it has no rule for, a firewall action other than
`ACTION_DENY`, a member of the policy beside its rule) it cannot evaluate, and it never
guesses. A policy holding such a thing is `UNDECIDED` for a request its known conditions do
not rule out: it may apply, and (a firewall policy, or one of an unknown kind) may block the
request. Evaluation goes on past it, but the decision says it is not certain
(`Decision.verdict_known`, `logging_known`); `reconciler test` skips such a test, saying
which policy it cannot evaluate, and a plan shows its outcome as `unknown`. Members of a
firewall or logging rule beside the ones it knows (`firewall: {statusCode: 429}`) do not
change whether it applies, and are not in the way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from reconciler.policy_tests.matchers import (
    MEMBER_KINDS,
    Member,
    PolicyError,
    mapping,
    member,
    sequence,
    text,
    unknown_keys,
)
from reconciler.policy_tests.request import Request

Rule = str
"""`firewall`, `logging`, or the name of a kind this evaluator does not know (`rateLimit`)."""
FIREWALL_ACTIONS = ("ACTION_DENY",)
BLOCKED_STATUS = 403
POLICY_MEMBERS = frozenset({"id", "name", "enabled", "match", "firewall", "logging"})
SERVER_MEMBERS = frozenset({"createdAt", "updatedAt"})
KNOWN_RULES = ("firewall", "logging")


class Verdict(Enum):
    ALLOW = "allow"
    DENY = "deny"


class Outcome(Enum):
    SKIPPED = "skipped"  # disabled
    APPLIED = "applied"  # logging: recorded; firewall: blocked
    NOT_APPLIED = "not applied"  # an item did not match
    NOT_REACHED = "not reached"  # an earlier firewall policy ended evaluation
    UNDECIDED = "undecided"  # it holds what this evaluator does not know: it may apply


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
    unknown: tuple[str, ...] = ()
    """What of the policy this evaluator does not know (an `UNDECIDED` outcome's reason)."""

    @property
    def may_block(self) -> bool:
        """An undecided policy that could block the request (not a logging one)."""
        return self.outcome is Outcome.UNDECIDED and self.rule != "logging"

    def __str__(self) -> str:
        head = f"{self.policy} ({self.rule})"
        if self.outcome is Outcome.SKIPPED:
            return f"{head}: skipped, disabled"
        if self.outcome is Outcome.NOT_REACHED:
            return f"{head}: not reached, evaluation had ended"
        if self.outcome is Outcome.NOT_APPLIED:
            return f"{head}: did not apply, {self.mismatch}"
        if self.outcome is Outcome.UNDECIDED:
            return f"{head}: not evaluated, {self.why_undecided()}"
        effect = "blocked the request (403)" if self.rule == "firewall" else "recorded the request"
        return f"{head}: applied, {effect}"

    def why_undecided(self) -> str:
        """`it holds rateLimit, which this reconciler cannot evaluate: it may block the request`"""
        effect = "record" if self.rule == "logging" else "block"
        return (
            f"it holds {', '.join(self.unknown)}, which this reconciler cannot evaluate: it "
            f"may {effect} the request"
        )


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

    @property
    def undecided(self) -> tuple[PolicyTrace, ...]:
        """The policies reached that this evaluator could not evaluate, in order."""
        return tuple(t for t in self.trace if t.outcome is Outcome.UNDECIDED)

    @property
    def verdict_known(self) -> bool:
        """Whether `verdict` is certain: no policy reached before the deciding one (or at all,
        for an allowed request) may block it without this evaluator knowing."""
        return not any(t.may_block for t in self.trace)

    @property
    def logging_known(self) -> bool:
        """Whether `logged_by` is certain: no logging policy reached was undecided."""
        return not any(t.outcome is Outcome.UNDECIDED and t.rule == "logging" for t in self.trace)

    def explain(self) -> str:
        if self.decided_by is None:
            head = "allowed: no firewall policy applied"
        else:
            head = f"denied (403) by {self.decided_by}"
        if not self.verdict_known:
            head += " (if the policies this reconciler cannot evaluate let it through)"
        return "\n".join([head, *(f"  {entry}" for entry in self.trace)])


@dataclass(frozen=True)
class CompiledPolicy:
    ref: PolicyRef
    enabled: bool
    rule: Rule
    items: tuple[tuple[Member, ...], ...]
    unknown: tuple[str, ...] = ()
    """What of it this evaluator does not know: a kind (`rateLimit`), a match member or
    condition (`match[0].country`), another firewall action, a member beside its rule."""

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
            unknown = policy.unknown if outcome is Outcome.UNDECIDED else ()
            trace.append(PolicyTrace(policy.ref, policy.rule, outcome, mismatch, unknown))
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
        if mismatch is not None:
            return Outcome.NOT_APPLIED, mismatch
        return (Outcome.UNDECIDED if policy.unknown else Outcome.APPLIED), None


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
    unknown: list[str] = []
    compiled = tuple(
        _item(item, f"{where}.match[{i}]", f"match[{i}]", unknown) for i, item in enumerate(items)
    )
    rule = _rule(spec, where, unknown)
    return CompiledPolicy(PolicyRef(index, name), enabled, rule, compiled, tuple(unknown))


def _rule(spec: Mapping[str, Any], where: str, unknown: list[str]) -> Rule:
    """The policy's rule; what of it (and of the policy beside it) this evaluator does not
    know is added to `unknown`."""
    rules = [name for name in KNOWN_RULES if spec.get(name) is not None]
    others = [k for k in spec if k not in POLICY_MEMBERS and k not in SERVER_MEMBERS]
    if len(rules) > 1:
        raise PolicyError(where, f"set exactly one of {', '.join(KNOWN_RULES)}")
    if not rules:
        if not others:
            raise PolicyError(where, f"set exactly one of {', '.join(KNOWN_RULES)}")
        unknown[:0] = others  # a kind this evaluator does not know: its rule is what it cannot say
        return others[0]
    unknown.extend(others)
    if rules[0] == "logging":
        mapping(spec["logging"], f"{where}.logging")
        return "logging"
    action = mapping(spec["firewall"], f"{where}.firewall").get("action")
    if not isinstance(action, str) or not action:
        raise PolicyError(f"{where}.firewall.action", "must be a non-empty string")
    if action not in FIREWALL_ACTIONS:
        unknown.append(f"firewall.action {action}")
    return "firewall"


def _item(spec: Any, where: str, label: str, unknown: list[str]) -> tuple[Member, ...]:
    """The members of one match item this evaluator can check; the ones it does not know (a
    member, or a known member holding a condition it does not know) go to `unknown`."""
    spec = mapping(spec, where)
    if not spec:
        raise PolicyError(where, f"a match item needs at least one of {', '.join(MEMBER_KINDS)}")
    unknown.extend(f"{label}.{kind}" for kind in spec if kind not in MEMBER_KINDS)
    members = []
    for kind in MEMBER_KINDS:
        if kind not in spec:
            continue
        extra = unknown_keys(kind, spec[kind])
        if extra:
            unknown.extend(f"{label}.{kind}.{key}" for key in extra)
        else:
            members.append(member(kind, spec[kind], f"{where}.{kind}"))
    return tuple(members)
