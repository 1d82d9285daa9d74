"""`reconciler status`: deployments and domains of the environments a manifest manages."""

from __future__ import annotations

import sys
import time

import click

from reconciler.apply.deploy import DeployOptions, DeployReport
from reconciler.cli.apply import duration
from reconciler.cli.colour import quiet_color_option
from reconciler.cli.interrupts import run_async
from reconciler.cli.options import connection_options, manifest_option, report_errors
from reconciler.manifest.model import Manifest
from reconciler.platform.protocol import Platform
from reconciler.report import output
from reconciler.report.output import echo
from reconciler.report.status import render_json, render_rich, render_text
from reconciler.status import StatusReport, gather_status


@click.command("status")
@manifest_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="`table`: tables on a terminal, aligned plain text otherwise; `json`: stable objects.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="First wait for every deployment still in flight to finish (progress on stderr); "
    "exit 1 if one of them does not go live.",
)
@click.option(
    "--wait-timeout",
    default="15m",
    show_default=True,
    callback=duration,
    help="With --wait: how long to wait for all deployments (e.g. 90s, 15m, 1h).",
)
@click.option(
    "--poll-interval",
    default="2s",
    show_default=True,
    callback=duration,
    help="With --wait: time between two status checks of a deployment.",
)
@connection_options
@quiet_color_option
@report_errors
def status(
    files: tuple[str, ...],
    output_format: str,
    wait: bool,
    wait_timeout: float,
    poll_interval: float,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
) -> None:
    """Show, per environment of the manifest, the deployment serving it (status, image or
    commit, age, rolled back or not) and each domain's verification status with the DNS
    records the platform has not seen yet. Reads only; never changes anything.

    \b
    Examples:
      reconciler status -f platform/
      reconciler status -f platform/ --format json | jq '.environments[].domains'
      reconciler status -f platform/ --wait    # after an interrupted apply --deploy
    """
    from reconciler.cli.validate import echo_warnings
    from reconciler.pipeline import load_manifest

    manifest = load_manifest(files)
    echo_warnings(manifest.warnings)
    options = (
        DeployOptions(wait_timeout=wait_timeout, poll_interval=poll_interval) if wait else None
    )
    report, waited = run_async(_gather(manifest, base_url, parallelism, verbose, options))
    now_ms = int(time.time() * 1000)
    if output_format == "json":
        echo(render_json(report, now_ms), nl=False)
    elif output.stdout_is_terminal():
        render_rich(report, now_ms, output.console())
    else:
        echo(render_text(report, now_ms), nl=False)
    if waited is not None and not waited.succeeded:
        sys.exit(1)


async def _gather(
    manifest: Manifest,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
    wait: DeployOptions | None,
) -> tuple[StatusReport, DeployReport | None]:
    """The status report; with `wait`, read again once the deployments in flight finished."""
    from reconciler.platform.connect import connect

    client = connect(base_url, parallelism=parallelism, verbose=verbose, read_only=True)
    async with client:
        report = await gather_status(manifest, client)
        if wait is None:
            return report, None
        waited = await _wait_for_rollouts(report, client, wait)
        return await gather_status(manifest, client), waited


async def _wait_for_rollouts(
    report: StatusReport, client: Platform, options: DeployOptions
) -> DeployReport:
    """Poll each environment's newest deployment that is not final yet, with progress and a
    result line on stderr (stdout stays the report, JSON included)."""
    from reconciler.apply.deploy import DeployTarget, wait_for_deployments
    from reconciler.report.progress import PlainDeployProgress, render_deploy_report

    in_flight = [
        (DeployTarget(env.project, env.app, env.environment, reasons=()), newest.id)
        for env in report.environments
        if (newest := env.newer or env.serving) is not None and not newest.is_final
    ]
    if not in_flight:
        echo("No deployment in flight: nothing to wait for.", err=True)
        return DeployReport(())

    def progress(line: str) -> None:
        echo(line, err=True)

    waited = await wait_for_deployments(
        in_flight,
        client,
        options=options,
        observer=PlainDeployProgress(progress, created_earlier=True),
    )
    echo(render_deploy_report(waited), err=True)
    return waited
