"""`reconciler apply`: converge live state on the manifest (or on a saved plan), then roll out.

    reconciler apply -f platform/ [--auto-approve] [--deploy]
    reconciler apply plan.json [--deploy]

Everything that can refuse an apply (no confirmation possible, a stale saved
plan, a changed or missing secret, too many deletions, a replace) refuses
before the first write.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click
from rich.console import Console

from reconciler.cli.options import ENV_FINGERPRINT_KEY, connection_options, report_errors
from reconciler.engine.apply import (
    ApplyOptions,
    ApplyRefused,
    ApplyResult,
    check_safety,
    check_saved_plan,
    executable_changes,
    execute,
    secret_refs,
)
from reconciler.engine.changes import Plan
from reconciler.engine.deploy import (
    FAILED_STATUSES,
    DeployOptions,
    DeployReport,
    deploy_targets,
    roll_out,
)
from reconciler.engine.progress import (
    PlainApplyProgress,
    PlainDeployProgress,
    RichApplyProgress,
    RichDeployProgress,
    render_deploy_report,
    render_report,
)
from reconciler.errors import UsageError
from reconciler.manifest.model import Manifest

if TYPE_CHECKING:
    from reconciler.engine.planfile import SavedPlan

DEFAULT_MAX_DELETES = 10
CONFIRMATION = "Do you want to perform these actions? Only 'yes' will be accepted:"

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


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    seconds = parse_duration(value)
    if seconds <= 0:
        # A zero poll interval would ask for the deployment's status without pause; a zero
        # timeout would give up before the first answer.
        raise click.BadParameter(f"{value!r} must be longer than zero; use e.g. 2s or 15m")
    return seconds


def stdin_is_interactive() -> bool:
    """Whether a person can answer the confirmation (tests replace this)."""
    return _is_terminal(sys.stdin)


def stdout_is_terminal() -> bool:
    """Whether to draw progress bars and colour (tests replace this)."""
    return _is_terminal(sys.stdout)


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):
        return False


@dataclass(frozen=True)
class ApplyRequest:
    planfile: str | None
    files: tuple[str, ...]
    auto_approve: bool
    deploy: bool
    wait_timeout: float
    poll_interval: float
    max_deletes: int | None
    allow_replace: bool
    targets: tuple[str, ...]
    color: bool
    base_url: str | None
    parallelism: int
    verbose: bool
    fingerprint_key: bytes | None


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
    "--wait-timeout",
    default="15m",
    show_default=True,
    callback=_duration,
    help="With --deploy: how long to wait for all deployments (e.g. 90s, 15m, 1h).",
)
@click.option(
    "--poll-interval",
    default="2s",
    show_default=True,
    callback=_duration,
    help="With --deploy: time between two status checks of a deployment.",
)
@click.option(
    "--max-deletes",
    type=click.IntRange(min=0),
    default=None,
    help="Refuse to apply a plan that deletes more objects than this. "
    "[default: 10; for PLANFILE the value it was planned with]",
)
@click.option(
    "--allow-replace",
    is_flag=True,
    help="Allow replacing apps (git <-> image source: destroys their deployments, domains and "
    "variables).",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="ADDRESS",
    help="Only apply changes at or below ADDRESS (e.g. app.shop/web). Repeatable. Not with "
    "PLANFILE (a saved plan keeps its own targets).",
)
@click.option("--no-color", is_flag=True, help="Never colour the plan (also: NO_COLOR).")
@connection_options
@report_errors
def apply(
    planfile: str | None,
    files: tuple[str, ...],
    auto_approve: bool,
    deploy: bool,
    wait_timeout: float,
    poll_interval: float,
    max_deletes: int | None,
    allow_replace: bool,
    targets: tuple[str, ...],
    no_color: bool,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
) -> None:
    """Apply the manifest (-f) or a saved plan (PLANFILE) to the platform.

    With -f: plan, show the plan, ask for 'yes' (or --auto-approve), apply.
    With PLANFILE (from `reconciler plan --out`): re-read live state, refuse if
    the plan is stale or a secret changed, then apply exactly that plan.

    Exit status: 0 when everything applied (and, with --deploy, every
    deployment went live); 1 otherwise.
    """
    from reconciler.secrets import fingerprint_key_from

    _check_inputs(planfile, files, targets)
    request = ApplyRequest(
        planfile=planfile,
        files=files,
        auto_approve=auto_approve,
        deploy=deploy,
        wait_timeout=wait_timeout,
        poll_interval=poll_interval,
        max_deletes=max_deletes,
        allow_replace=allow_replace,
        targets=targets,
        color=not no_color and "NO_COLOR" not in os.environ and stdout_is_terminal(),
        base_url=base_url,
        parallelism=parallelism,
        verbose=verbose,
        fingerprint_key=fingerprint_key_from(os.environ.get(ENV_FINGERPRINT_KEY)),
    )
    if not request.planfile and not request.auto_approve and not stdin_is_interactive():
        raise ApplyRefused(
            "apply needs confirmation, but stdin is not a terminal; nothing was applied",
            hint="pass --auto-approve (CI), or save a plan with `reconciler plan -f ... --out "
            "plan.json`, review it, and run `reconciler apply plan.json`",
        )
    try:
        succeeded = asyncio.run(_apply(request))
    except KeyboardInterrupt:
        # The changes that finished are already printed, one line each; say what that means.
        click.echo(
            "Interrupted. The changes listed above finished; calls in flight may or may not "
            "have reached the platform. Run apply again: it continues from where it stopped "
            "and never creates anything twice.",
            err=True,
        )
        sys.exit(130)
    sys.exit(0 if succeeded else 1)


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


async def _apply(request: ApplyRequest) -> bool:
    from reconciler.platform.connect import connect

    manifest, saved = _load_inputs(request)
    async with connect(
        request.base_url, parallelism=request.parallelism, verbose=request.verbose
    ) as client:
        plan = await _plan(request, manifest, saved, client)
        if plan is None:
            if request.deploy:
                await _warn_about_failed_rollouts(manifest, client)
            return True
        result = await _execute(request, plan, client)
        click.echo("")
        click.echo(render_report(result))
        if not request.deploy:
            return result.complete
        deployed = await _deploy(request, result, manifest, client)
        return result.complete and deployed.succeeded


async def _warn_about_failed_rollouts(manifest: Manifest, client: Any) -> None:
    """Nothing changed, so nothing is deployed: if an environment's newest deployment failed,
    configuration an earlier run applied may not be live, and a CI job that retries after a
    failed rollout must not pass in silence."""
    from reconciler.platform.errors import ApiError
    from reconciler.status import gather_status

    try:
        report = await gather_status(manifest, client)
    except ApiError as error:  # a check on top of a finished apply: say so, do not fail it
        click.echo(f"Note: could not check the latest deployments: {error.message}", err=True)
        return
    for env in report.environments:
        newest = env.newer or env.serving
        if newest is None or newest.status not in FAILED_STATUSES:
            continue
        code = f" ({newest.error_code})" if newest.error_code else ""
        click.echo(
            f"Warning: nothing changed, so nothing was deployed, but the newest deployment of "
            f"{env.address} ({newest.id}) is {newest.status}{code}: configuration an earlier "
            "apply changed may not be live. Fix the cause, then redeploy it on the platform "
            "(or change the manifest and run apply --deploy again).",
            err=True,
        )


def _load_inputs(request: ApplyRequest) -> tuple[Manifest, SavedPlan | None]:
    """The manifest (its warnings printed, before any plan) and the saved plan, if any."""
    from reconciler.cli.validate import echo_warnings
    from reconciler.manifest.validate import load_manifest

    if request.planfile is None:
        manifest, saved = load_manifest(list(request.files)), None
    else:
        from reconciler.engine.planfile import load_plan

        saved = load_plan(Path(request.planfile))
        manifest = load_manifest(list(saved.manifest_files))
    echo_warnings(manifest.warnings)
    return manifest, saved


async def _plan(
    request: ApplyRequest, manifest: Manifest, saved: SavedPlan | None, client: Any
) -> Plan | None:
    """The plan to apply, checked and approved; None when there is nothing to do."""
    from reconciler.secrets import resolve_ref

    if saved is None:
        plan = await _fresh_plan(request, manifest, client)
    else:
        plan = await _checked_saved_plan(request, manifest, saved, client)
        _warn_unfingerprinted(saved.plan)
    if not executable_changes(plan):
        return _nothing_to_apply(plan, rendered=saved is None)
    max_deletes = request.max_deletes
    if max_deletes is None:
        max_deletes = saved.plan.max_deletes if saved else DEFAULT_MAX_DELETES
    check_safety(
        plan, max_deletes=max_deletes, allow_replace=request.allow_replace, resolve=resolve_ref
    )
    if saved is None and not request.auto_approve:
        answer = click.prompt(
            f"\n{CONFIRMATION}", default="", show_default=False, prompt_suffix=" "
        )
        if answer.strip() != "yes":
            raise ApplyRefused("apply cancelled: the answer was not 'yes'; nothing was applied")
    return plan


def _warn_unfingerprinted(saved: Plan) -> None:
    """A saved plan without fingerprints cannot show that a secret changed since it was
    reviewed: say so rather than let the check pass in silence."""
    unchecked = sorted({address for address, ref in secret_refs(saved) if not ref.fingerprint})
    if unchecked:
        click.echo(
            f"Warning: {len(unchecked)} secret value(s) of this plan have no fingerprint "
            f"({ENV_FINGERPRINT_KEY} was not set when it was saved), so a value changed since "
            f"the review cannot be detected: {', '.join(unchecked)}. Set {ENV_FINGERPRINT_KEY} "
            "for both plan and apply to have such changes refused.",
            err=True,
        )


async def _fresh_plan(request: ApplyRequest, manifest: Manifest, client: Any) -> Plan:
    """`apply -f`: plan now and show it."""
    from reconciler.engine.plan import PlanOptions, build_plan
    from reconciler.engine.render import render_text

    options = PlanOptions(
        targets=request.targets,
        max_deletes=DEFAULT_MAX_DELETES if request.max_deletes is None else request.max_deletes,
        allow_replace=request.allow_replace,
        fingerprint_key=request.fingerprint_key,
    )
    plan = await build_plan(manifest, client, options)
    click.echo(render_text(plan, color=request.color))
    return plan


async def _checked_saved_plan(
    request: ApplyRequest, manifest: Manifest, saved: SavedPlan, client: Any
) -> Plan:
    """`apply PLANFILE`: the saved plan, once a plan rebuilt now proves it is still current."""
    from reconciler.engine.plan import PlanOptions, build_plan
    from reconciler.secrets import resolve_ref

    options = PlanOptions(
        targets=saved.plan.targets,
        max_deletes=saved.plan.max_deletes,
        allow_replace=request.allow_replace,
        fingerprint_key=request.fingerprint_key,
    )
    current = await build_plan(manifest, client, options)
    check_saved_plan(
        saved.plan, current, resolve=resolve_ref, fingerprint_key=request.fingerprint_key
    )
    click.echo(f"Applying the saved plan {request.planfile} ({_describe_counts(saved.plan)}).")
    return saved.plan


def _describe_counts(plan: Plan) -> str:
    add, change, destroy = plan.counts()
    return f"{add} to add, {change} to change, {destroy} to destroy"


def _nothing_to_apply(plan: Plan, *, rendered: bool) -> None:
    """No executable change: fine when the plan is empty, an error when deletions are blocked."""
    blocked = [c.address for c in plan.changes]
    if not blocked:
        # the rendered plan already said "No changes. Live state matches the manifest."
        if not rendered:
            click.echo("No changes in the saved plan.")
        # The same result line as any apply, so CI logs and scripts read one form.
        click.echo("Apply complete! Resources: 0 added, 0 changed, 0 destroyed.")
        return None
    raise ApplyRefused(
        "nothing can be applied: delete protection blocks " + ", ".join(blocked),
        hint="set deleteProtection: false for them in the manifest and apply, then remove them",
    )


async def _execute(request: ApplyRequest, plan: Plan, client: Any) -> ApplyResult:
    from reconciler.secrets import resolve_ref

    progress: PlainApplyProgress | RichApplyProgress
    if stdout_is_terminal():
        progress = RichApplyProgress(Console(file=sys.stdout))
    else:
        progress = PlainApplyProgress(click.echo)
    try:
        return await execute(
            plan,
            client,
            resolve=resolve_ref,
            options=ApplyOptions(
                parallelism=request.parallelism, fingerprint_key=request.fingerprint_key
            ),
            observer=progress,
        )
    finally:
        progress.close()


async def _deploy(
    request: ApplyRequest, result: ApplyResult, manifest: Manifest, client: Any
) -> DeployReport:
    targets, left_out = deploy_targets(result, manifest)
    progress: PlainDeployProgress | RichDeployProgress
    if stdout_is_terminal():
        progress = RichDeployProgress(Console(file=sys.stdout))
    else:
        progress = PlainDeployProgress(click.echo)
    click.echo("")
    try:
        report = await roll_out(
            targets,
            client,
            manifest,
            options=DeployOptions(
                wait_timeout=request.wait_timeout, poll_interval=request.poll_interval
            ),
            observer=progress if targets else None,
        )
    finally:
        progress.close()
    report = DeployReport(report.outcomes, report.warnings, not_deployed=left_out)
    click.echo("")
    click.echo(render_deploy_report(report))
    return report
