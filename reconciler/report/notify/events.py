"""What a notification says: the outcome of one `plan` or `apply`, as one `Notification`.

`plan_notification` and `apply_notification` decide the event (or that there is none to post)
from what the command produced and how it ended; the bodies (`bodies.py`) only lay it out.
Every text taken from elsewhere (addresses from the manifest, error messages, the platform's
answers, the CI's variables) is redacted of the registered secrets, cleaned of control and
invisible characters (`reconciler.escaping.clean`), first line only, and cut to `TEXT_LIMIT`
here, once: a body never holds a value, only addresses, counts, statuses and messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from reconciler.apply.deploy import DeploymentOutcome
from reconciler.apply.outcome import ApplyResult, ChangeResult, Outcome
from reconciler.errors import ApiError, ReconcilerError
from reconciler.escaping import clean
from reconciler.plan.changes import Action, Plan
from reconciler.report.notify.ci import RunLink
from reconciler.report.plan_lines import summary_line as plan_counts
from reconciler.report.progress import ApplyRecord, DeployRecord, summary_line
from reconciler.sensitive import redact

Event = Literal["drift", "in_sync", "applied", "failed", "rollout_failed"]
Command = Literal["plan", "apply"]

EVENTS: tuple[Event, ...] = ("drift", "in_sync", "applied", "failed", "rollout_failed")
LISTED = 50
"""The most changes a notification lists (`changes_total` says how many there were)."""
TEXT_LIMIT = 300
"""The most characters of one text (a message, an address): longer ones end in `…`."""

_ORDER = {"failed": 0, "unfinished": 1, "skipped": 2, "blocked": 3, "done": 4}
"""Apply lists what went wrong first, so a cut list keeps it."""


@dataclass(frozen=True)
class Ending:
    """How the command ended: its exit code, the error it raised (if any), an interrupt."""

    exit_code: int
    error: BaseException | None = None
    interrupted: bool = False


@dataclass(frozen=True)
class ChangeItem:
    address: str
    action: str
    """`create`, `update`, `delete`, `replace` or `blocked`, as plan JSON's `action`."""
    outcome: str | None = None
    """apply only: `done`, `failed`, `skipped`, `blocked` or `unfinished` (interrupted, or
    stopped by an error before it finished)."""
    error: str | None = None


@dataclass(frozen=True)
class DeploymentItem:
    address: str
    deployment_id: str | None
    status: str
    error_code: str | None
    live: bool


@dataclass(frozen=True)
class ErrorItem:
    kind: str
    """The error's class (`ManifestInvalid`, `ApplyRefused`, `PermissionDenied`...),
    `ChecksFailed`, `Interrupted`, `Incomplete`, or `InternalError` (a bug)."""
    message: str
    operation: str | None = None
    status: int | None = None


@dataclass(frozen=True)
class Notification:
    event: Event
    command: Command
    exit_code: int
    title: str
    text: str
    summary: Mapping[str, int] | None
    changes: tuple[ChangeItem, ...] = ()
    changes_total: int = 0
    deployments: tuple[DeploymentItem, ...] = ()
    error: ErrorItem | None = None
    targets: tuple[str, ...] = ()
    run: RunLink | None = None


class ApplyRun(Protocol):
    """How far an apply got: the CLI's record of its run (`reconciler/cli/apply.py`)."""

    @property
    def plan(self) -> Plan | None: ...

    @property
    def applied(self) -> ApplyRecord | None: ...

    @property
    def deployed(self) -> DeployRecord | None: ...


