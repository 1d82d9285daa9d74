"""What an apply did: one result per call and per change, and the whole run's totals."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.engine.changes import Action, Change
from reconciler.engine.targets import parse_address


class Outcome(enum.Enum):
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    BLOCKED = "blocked"


@dataclass(frozen=True)
class CallResult:
    """One call as it went: `status` is the HTTP status of success, or of the failure if any.

    `data` is kept only for creates (new IDs, a new domain's DNS records); it
    never holds a request body, so never a secret value.
    """

    operation: str
    ok: bool
    status: int | None = None
    error: str | None = None
    data: Any = None
    reread: bool = False


@dataclass(frozen=True)
class ChangeResult:
    """What happened to one change. `blocked_by` names the failed/blocked changes it needed."""

    change: Change
    outcome: Outcome
    calls: tuple[CallResult, ...] = ()
    error: str | None = None
    blocked_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class NewDomain:
    address: str
    host: str
    dns_records: tuple[Mapping[str, Any], ...]


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
        """(added, changed, destroyed) among applied changes; a replace is one add and one destroy."""
        done = [r.change.action for r in self.with_outcome(Outcome.DONE)]
        added = sum(a in (Action.CREATE, Action.REPLACE) for a in done)
        changed = sum(a is Action.UPDATE for a in done)
        destroyed = sum(a in (Action.DELETE, Action.REPLACE) for a in done)
        return added, changed, destroyed

    def new_domains(self) -> tuple[NewDomain, ...]:
        """Domains created by this apply, with the DNS records their owner must create."""
        found = []
        for result in self.with_outcome(Outcome.DONE):
            for call in result.calls:
                if call.operation == "domains.createDomain" and isinstance(call.data, Mapping):
                    records = call.data.get("dnsRecords")
                    host = call.data.get("domain") or parse_address(result.change.address)[1][-1]
                    if isinstance(records, list):
                        found.append(NewDomain(result.change.address, str(host), tuple(records)))
        return tuple(found)


class ApplyObserver(Protocol):
    """Receives progress: see `reconciler.engine.progress`."""

    def started(self, total_calls: int) -> None: ...

    def call_finished(self, result: CallResult | None) -> None:
        """One call settled: its result, or None when it was skipped."""

    def change_finished(self, result: ChangeResult) -> None: ...


class SilentObserver:
    """The observer of an apply nobody watches (tests, benchmarks)."""

    def started(self, total_calls: int) -> None:
        pass

    def call_finished(self, result: CallResult | None) -> None:
        pass

    def change_finished(self, result: ChangeResult) -> None:
        pass
