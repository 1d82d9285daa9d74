"""What an apply did: one result per call and per change, and the whole run's totals."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from reconciler.plan import kinds
from reconciler.plan.changes import Action, Call, Change
from reconciler.plan.kinds.base import NewDomain
from reconciler.platform.operations import Operation

Count = Literal["added", "changed", "destroyed"]
"""The columns of the summary line: `Resources: X added, Y changed, Z destroyed`."""

_COUNTED_AS: dict[Action, frozenset[Count]] = {
    Action.CREATE: frozenset({"added"}),
    Action.UPDATE: frozenset({"changed"}),
    Action.DELETE: frozenset({"destroyed"}),
    Action.REPLACE: frozenset({"added", "destroyed"}),  # as Terraform counts it
    Action.BLOCKED: frozenset(),
}
_COLUMNS: tuple[Count, ...] = ("added", "changed", "destroyed")


class Outcome(enum.Enum):
    DONE = "done"
    FAILED = "failed"
    """A call failed; the calls before it may have gone through (`ChangeResult.partly_applied`)."""
    SKIPPED = "skipped"
    BLOCKED = "blocked"


@dataclass(frozen=True)
class CallResult:
    """One call as it went: `status` is the HTTP status of success, or of the failure if any.

    `data` is kept only for creates (new IDs, a new domain's DNS records); it
    never holds a request body, so never a secret value.
    """

    operation: Operation
    ok: bool
    status: int | None = None
    error: str | None = None
    data: Any = None
    reread: bool = False


@dataclass(frozen=True)
class ChangeResult:
    """What happened to one change. `blocked_by` names the failed/blocked changes it needed.

    `calls` holds the calls that were sent, in order; a failed change may have sent several
    before the one that failed (a replace deletes, then creates), and those took effect:
    `applied_steps` says what they did, in words (`deleted`, `created`).
    """

    change: Change
    outcome: Outcome
    calls: tuple[CallResult, ...] = ()
    error: str | None = None
    blocked_by: tuple[str, ...] = ()
    applied_steps: tuple[str, ...] = ()

    @property
    def applied_calls(self) -> tuple[CallResult, ...]:
        """The calls that took effect on the platform."""
        return tuple(c for c in self.calls if c.ok)

    @property
    def partly_applied(self) -> bool:
        """Failed after some of its calls went through: the platform is between before and after."""
        return self.outcome is Outcome.FAILED and bool(self.applied_calls)

    def counted_as(self) -> frozenset[Count]:
        """Where the summary line counts this change: by its action once done; by what its
        applied calls did when it failed half-way (a replace that deleted but could not
        create again destroyed the object and added nothing)."""
        if self.outcome is Outcome.DONE:
            return _COUNTED_AS[self.change.action]
        if not self.partly_applied:
            return frozenset()
        made_or_removed = frozenset(
            count for c in self.applied_calls if (count := _count_of_call(c.operation)) is not None
        )
        # neither a create nor a delete went through (delete protection turned off before
        # a delete that failed): the object was only modified
        return made_or_removed or _COUNTED_AS[Action.UPDATE]


def _count_of_call(operation: Operation) -> Count | None:
    """The column a call that went through fills: `added` for a create, `destroyed` for a delete."""
    if operation.deletes:
        return "destroyed"
    return "added" if operation.creates else None


def describe_step(call: Call, result: CallResult) -> str:
    """What one call that went through did, in the words of a partly applied change's report."""
    if call.creates:
        return "created"
    if call.operation.deletes:
        return "deleted"
    protection = _protection_set_by(call)
    if protection is not None:
        return f"delete protection turned {protection}"
    name = call.operation.name
    return f"{name} {result.status}" if result.status is not None else name


def partly_applied_error(steps: Sequence[str], failed: Call, failure: CallResult) -> str:
    """`partly applied: deleted, then apps.createApp failed: ... (400)`: what went through first,
    so that nobody reads a failed replace as "nothing happened" while the old object is gone."""
    message = failure.error or "no error message"
    prefix = f"{failure.operation.name}: "  # the platform errors name their operation first
    message = message.removeprefix(prefix)
    protection = _protection_set_by(failed)
    aim = f" to turn delete protection {protection}" if protection is not None else ""
    failed_call = failure.operation.name
    return f"partly applied: {', '.join(steps)}, then {failed_call} failed{aim}: {message}"


def _protection_set_by(call: Call) -> str | None:
    """`on`/`off` for the update that only sets delete protection: the follow-up of a create
    (createApp cannot set it) or the step before deleting a protected object."""
    protection = call.body.get("deleteProtection")
    return ("on" if protection else "off") if isinstance(protection, bool) else None


@dataclass(frozen=True)
class ApplyResult:
    results: tuple[ChangeResult, ...]

    def with_outcome(self, outcome: Outcome) -> tuple[ChangeResult, ...]:
        return tuple(r for r in self.results if r.outcome is outcome)

    @property
    def complete(self) -> bool:
        """True only when every change of the plan was applied."""
        return all(r.outcome is Outcome.DONE for r in self.results)

    def counts(self) -> tuple[int, int, int]:
        """(added, changed, destroyed) by what reached the platform: a replace is one add and
        one destroy; a change that failed half-way counts for what its applied calls did."""
        counted = [r.counted_as() for r in self.results]
        added, changed, destroyed = (sum(column in c for c in counted) for column in _COLUMNS)
        return added, changed, destroyed

    def new_domains(self) -> tuple[NewDomain, ...]:
        """Domains created by this apply, with the DNS records their owner must create."""
        found = []
        for result in self.with_outcome(Outcome.DONE):
            kind = kinds.get(result.change.kind)
            for call in result.calls:
                created = kind.created(result.change, call.operation, call.data)
                if created is not None:
                    found.append(created)
        return tuple(found)


class ApplyObserver(Protocol):
    """Receives progress (`reconciler.report.progress` shows it)."""

    def started(self, total_calls: int) -> None: ...

    def call_started(self, changes: Sequence[Change]) -> None:
        """A call deciding `changes` is being sent (until it settles, it is in flight)."""

    def call_finished(self, result: CallResult | None) -> None:
        """One call settled: its result, or None when it was skipped."""

    def change_finished(self, result: ChangeResult) -> None: ...


class SilentObserver:
    """The observer of an apply nobody watches (tests, benchmarks)."""

    def started(self, total_calls: int) -> None:
        pass

    def call_started(self, changes: Sequence[Change]) -> None:
        pass

    def call_finished(self, result: CallResult | None) -> None:
        pass

    def change_finished(self, result: ChangeResult) -> None:
        pass
