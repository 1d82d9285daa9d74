"""What a user sees while apply and deploy run, and the summary after.

On a terminal a rich progress bar counts calls (or deployments) done of the
total, with one line printed above it per finished change; anywhere else
(CI logs, pipes) there is no bar, only the lines:

    app.shop/web: created (apps.createApp 200)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:  # consoles are made by reconciler.report.output
    from rich.console import Console  # noqa: TID251

from reconciler.address import Address
from reconciler.apply import (
    ApplyObserver,
    ApplyResult,
    CallResult,
    ChangeResult,
    NewDomain,
    Outcome,
)
from reconciler.apply.deploy import (
    REDEPLOY,
    DeploymentOutcome,
    DeployObserver,
    DeployReport,
    DeployTarget,
    describe_outcome,
)
from reconciler.plan.changes import Action, Change, Plan
from reconciler.platform.shapes import FINAL_DEPLOYMENT_STATUSES
from reconciler.report import output
from reconciler.report.tables import DNS_RECORD_HEADER, aligned

Echo = Callable[[str], None]

_DONE_VERBS = {
    Action.CREATE: "created",
    Action.UPDATE: "updated",
    Action.DELETE: "destroyed",
    Action.REPLACE: "replaced",
    Action.BLOCKED: "blocked",
}


def describe_call(call: CallResult) -> str:
    name = call.operation.name
    if call.reread:
        return f"{name}: already created by an earlier attempt that failed ambiguously"
    return f"{name} {call.status}" if call.status is not None else name


def describe_change(result: ChangeResult) -> str:
    """One line for a finished change: what happened and through which calls."""
    address = result.change.address
    if result.outcome is Outcome.DONE:
        verb = _DONE_VERBS[result.change.action]
        calls = ", ".join(describe_call(c) for c in result.calls)
        return f"{address}: {verb} ({calls})" if calls else f"{address}: {verb}"
    if result.partly_applied:  # the error starts "partly applied: deleted, then ... failed"
        return f"{address}: {result.error}"
    if result.outcome is Outcome.FAILED:
        return f"{address}: failed: {result.error}"
    if result.outcome is Outcome.SKIPPED:
        return f"{address}: skipped (needs {', '.join(result.blocked_by)}, which did not apply)"
    return f"{address}: not applied: {result.error}"


class PlainApplyProgress:
    """No bar: one line per finished change (CI logs, pipes)."""

    def __init__(self, echo: Echo) -> None:
        self.echo = echo

    def started(self, total_calls: int) -> None:
        self.echo(f"Applying: {total_calls} API calls.")

    def call_started(self, changes: Sequence[Change]) -> None:
        pass

    def call_finished(self, result: CallResult | None) -> None:
        pass

    def change_finished(self, result: ChangeResult) -> None:
        self.echo(describe_change(result))

    def close(self) -> None:
        pass


def _progress_bar(console: Console, unit: str) -> Progress:
    """`Applying ━━━━━━━━ 3/10 calls 0:00:02`, gone from the terminal once stopped."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


class RichApplyProgress:
    """A bar of calls done of total, with each finished change printed above it."""

    def __init__(self, console: Console, *, unit: str = "calls") -> None:
        self.console = console
        self.unit = unit
        self._bar = _progress_bar(console, unit)
        self._task: Any = None
        self._running = False

    def started(self, total_calls: int) -> None:
        self._task = self._bar.add_task("Applying", total=total_calls)
        self._bar.start()
        self._running = True

    def call_started(self, changes: Sequence[Change]) -> None:
        pass

    def call_finished(self, result: CallResult | None) -> None:
        self._bar.advance(self._task)

    def change_finished(self, result: ChangeResult) -> None:
        self._bar.console.print(describe_change(result), markup=False, highlight=False)

    def close(self) -> None:
        if self._running:
            self._bar.stop()
            self._running = False


# --- reading live state -------------------------------------------------------------


class ReadProgress:
    """`Reading live state ━━━━━━━ 120/134 calls 0:00:05` on a terminal's standard error while
    a plan reads: calls answered of those sent so far (the total grows as the reads find what
    else to read), and the time since the first. Gone once the reads end."""

    def __init__(self, console: Console) -> None:
        self._bar = _progress_bar(console, "calls")
        self._task = self._bar.add_task("Reading live state", total=0)
        self._started = 0
        self._bar.start()

    def call_started(self) -> None:
        self._started += 1
        self._bar.update(self._task, total=self._started)

    def call_finished(self) -> None:
        self._bar.advance(self._task)

    def close(self) -> None:
        self._bar.stop()