def safe_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text` as a notification may carry it: redacted, cleaned, its first line, cut."""
    line = clean(redact(text, ()).strip().split("\n", 1)[0].rstrip(":").strip())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# --- plan ---------------------------------------------------------------------------------


def plan_notification(
    plan: Plan | None, ending: Ending, *, in_sync: bool, link: RunLink | None = None
) -> Notification | None:
    """`failed` when the plan failed, `drift` when live state differs, `in_sync` only when
    asked for; None for nothing to post (in sync, or a plan interrupted: nobody waits for it)."""
    if ending.interrupted:
        return None
    changes = _plan_changes(plan) if plan is not None else ()
    base = Notification(
        event="failed",
        command="plan",
        exit_code=ending.exit_code,
        title="reconciler plan failed",
        text="",
        summary=_plan_summary(plan) if plan is not None else None,
        changes=changes[:LISTED],
        changes_total=len(changes),
        targets=tuple(safe_text(t) for t in plan.targets) if plan is not None else (),
        run=link,
    )
    failing = plan.failing_findings if plan is not None else ()
    if failing:
        error = ErrorItem("ChecksFailed", f"the built-in checks found {len(failing)} error(s)")
        return replace(base, text=f"{error.message} in this plan.", error=error)
    if ending.error is not None or ending.exit_code == 1:
        error = error_item(ending)
        return replace(base, text=error.message, error=error)
    if plan is None:
        return None
    if plan.live_differs:
        counts = _plan_summary(plan)
        line = plan_counts(counts["add"], counts["change"], counts["destroy"])
        if counts["blocked"]:
            line += f" {counts['blocked']} blocked by delete protection."
        return replace(
            base,
            event="drift",
            title="reconciler plan: drift found",
            text=f"Live state differs from the manifests. Plan: {line}",
        )
    if not in_sync:
        return None
    return replace(
        base,
        event="in_sync",
        title="reconciler plan: in sync",
        text="No changes. Live state matches the manifests.",
    )


def _plan_summary(plan: Plan) -> dict[str, int]:
    """plan JSON's `summary`."""
    add, change, destroy = plan.counts()
    blocked = sum(c.action is Action.BLOCKED for c in plan.changes)
    return {"add": add, "change": change, "destroy": destroy, "blocked": blocked}


def _plan_changes(plan: Plan) -> tuple[ChangeItem, ...]:
    return tuple(ChangeItem(safe_text(c.address), c.action.value) for c in plan.changes)


# --- apply --------------------------------------------------------------------------------


def apply_notification(
    run: ApplyRun | None, ending: Ending, *, in_sync: bool, link: RunLink | None = None
) -> Notification | None:
    """`failed` when apply was refused, stopped by an error or an interrupt, or did not apply
    every change; `rollout_failed` when every change applied but a deployment of `--deploy`
    did not go live; `applied` once something was applied or deployed; `in_sync` (nothing to
    apply) only when asked for, else None."""
    plan = run.plan if run is not None else None
    record = run.applied if run is not None else None
    done = ApplyResult(tuple(record.finished.values())) if record is not None else None
    changes = _apply_changes(plan, record)
    deployments = _deployments(run.deployed if run is not None else None)
    base = Notification(
        event="applied",
        command="apply",
        exit_code=ending.exit_code,
        title="reconciler apply: applied",
        text="",
        summary=None if done is None else _apply_summary(done, changes),
        changes=changes[:LISTED],
        changes_total=len(changes),
        deployments=deployments,
        targets=tuple(safe_text(t) for t in plan.targets) if plan is not None else (),
        run=link,
    )
    went_live = all(d.live for d in deployments)
    if ending.error is not None or ending.interrupted:
        error = error_item(ending)
        text = error.message if done is None else f"{error.message}. {_before_it_stopped(done)}"
        return replace(base, event="failed", title=_FAILED, text=text, error=error)
    finished = done is None or (done.complete and len(done.results) == len(changes))
    if ending.exit_code != 0 and finished and not went_live:
        lines = [summary_line(done) if done is not None else "", _rollout_line(deployments)]
        return replace(
            base,
            event="rollout_failed",
            title="reconciler apply: rollout failed",
            text=" ".join(line for line in lines if line),
        )
    if ending.exit_code != 0 and done is not None:  # the changes list says what failed
        return replace(base, event="failed", title=_FAILED, text=summary_line(done))
    if ending.exit_code != 0:
        error = error_item(ending)
        return replace(base, event="failed", title=_FAILED, text=error.message, error=error)
    if done is None and not deployments:
        if not in_sync:
            return None
        return replace(
            base,
            event="in_sync",
            title="reconciler apply: nothing to apply",
            text="No changes. Live state matches the manifests.",
        )
    lines = [summary_line(done) if done is not None else "", _rollout_line(deployments)]
    return replace(base, text=" ".join(line for line in lines if line))


_FAILED = "reconciler apply failed"


def _apply_changes(plan: Plan | None, record: ApplyRecord | None) -> tuple[ChangeItem, ...]:
    """Every change of the plan with what became of it, what went wrong first."""
    if plan is None or record is None:
        return ()
    items = [_item(c.address, c.action, record.finished.get(c.address)) for c in plan.changes]
    return tuple(sorted(items, key=lambda item: _ORDER[item.outcome or "done"]))


def _item(address: str, action: Action, result: ChangeResult | None) -> ChangeItem:
    if result is None:
        return ChangeItem(safe_text(address), action.value, "unfinished")
    error = None
    if result.outcome is Outcome.FAILED:
        error = safe_text(result.error or "failed")
    elif result.outcome is Outcome.SKIPPED and result.blocked_by:
        error = safe_text(f"needs {', '.join(result.blocked_by)}")
    return ChangeItem(safe_text(address), action.value, result.outcome.value, error)


def _apply_summary(done: ApplyResult, changes: Sequence[ChangeItem]) -> dict[str, int]:
    """What reached the platform (`added`, `changed`, `destroyed`, as apply's result line
    counts them), then how many changes `failed`, were `skipped`, `blocked` or `unfinished`."""
    added, changed, destroyed = done.counts()
    counts = {"added": added, "changed": changed, "destroyed": destroyed}
    for outcome in ("failed", "skipped", "blocked", "unfinished"):
        counts[outcome] = sum(item.outcome == outcome for item in changes)
    return counts


def _before_it_stopped(done: ApplyResult) -> str:
    added, changed, destroyed = done.counts()
    return f"Before it stopped: {added} added, {changed} changed, {destroyed} destroyed."


def _deployments(record: DeployRecord | None) -> tuple[DeploymentItem, ...]:
    if record is None:
        return ()
    return tuple(_deployment(o) for o in record.outcomes.values())


def _deployment(outcome: DeploymentOutcome) -> DeploymentItem:
    return DeploymentItem(
        address=safe_text(outcome.target.address),
        deployment_id=None if outcome.deployment_id is None else safe_text(outcome.deployment_id),
        status=safe_text(outcome.status),
        error_code=None if outcome.error_code is None else safe_text(outcome.error_code),
        live=outcome.succeeded and not outcome.held_back,
    )


def _rollout_line(deployments: Sequence[DeploymentItem]) -> str:
    if not deployments:
        return ""
    live = sum(d.live for d in deployments)
    if live == len(deployments):
        return f"{live} of {len(deployments)} deployment(s) went live."
    return f"{len(deployments) - live} of {len(deployments)} deployment(s) did not go live."


# --- errors -------------------------------------------------------------------------------


def error_item(ending: Ending) -> ErrorItem:
    """What stopped the command, in words that hold no value (an error's first line)."""
    error = ending.error
    if ending.interrupted:
        return ErrorItem("Interrupted", "interrupted (Ctrl-C or SIGTERM)")
    if isinstance(error, ApiError):
        return ErrorItem(
            type(error).__name__, safe_text(error.message), error.operation, error.status
        )
    if isinstance(error, ReconcilerError):
        return ErrorItem(type(error).__name__, safe_text(error.message))
    if error is not None:
        return ErrorItem("InternalError", f"internal error ({type(error).__name__})")
    return ErrorItem("Failed", f"exit status {ending.exit_code}")
