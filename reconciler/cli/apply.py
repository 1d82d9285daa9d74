"""`reconciler apply`: converge live state on the manifest (or on a saved plan), then roll out.

    reconciler apply -f platform/ [--auto-approve] [--deploy | --redeploy]
    reconciler apply plan.json [--deploy | --redeploy]

Everything that can refuse an apply (no confirmation possible, a stale saved
plan, a changed or missing secret, too many deletions, a replace) refuses
before the first write. Interrupted (Ctrl-C, or SIGTERM as CI sends on cancel),
apply says what it did and what it did not, and how to go on; exit 130.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from reconciler import pipeline
from reconciler.apply import (
    ApplyOptions,
    ApplyResult,
    executable_changes,
    execute,
    planned_without,
    secret_refs,
)
from reconciler.apply.deploy import (
    FAILED_STATUSES,
    DeployOptions,
    DeployReport,
    DeployTarget,
    deploy_targets,
    roll_out,
)
from reconciler.cli import notify
from reconciler.cli.colour import color_option
from reconciler.cli.interrupts import interruptible, run_async
from reconciler.cli.options import (
    ENV_BASE_URL,
    ENV_FINGERPRINT_KEY,
    allow_env_option,
    connection_options,
    report_errors,
)
from reconciler.errors import ApplyRefused, OutputError, UsageError
from reconciler.manifest.model import Manifest
from reconciler.plan.changes import Plan
from reconciler.plan.targets import Scope
from reconciler.report import output
from reconciler.report.output import echo
from reconciler.report.progress import (
    ApplyRecord,
    DeployRecord,
    PlainApplyProgress,
    PlainDeployProgress,
    RichApplyProgress,
    RichDeployProgress,
    reading_live_state,
    render_deploy_report,
    render_interrupted_apply,
    render_interrupted_deploy,
    render_report,
)

if TYPE_CHECKING:
    from reconciler.plan.planfile import SavedPlan
    from reconciler.plan.review import Reviewed

DEFAULT_MAX_DELETES = pipeline.DEFAULT_MAX_DELETES
CONFIRMATION = "Do you want to perform these actions? Only 'yes' will be accepted:"
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT) and SIGTERM alike: 128 + SIGINT, the shell's code for an interrupt."""

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """`90s`, `15m`, `1h`, `1h30m`, `500ms` or plain seconds (`90`) as seconds."""
    value = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return float(value)
    parts = _DURATION_PART.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise click.BadParameter(f"{text!r} is not a duration; use e.g. 90s, 15m or 1h")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        # A zero poll interval would ask for the deployment's status without pause; a zero
        # timeout would give up before the first answer.
        raise click.BadParameter(f"{value!r} must be longer than zero; use e.g. 2s or 15m")
    return seconds


def stdin_is_interactive() -> bool:
    """Whether a person can answer the confirmation (tests replace this)."""
    return output.is_terminal(sys.stdin)


def stdout_is_terminal() -> bool:
    """Whether to draw progress bars and colour (tests replace this)."""
    return output.stdout_is_terminal()


@dataclass(frozen=True)
class ApplyRequest:
    planfile: str | None
    files: tuple[str, ...]
    auto_approve: bool
    deploy: bool
    redeploy: bool
    wait_timeout: float
    poll_interval: float
    max_deletes: int
    allow_replace: bool
    allow_unknown_removal: bool
    targets: tuple[str, ...]
    color: bool
    base_url: str | None
    parallelism: int
    verbose: bool
    fingerprint_key: bytes | None
    reviewed: Reviewed | None = None

    def command(self, name: str, *flags: str, files: tuple[str, ...]) -> str:
        """`reconciler NAME -f FILE... FLAGS`, quoted for a shell, with --base-url when it was
        given as a flag (from the environment, the same shell has it already)."""
        words = ["reconciler", name, *(w for f in files for w in ("-f", f)), *flags]
        if self.base_url and self.base_url != os.environ.get(ENV_BASE_URL):
            words += ["--base-url", self.base_url]  # never holds credentials (refused)
        return shlex.join(words)


@dataclass
class _Run:
    """How far an apply got, for the message when it is interrupted."""

    stage: Literal["planning", "confirming", "applying", "deploying"] = "planning"
    manifest_files: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    plan: Plan | None = None
    applied: ApplyRecord | None = None
    rollouts: tuple[DeployTarget, ...] = ()
    deployed: DeployRecord | None = None