@contextmanager
def reading_live_state(*, verbose: bool = False) -> Iterator[ReadProgress | None]:
    """A `ReadProgress` while the block runs, when standard error is a terminal; nothing
    otherwise (CI logs, pipes), nor with `-v`, whose lines of each call say as much."""
    if verbose or not output.stderr_is_terminal():
        yield None
        return
    progress = ReadProgress(output.console(err=True))
    try:
        yield progress
    finally:
        progress.close()


# --- after apply ------------------------------------------------------------------


def summary_line(result: ApplyResult) -> str:
    added, changed, destroyed = result.counts()
    resources = f"Resources: {added} added, {changed} changed, {destroyed} destroyed"
    if result.complete:
        return f"Apply complete! {resources}."
    failed = len(result.with_outcome(Outcome.FAILED))
    skipped = len(result.with_outcome(Outcome.SKIPPED))
    blocked = len(result.with_outcome(Outcome.BLOCKED))
    return f"Apply incomplete! {resources}; {failed} failed, {skipped} skipped, {blocked} blocked."


def render_report(result: ApplyResult) -> str:
    """The summary after apply: what did not apply and why, DNS records, the final line.

    When something did not apply, the changes that did are listed too, so a
    partial apply always says exactly what it changed.
    """
    sections: list[str] = []
    if not result.complete:
        # a change that failed half-way is listed twice: what it did, and what failed
        applied = [r for r in result.results if r.outcome is Outcome.DONE or r.partly_applied]
        if applied:
            sections.append(_section("Applied", [_applied(r) for r in applied]))
        sections.extend(
            _section(title, [_reason(r) for r in result.with_outcome(outcome)])
            for title, outcome in (
                ("Failed", Outcome.FAILED),
                ("Skipped because a change they need did not apply", Outcome.SKIPPED),
                ("Not applied: delete protection", Outcome.BLOCKED),
            )
            if result.with_outcome(outcome)
        )
    if result.new_domains():
        sections.append(render_dns_table(result.new_domains()))
    sections.append(summary_line(result))
    if result.with_outcome(Outcome.FAILED) or result.with_outcome(Outcome.SKIPPED):
        sections.append("Fix what failed and run apply again: it continues from where it stopped.")
    return "\n\n".join(sections)


def _applied(result: ChangeResult) -> str:
    address = result.change.address
    if result.partly_applied:
        return f"{address} (partly applied: {', '.join(result.applied_steps)})"
    return f"{address} ({_DONE_VERBS[result.change.action]})"


def _reason(result: ChangeResult) -> str:
    address = result.change.address
    if result.outcome is Outcome.SKIPPED:
        return f"{address}: needs {', '.join(result.blocked_by)}"
    return f"{address}: {result.error}"


def _section(title: str, lines: Sequence[str]) -> str:
    return f"{title} ({len(lines)}):\n" + "\n".join(f"  {line}" for line in lines)


def render_dns_table(domains: Sequence[NewDomain]) -> str:
    """The DNS records the new domains need, as an aligned table (copyable into a DNS console)."""
    rows = [
        (d.host, *(_field(record, name) for name in ("type", "name", "value", "ttl")))
        for d in domains
        for record in d.dns_records
    ]
    return "Create these DNS records so the new domains can be verified:\n" + render_table(
        DNS_RECORD_HEADER, rows
    )


