"""`reconciler status`: deployments and domains of the environments a manifest manages."""

from __future__ import annotations

import asyncio
import sys
import time

import click

from reconciler.cli.options import connection_options, manifest_option, report_errors
from reconciler.manifest.model import Manifest
from reconciler.status import StatusReport, gather_status, render_json, render_rich, render_text


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
@connection_options
@report_errors
def status(
    files: tuple[str, ...],
    output_format: str,
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
    """
    from reconciler.cli.validate import echo_warnings
    from reconciler.manifest.validate import load_manifest

    manifest = load_manifest(files)
    echo_warnings(manifest.warnings)
    report = asyncio.run(_gather(manifest, base_url, parallelism, verbose))
    now_ms = int(time.time() * 1000)
    if output_format == "json":
        click.echo(render_json(report, now_ms), nl=False)
    elif sys.stdout.isatty():
        from rich.console import Console

        render_rich(report, now_ms, Console())
    else:
        click.echo(render_text(report, now_ms), nl=False)


async def _gather(
    manifest: Manifest, base_url: str | None, parallelism: int, verbose: bool
) -> StatusReport:
    from reconciler.platform.connect import connect

    client = connect(base_url, parallelism=parallelism, verbose=verbose, read_only=True)
    async with client:
        return await gather_status(manifest, client)