@click.command()
@click.argument("planfile", required=False, type=click.Path(path_type=str))
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    type=click.Path(path_type=str),
    help="Manifest file or directory (every *.yaml/*.yml below it). Repeatable. "
    "Plans, shows the plan and asks before applying. Not with PLANFILE.",
)
@click.option(
    "--auto-approve", is_flag=True, help="Apply without asking (CI). Not needed for PLANFILE."
)
@click.option(
    "--deploy",
    is_flag=True,
    help="After applying, deploy every environment whose configuration changed and wait for "
    "each deployment to finish.",
)
@click.option(
    "--redeploy",
    is_flag=True,
    help="Like --deploy, and also deploy every other environment of the manifest in scope "
    "(all, or those a --target reaches) although its configuration did not change.",
)
@click.option(
    "--wait-timeout",
    default="15m",
    show_default=True,
    callback=duration,
    help="With --deploy: how long to wait for all deployments (e.g. 90s, 15m, 1h).",
)
@click.option(
    "--poll-interval",
    default="2s",
    show_default=True,
    callback=duration,
    help="With --deploy: time between two status checks of a deployment.",
)
@click.option(
    "--max-deletes",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_DELETES,
    show_default=True,
    help="Refuse to apply a plan that deletes more objects than this. A saved plan is held to "
    "this limit too, never to one read from its file.",
)
@click.option(
    "--allow-replace",
    is_flag=True,
    help="Allow replacing apps (git <-> image source: destroys their deployments, domains and "
    "variables).",
)
@click.option(
    "--allow-unknown-removal",
    is_flag=True,
    help="Allow writes that remove what this reconciler does not know: a policy of a kind it "
    "does not know, or a member a newer platform added (the plan names each). Without it, "
    "apply refuses such a plan before any write.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="ADDRESS",
    help="Only apply changes at or below ADDRESS (e.g. app.shop/web). Repeatable. Not with "
    "PLANFILE (a saved plan keeps its own targets).",
)
@click.option(
    "--reviewed",
    metavar="DIGEST_OR_FILE",
    help="Apply only if the plan made now sends exactly the calls of the reviewed plan: its "
    "digest (calls:v1:..., from the pull request's plan) or its file (plan --out, or plan "
    "--format json). Otherwise refuse before any write and say what differs. Only with -f.",
)
@color_option
@connection_options
@allow_env_option
@report_errors
@notify.notifies("apply", default=True)
def apply(
    planfile: str | None,
    files: tuple[str, ...],
    auto_approve: bool,
    deploy: bool,
    redeploy: bool,
    wait_timeout: float,
    poll_interval: float,
    max_deletes: int,
    allow_replace: bool,
    allow_unknown_removal: bool,
    targets: tuple[str, ...],
    reviewed: str | None,
    no_color: bool,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
) -> None:
    """Apply the manifest (-f) or a saved plan (PLANFILE) to the platform.

    With -f: plan, show the plan, ask for 'yes' (or --auto-approve), apply.
    With PLANFILE (from `reconciler plan --out`): on the platform it was made
    against, re-read live state, refuse if the plan is stale or a secret
    changed, then apply exactly that plan. Either way, an error finding of
    the built-in checks refuses the apply before any write.

    Exit status: 0 when everything applied (and, with --deploy, every
    deployment went live: a ready production deployment that a rolled-back
    app keeps from serving did not); 1 otherwise; 130 when interrupted
    (Ctrl-C or SIGTERM), after a summary of what was applied and how to go on.
    """
    from reconciler.plan.secrets import fingerprint_key_from
    from reconciler.platform.connect import start_connecting

    _check_inputs(planfile, files, targets)
    if reviewed is not None and planfile:
        raise UsageError(
            "--reviewed cannot be used with PLANFILE",
            hint="a saved plan is applied exactly as saved; --reviewed holds `apply -f` to a "
            "reviewed plan",
        )
    request = ApplyRequest(
        planfile=planfile,
        files=files,
        auto_approve=auto_approve,
        deploy=deploy or redeploy,
        redeploy=redeploy,
        wait_timeout=wait_timeout,
        poll_interval=poll_interval,
        max_deletes=max_deletes,
        allow_replace=allow_replace,
        allow_unknown_removal=allow_unknown_removal,
        targets=targets,
        color=output.colour_allowed() and stdout_is_terminal(),
        base_url=base_url,
        parallelism=parallelism,
        verbose=verbose,
        fingerprint_key=fingerprint_key_from(os.environ.get(ENV_FINGERPRINT_KEY)),
        reviewed=None if reviewed is None else pipeline.reviewed_from(reviewed),
    )
    if not request.planfile and not request.auto_approve and not stdin_is_interactive():
        raise ApplyRefused(
            "apply needs confirmation, but stdin is not a terminal; nothing was applied",
            hint="pass --auto-approve (CI), or save a plan with `reconciler plan -f ... --out "
            "plan.json`, review it, and run `reconciler apply plan.json`",
        )
    start_connecting(base_url)  # while the manifest or the saved plan is read
    run = _Run(manifest_files=files, targets=targets)
    notify.outcome(run)
    try:
        succeeded = run_async(_apply(request, run))
    except KeyboardInterrupt:
        _report_interrupt(request, run)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(0 if succeeded else 1)