def _field(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    return "" if value is None else str(value)


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return "\n".join(f"  {line}" for line in aligned(header, rows))


# --- an interrupted apply ----------------------------------------------------------


class ApplyRecord:
    """Passes every event on to `inner` and keeps what an interrupted apply must report:
    the changes that finished (with their outcome) and those with a call sent."""

    def __init__(self, inner: ApplyObserver) -> None:
        self.inner = inner
        self.finished: dict[str, ChangeResult] = {}
        self.sent: set[str] = set()

    def started(self, total_calls: int) -> None:
        self.inner.started(total_calls)

    def call_started(self, changes: Sequence[Change]) -> None:
        self.sent.update(c.address for c in changes)
        self.inner.call_started(changes)

    def call_finished(self, result: CallResult | None) -> None:
        self.inner.call_finished(result)

    def change_finished(self, result: ChangeResult) -> None:
        self.finished[result.change.address] = result
        self.inner.change_finished(result)


def render_interrupted_apply(plan: Plan, record: ApplyRecord, rerun: str) -> str:
    """What an apply stopped part-way did: applied, failed, in progress (a call sent and not
    answered: it may or may not have reached the platform), not started; then how to go on."""
    done = ApplyResult(tuple(record.finished.values()))
    unfinished = [c.address for c in plan.changes if c.address not in record.finished]
    in_progress = [a for a in unfinished if a in record.sent]
    not_started = [a for a in unfinished if a not in record.sent]
    applied = [r for r in done.results if r.outcome is Outcome.DONE or r.partly_applied]
    sections = [
        _section(title, lines)
        for title, lines in (
            ("Applied", [_applied(r) for r in applied]),
            ("Failed", [_reason(r) for r in done.with_outcome(Outcome.FAILED)]),
            (
                "Skipped because a change they need did not apply",
                [_reason(r) for r in done.with_outcome(Outcome.SKIPPED)],
            ),
            (
                "Not applied: delete protection",
                [_reason(r) for r in done.with_outcome(Outcome.BLOCKED)],
            ),
            (
                "In progress when interrupted: may or may not have reached the platform",
                in_progress,
            ),
            ("Not started", not_started),
        )
        if lines
    ]
    added, changed, destroyed = done.counts()
    failed = len(done.with_outcome(Outcome.FAILED))
    skipped = len(done.with_outcome(Outcome.SKIPPED))
    sections.append(
        f"Apply interrupted! Resources: {added} added, {changed} changed, {destroyed} destroyed; "
        f"{failed} failed, {skipped} skipped, {len(in_progress)} in progress, "
        f"{len(not_started)} not started."
    )
    sections.append(
        f"To finish: {rerun} (it continues from where it stopped and never creates anything twice)."
    )
    return "\n\n".join(sections)


# --- deployments ---------------------------------------------------------------------


class PlainDeployProgress:
    """A line when a deployment is created, when its status changes, and when it is final."""

    def __init__(self, echo: Echo, *, created_earlier: bool = False) -> None:
        self.echo = echo
        self.created_earlier = created_earlier
        """The deployments were created before (`status --wait`): only waited for."""

    def started(self, total: int) -> None:
        if self.created_earlier:
            self.echo(f"Waiting for {total} deployment(s) in flight to finish.")
        else:
            self.echo(f"Deploying {total} environment(s); waiting for each to finish.")

    def created(self, target: DeployTarget, deployment_id: str, source: str) -> None:
        self.echo(
            f"{target.address}: deployment {deployment_id} created ({source}; {_why(target)})"
        )

    def status_changed(self, target: DeployTarget, deployment_id: str, status: str) -> None:
        if status not in FINAL_DEPLOYMENT_STATUSES:  # the final one is reported by `finished`
            self.echo(f"{target.address} ({deployment_id}): {status}")

    def finished(self, outcome: DeploymentOutcome) -> None:
        self.echo(describe_outcome(outcome))

    def close(self) -> None:
        pass


def _why(target: DeployTarget) -> str:
    """`settings, variables changed`, `--redeploy`, or both."""
    changed = [r for r in target.reasons if r != REDEPLOY]
    why = [f"{', '.join(changed)} changed"] if changed else []
    return "; ".join([*why, *(["--redeploy"] if REDEPLOY in target.reasons else [])])


class RichDeployProgress(PlainDeployProgress):
    """A bar of deployments finished of total; each one's status shown as the platform names it."""

    def __init__(self, console: Console) -> None:
        super().__init__(lambda line: self._bar.console.print(line, markup=False, highlight=False))
        self._bar = _progress_bar(console, "deployments")
        self._task: Any = None
        self._running = False

    def started(self, total: int) -> None:
        self._task = self._bar.add_task("Deploying", total=total)
        self._bar.start()
        self._running = True

    def status_changed(self, target: DeployTarget, deployment_id: str, status: str) -> None:
        self._bar.update(self._task, description=f"Deploying ({target.address}: {status})")

    def finished(self, outcome: DeploymentOutcome) -> None:
        super().finished(outcome)
        self._bar.advance(self._task)

    def close(self) -> None:
        if self._running:
            self._bar.stop()
            self._running = False


def render_deploy_report(report: DeployReport) -> str:
    """Warnings, environments left out, then one line per deployment and the result line."""
    sections: list[str] = []
    if report.warnings:
        sections.append("\n".join(f"Warning: {w}" for w in report.warnings))
    if report.not_deployed:
        sections.append(_section("Not deployed", list(report.not_deployed)))
    if report.outcomes:
        sections.append(_section("Deployments", [describe_outcome(o) for o in report.outcomes]))
    ready = sum(o.succeeded for o in report.outcomes)
    held = sum(o.held_back for o in report.outcomes)
    total = len(report.outcomes)
    left_out = len(report.not_deployed)
    # "went live" only counts deployments that serve: a ready one held back by a rollback
    # does not, and saying so would contradict the warning above.
    live = f"{ready - held} of {total} deployment(s) went live" + (
        f", {held} ready but not serving production (rolled back until a deployment is promoted)"
        if held
        else ""
    )
    if not report.outcomes and not left_out:
        sections.append(
            "Nothing to deploy: no environment's configuration changed "
            "(apply --redeploy deploys them anyway)."
        )
    elif ready < total:
        sections.append(
            f"Deploy failed! {total - ready} of {total} deployment(s) did not go live"
            + (f"; {left_out} environment(s) not deployed." if left_out else ".")
        )
    elif left_out:
        sections.append(
            f"Deploy incomplete! {live}; {left_out} environment(s) not deployed because "
            "some of their changes did not apply."
        )
    elif held:  # what was asked for, the change serving production, did not happen: exit 1
        sections.append(f"Deploy incomplete! {live}.")
    else:
        sections.append(f"Deploy complete! {live}.")
    return "\n\n".join(sections)


class DeployRecord:
    """Passes every event on to `inner` and keeps what an interrupted rollout must report."""

    def __init__(self, inner: DeployObserver) -> None:
        self.inner = inner
        self.deployments: dict[str, tuple[str, str]] = {}
        """address -> (deployment ID, last status seen) of every deployment created"""
        self.outcomes: dict[str, DeploymentOutcome] = {}

    def started(self, total: int) -> None:
        self.inner.started(total)

    def created(self, target: DeployTarget, deployment_id: str, source: str) -> None:
        self.deployments[target.address] = (deployment_id, "created")
        self.inner.created(target, deployment_id, source)

    def status_changed(self, target: DeployTarget, deployment_id: str, status: str) -> None:
        self.deployments[target.address] = (deployment_id, status)
        self.inner.status_changed(target, deployment_id, status)

    def finished(self, outcome: DeploymentOutcome) -> None:
        self.outcomes[outcome.target.address] = outcome
        self.inner.finished(outcome)


def render_interrupted_deploy(
    targets: Sequence[DeployTarget],
    record: DeployRecord,
    wait: str,
    deploy: Callable[[Sequence[str]], str],
) -> str:
    """What a rollout stopped part-way left: finished, in flight (they go on without us),
    not created; with the command that waits for the ones in flight (`wait`) and the one
    that deploys the others (`deploy`, given their --target flags)."""
    finished = [record.outcomes[t.address] for t in targets if t.address in record.outcomes]
    in_flight = [
        t.address
        for t in targets
        if t.address in record.deployments and t.address not in record.outcomes
    ]
    seen = record.deployments.keys() | record.outcomes.keys()
    unconfirmed = [t for t in targets if t.address not in seen]
    # deployed only if it ran a deployment already, which the interrupt left unchecked
    maybe = [t.address for t in unconfirmed if t.only_if_deployed]
    not_created = [t for t in unconfirmed if not t.only_if_deployed]
    sections = ["The configuration changes above are applied; the rollout was interrupted."]
    if finished:
        sections.append(_section("Finished", [describe_outcome(o) for o in finished]))
    if in_flight:
        lines = [f"{a} ({record.deployments[a][0]}): {record.deployments[a][1]}" for a in in_flight]
        sections.append(
            _section("In flight: they go on rolling out on the platform", lines)
            + f"\nTo wait for them: {wait}"
        )
    if not_created:
        flags = [
            word for t in not_created for word in ("--target", str(Address("settings", t.path)))
        ]
        sections.append(
            _section(
                "Not deployed: no deployment was confirmed created",
                [t.address for t in not_created],
            )
            + f"\nTo deploy them: {deploy(flags)}"
        )
    if maybe:
        sections.append(
            f"Not checked: {', '.join(maybe)} (deployed only when it already runs a "
            "deployment; `reconciler status` shows it)"
        )
    return "\n\n".join(sections)
