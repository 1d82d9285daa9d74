"""`reconciler plan`: read live state, show what apply would change, optionally save the plan."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.cli import notify
from reconciler.cli.colour import color_option
from reconciler.cli.interrupts import run_async
from reconciler.cli.options import (
    ENV_FINGERPRINT_KEY,
    allow_env_option,
    connection_options,
    manifest_option,
    report_errors,
)
from reconciler.cli.show import Shown, render_plan, show_options
from reconciler.cli.validate import echo_warnings
from reconciler.report import output
from reconciler.report.output import echo

if TYPE_CHECKING:
    from reconciler.manifest.model import ChecksSettings, Manifest
    from reconciler.pipeline import Connection
    from reconciler.plan.changes import Plan
    from reconciler.plan.planner import PlanOptions

EXIT_NO_CHANGES = 0
EXIT_CHANGES = 2


@click.command()
@manifest_option
@connection_options
@allow_env_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "markdown", "sarif"]),
    default="text",
    show_default=True,
    help="text for terminals, json (documented, stable) for tools, markdown for PR comments, "
    "sarif (SARIF 2.1.0) for the findings of the built-in checks as code-scanning annotations.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Save the plan to FILE (no secret values); `reconciler apply FILE` applies exactly it.",
)
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 0 when live state matches the manifests, 2 when it differs (blocked and "
    "refused changes included), 1 on error.",
)
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="ADDRESS",
    help="Limit the plan to this address and everything below it (e.g. project.shop, "
    "app.shop/web, variable.shop/web/production). Repeatable.",
)
@click.option(
    "--max-deletes",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Flag plans deleting more objects than this (apply refuses them unless raised).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Say which templates (and appDefaults) each change comes from, and how many apps "
    "and projects each one changes (json: `templates` on changes, `template_reach`).",
)
@click.option(
    "--base-ref",
    metavar="REF",
    help="The git ref this change merges into (a pull request's base, e.g. origin/main): check "
    "overrides added, changed or removed since REF are shown as such and count as changes "
    "(exit 2 with --detailed-exitcode).",
)
@show_options
@color_option
@report_errors
@notify.notifies("plan", default=False)
def plan(
    files: tuple[str, ...],
    base_url: str | None,
    parallelism: int,
    verbose: bool,
    output_format: str,
    out: Path | None,
    detailed_exitcode: bool,
    targets: tuple[str, ...],
    max_deletes: int,
    explain: bool,
    base_ref: str | None,
    show_permissions: bool,
    full_plan_url: str | None,
    no_color: bool,
) -> None:
    """Show what apply would change to make live state match the manifests.

    Reads live state (concurrently, only what the manifests manage), prints the
    changes with the API calls behind them and the permissions apply needs, the
    findings of the built-in checks and every check the manifests turn off or down.
    Write-only values never appear; a secret that is not available shows as
    (known after apply), and the plan still works.
    """
    from reconciler import pipeline
    from reconciler.plan.planner import PlanOptions
    from reconciler.plan.secrets import fingerprint_key_from
    from reconciler.plan.targets import Scope
    from reconciler.platform.connect import start_connecting

    Scope.parse(targets)  # a bad --target fails before any file or network work
    if out is not None:
        from reconciler.files import check_replaceable

        check_replaceable(out)  # before reading live state, not after
    start_connecting(base_url)  # while the manifest is read
    manifest = pipeline.load_manifest(files)
    echo_warnings(manifest.warnings)
    base = None if base_ref is None else pipeline.checks_at_ref(files, base_ref)
    fingerprint_key = fingerprint_key_from(os.environ.get(ENV_FINGERPRINT_KEY))
    options = PlanOptions(targets=targets, max_deletes=max_deletes, fingerprint_key=fingerprint_key)
    connection = pipeline.Connection(base_url, parallelism, verbose)
    result = run_async(_build(manifest, options, connection, base))
    if explain:
        from reconciler.plan.provenance import explained

        result = explained(result, manifest)
    notify.outcome(result)
    if out is not None and not result.failing_findings:
        content = pipeline.plan_file_content(
            result, manifest_files=files, connection=connection, signing_key=fingerprint_key
        )
        output.write_plan_file(out, result, content)
    shown = Shown(output_format, show_permissions, full_plan_url)
    output.echo_plan(result, render_plan(result, shown))
    if result.failing_findings:
        if out is not None:
            echo(f"Not saved to {out}: the built-in checks fail this plan.", err=True)
        sys.exit(1)  # an error finding of the built-in checks fails the plan, whatever the flags
    if out is not None:
        echo(
            f"Saved the plan to {out}. To apply exactly this plan: reconciler apply {out}",
            err=True,
        )
    if detailed_exitcode:
        sys.exit(detailed_exit_code(result))


def detailed_exit_code(result: Plan) -> int:
    """2 whenever live state differs from the manifest, whether apply may change it or not
    (a drift job reads 0 as "in sync"), or the overrides of the checks differ from the base
    the plan was compared with; 0 only when neither."""
    return EXIT_CHANGES if result.live_differs or result.checks_changed else EXIT_NO_CHANGES


async def _build(
    manifest: Manifest,
    options: PlanOptions,
    connection: Connection,
    base: ChecksSettings | None,
) -> Plan:
    from reconciler import pipeline
    from reconciler.report.progress import reading_live_state

    async with pipeline.connected(connection, read_only=True) as client:
        with reading_live_state(verbose=connection.verbose) as progress:
            return await pipeline.plan_manifest(
                manifest, client, options, base_checks=base, observer=progress
            )


def use_color(no_color: bool) -> bool:
    """Colour only on a terminal, and never with --no-color or NO_COLOR (any value)."""
    return not no_color and output.colour_allowed() and output.stdout_is_terminal()