def _report_interrupt(request: ApplyRequest, run: _Run) -> None:
    """Say what an interrupted apply did, and the exact command that goes on from there."""
    _echo("")
    if run.stage == "deploying" and run.deployed is not None:
        wait = request.command("status", "--wait", files=run.manifest_files)
        files = run.manifest_files
        _echo(
            render_interrupted_deploy(
                run.rollouts,
                run.deployed,
                wait,
                lambda flags: request.command("apply", "--redeploy", *flags, files=files),
            )
        )
    elif run.stage == "applying" and run.plan is not None and run.applied is not None:
        _echo(render_interrupted_apply(run.plan, run.applied, _rerun(request, run)))
    else:
        where = "at the confirmation" if run.stage == "confirming" else "before applying"
        echo(f"Interrupted {where}: nothing was applied.", err=True)
        return
    echo("Interrupted.", err=True)


def _rerun(request: ApplyRequest, run: _Run) -> str:
    """The command that finishes an interrupted apply. A saved plan is stale once part of it
    applied, so it is planned again from its manifest; with --deploy, --redeploy, since the
    environments whose changes applied before the interrupt change no more."""
    flags = [w for t in run.targets for w in ("--target", t)]
    if request.deploy:
        flags.append("--redeploy")
    return request.command("apply", *flags, files=run.manifest_files)


def _ask(question: str) -> str:
    """The answer to `question`; Ctrl-C or SIGTERM stop the question at once (an interrupt),
    the end of input is a refusal."""
    try:
        with interruptible():
            return output.ask(question)
    except click.Abort as abort:  # click turns both an interrupt and the end of input into it
        if isinstance(abort.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise ApplyRefused(
            "apply cancelled: no answer (end of input); nothing was applied"
        ) from None


def _check_inputs(planfile: str | None, files: tuple[str, ...], targets: tuple[str, ...]) -> None:
    """Exactly one of PLANFILE and -f; --target only with -f."""
    if planfile and files:
        raise UsageError("give either PLANFILE or -f, not both")
    if not planfile and not files:
        raise UsageError(
            "nothing to apply", hint="pass -f MANIFEST (file or directory) or a saved PLANFILE"
        )
    if planfile and targets:
        raise UsageError(
            "--target cannot be used with PLANFILE",
            hint="a saved plan keeps the targets it was planned with",
        )


async def _apply(request: ApplyRequest, run: _Run) -> bool:
    manifest, saved = _load_inputs(request)
    connection = pipeline.Connection(request.base_url, request.parallelism, request.verbose)
    if saved is not None:
        run.manifest_files, run.targets = saved.manifest_files, saved.plan.targets
        connection = pipeline.saved_plan_connection(saved, connection, request.fingerprint_key)
    async with pipeline.connected(connection, read_only=False) as client:
        plan = await _plan(request, manifest, saved, client, run)
        if plan is None:
            if not request.deploy:
                return True
            if not request.redeploy:
                await _check_rollouts(request, run, manifest, client)
            result = ApplyResult(())
        else:
            result = await _execute(request, plan, client, run)
            _echo("")
            _echo(render_report(result))
            if not request.deploy:
                return result.complete
        deployed = await _deploy(request, result, manifest, client, run)
        return result.complete and deployed.went_live


async def _check_rollouts(
    request: ApplyRequest, run: _Run, manifest: Manifest, client: Any
) -> None:
    """Nothing changed, so nothing is deployed, but an earlier rollout may matter: a newest
    deployment that failed (configuration an earlier run applied may not be live, and a CI
    job that retries after a failed rollout must not pass in silence) or one still in flight
    (an earlier run interrupted while it waited): say so, and which command helps."""
    from reconciler.errors import ApiError
    from reconciler.status import gather_status

    try:
        report = await gather_status(manifest, client)
    except ApiError as error:  # a check on top of a finished apply: say so, do not fail it
        echo(f"Note: could not check the latest deployments: {error.message}", err=True)
        return
    in_flight = []
    for env in report.environments:
        newest = env.newer or env.serving
        if newest is not None and not newest.is_final:
            in_flight.append(f"{env.address} ({newest.id}, {newest.status})")
        if newest is None or newest.status not in FAILED_STATUSES:
            continue
        code = f" ({newest.error_code})" if newest.error_code else ""
        echo(
            f"Warning: nothing changed, so nothing was deployed, but the newest deployment of "
            f"{env.address} ({newest.id}) is {newest.status}{code}: configuration an earlier "
            "apply changed may not be live. Fix the cause, then deploy again: "
            f"{request.command('apply', '--redeploy', files=run.manifest_files)}",
            err=True,
        )
    if in_flight:
        wait = request.command("status", "--wait", files=run.manifest_files)
        echo(
            f"Note: {len(in_flight)} deployment(s) are still rolling out: "
            f"{', '.join(in_flight)}. To wait for them: {wait}",
            err=True,
        )


def _load_inputs(request: ApplyRequest) -> tuple[Manifest, SavedPlan | None]:
    """The manifest (its warnings printed, before any plan) and the saved plan, if any."""
    from reconciler.cli.validate import echo_warnings

    if request.planfile is None:
        manifest, saved = pipeline.load_manifest(list(request.files)), None
    else:
        from reconciler.plan.planfile import load_plan

        saved = load_plan(Path(request.planfile))
        manifest = pipeline.load_manifest(list(saved.manifest_files))
    echo_warnings(manifest.warnings)
    return manifest, saved


async def _plan(
    request: ApplyRequest, manifest: Manifest, saved: SavedPlan | None, client: Any, run: _Run
) -> Plan | None:
    """The plan to apply, checked and approved; None when there is nothing to do."""
    if saved is None:
        plan = await _fresh_plan(request, manifest, client)
        if request.reviewed is not None:
            pipeline.check_reviewed(plan, request.reviewed)
    else:
        with reading_live_state(verbose=request.verbose) as progress:
            plan = await pipeline.checked_saved_plan(
                saved,
                manifest,
                client,
                fingerprint_key=request.fingerprint_key,
                allow_replace=request.allow_replace,
                observer=progress,
            )
        echo(f"Applying the saved plan {request.planfile} ({_describe_counts(saved.plan)}).")
        _warn_unfingerprinted(saved.plan)
    limits = pipeline.ApplyLimits(
        request.max_deletes, request.allow_replace, request.allow_unknown_removal
    )
    pipeline.raise_if_unsafe(plan, limits)
    if not executable_changes(plan):
        _nothing_to_apply(plan, rendered=saved is None)
        return None
    if saved is None and not request.auto_approve:
        run.stage = "confirming"
        answer = _ask(f"\n{CONFIRMATION}")
        if answer.strip() != "yes":
            raise ApplyRefused("apply cancelled: the answer was not 'yes'; nothing was applied")
    return plan


def _warn_unfingerprinted(saved: Plan) -> None:
    """Say why a secret of a saved plan has no fingerprint, rather than let the check pass in
    silence: missing when the plan was saved (the review saw "known after apply"), or read
    while the fingerprint key was not set (a change since the review cannot be detected)."""
    missing_then = planned_without(saved)
    unchecked = sorted({address for address, ref in secret_refs(saved) if not ref.fingerprint})
    missing = [address for address in unchecked if address in missing_then]
    unkeyed = [address for address in unchecked if address not in missing_then]
    if missing:
        echo(
            f"Note: {len(missing)} secret value(s) of this plan were missing when it was saved "
            "(it shows them as known after apply and holds no fingerprint of them), so apply "
            f"sends them as they are now: {', '.join(missing)}.",
            err=True,
        )
    if unkeyed:
        echo(
            f"Warning: {len(unkeyed)} secret value(s) of this plan have no fingerprint "
            f"({ENV_FINGERPRINT_KEY} was not set when it was saved), so a value changed since "
            f"the review cannot be detected: {', '.join(unkeyed)}. Set {ENV_FINGERPRINT_KEY} "
            "for both plan and apply to have such changes refused.",
            err=True,
        )


async def _fresh_plan(request: ApplyRequest, manifest: Manifest, client: Any) -> Plan:
    """`apply -f`: plan now and show it, findings and overrides included."""
    from reconciler.plan.planner import PlanOptions
    from reconciler.report.plan_json import render_text

    options = PlanOptions(
        targets=request.targets,
        max_deletes=request.max_deletes,
        allow_replace=request.allow_replace,
        fingerprint_key=request.fingerprint_key,
    )
    with reading_live_state(verbose=request.verbose) as progress:
        plan = await pipeline.plan_manifest(manifest, client, options, observer=progress)
    output.echo_plan(plan, render_text(plan, color=request.color) + "\n")
    return plan


def _describe_counts(plan: Plan) -> str:
    add, change, destroy = plan.counts()
    return f"{add} to add, {change} to change, {destroy} to destroy"


def _nothing_to_apply(plan: Plan, *, rendered: bool) -> None:
    """No executable change: fine when the plan is empty, an error when deletions are blocked."""
    blocked = [c.address for c in plan.changes]
    if not blocked:
        # the rendered plan already said "No changes. Live state matches the manifest."
        if not rendered:
            echo("No changes in the saved plan.")
        # The same result line as any apply, so CI logs and scripts read one form.
        echo("Apply complete! Resources: 0 added, 0 changed, 0 destroyed.")
        return
    raise ApplyRefused(
        "nothing can be applied: delete protection blocks " + ", ".join(blocked),
        hint="set deleteProtection: false for them in the manifest and apply, then remove them",
    )


def _echo(line: str) -> None:
    """Print on stdout; if stdout fails, go on: an apply stopped half-way by its output would
    leave the platform half changed (the failure is reported when the command exits)."""
    with contextlib.suppress(OutputError):
        echo(line)


async def _execute(request: ApplyRequest, plan: Plan, client: Any, run: _Run) -> ApplyResult:
    from reconciler.plan.secrets import resolve_ref

    progress: PlainApplyProgress | RichApplyProgress
    if stdout_is_terminal():
        progress = RichApplyProgress(output.console())
    else:
        progress = PlainApplyProgress(_echo)
    run.stage, run.plan, run.applied = "applying", plan, ApplyRecord(progress)
    try:
        return await execute(
            plan,
            client,
            resolve=resolve_ref,
            options=ApplyOptions(
                parallelism=request.parallelism, fingerprint_key=request.fingerprint_key
            ),
            observer=run.applied,
        )
    finally:
        progress.close()


async def _deploy(
    request: ApplyRequest, result: ApplyResult, manifest: Manifest, client: Any, run: _Run
) -> DeployReport:
    redeploy = Scope.parse(run.targets) if request.redeploy else None
    targets, left_out = deploy_targets(result, manifest, redeploy=redeploy)
    progress: PlainDeployProgress | RichDeployProgress
    if stdout_is_terminal():
        progress = RichDeployProgress(output.console())
    else:
        progress = PlainDeployProgress(_echo)
    run.stage, run.rollouts, run.deployed = "deploying", targets, DeployRecord(progress)
    _echo("")
    try:
        report = await roll_out(
            targets,
            client,
            manifest,
            options=DeployOptions(
                wait_timeout=request.wait_timeout, poll_interval=request.poll_interval
            ),
            observer=run.deployed if targets else None,
        )
    finally:
        progress.close()
    report = DeployReport(report.outcomes, report.warnings, not_deployed=left_out)
    _echo("")
    _echo(render_deploy_report(report))
    return report
