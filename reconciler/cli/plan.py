"""`reconciler plan`: read live state, show what apply would change, optionally save the plan."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reconciler.cli.interrupts import run_async
from reconciler.cli.options import (
    ENV_FINGERPRINT_KEY,
    connection_options,
    manifest_option,
    report_errors,
)
from reconciler.cli.validate import echo_warnings
from reconciler.report import output
from reconciler.report.output import echo

if TYPE_CHECKING:
    from reconciler.manifest.model import Manifest
    from reconciler.plan.changes import Plan
    from reconciler.plan.planner import PlanOptions

EXIT_NO_CHANGES = 0
EXIT_CHANGES = 2


@click.command()
@manifest_option
@connection_options
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
@click.option("--no-color", is_flag=True, help="Never colour the text output (also: NO_COLOR).")
@report_errors
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
    no_color: bool,
) -> None:
    """Show what apply would change to make live state match the manifests.

    Reads live state (concurrently, only what the manifests manage), prints the
    changes with the API calls behind them and the permissions apply needs.
    Write-only values never appear; a secret that is not available shows as
    (known after apply), and the plan still works.
    """
    from reconciler.cli.options import load_manifest
    from reconciler.plan.planner import PlanOptions
    from reconciler.plan.secrets import fingerprint_key_from
    from reconciler.plan.targets import Scope
    from reconciler.platform.connect import start_connecting

    Scope.parse(targets)  # a bad --target fails before any file or network work
    if out is not None:
        from reconciler.files import check_replaceable

        check_replaceable(out)  # before reading live state, not after
    start_connecting(base_url)  # while the manifest is read
    manifest = load_manifest(files)
    echo_warnings(manifest.warnings)
    options = PlanOptions(
        targets=targets,
        max_deletes=max_deletes,
        fingerprint_key=fingerprint_key_from(os.environ.get(ENV_FINGERPRINT_KEY)),
    )
    built = run_async(_build(manifest, options, base_url, parallelism, verbose))
    if explain:
        from reconciler.plan.provenance import explained

        built = explained(built, manifest)
    result = with_findings(built, manifest)
    # JSON and markdown carry them as notes: a pull-request comment is all a reviewer sees,
    # not the job's stderr. The text form does not repeat what stderr already said.
    noted = with_warning_notes(result, manifest)
    if out is not None:
        from reconciler.plan.planfile import plan_file_text

        output.write_plan_file(out, noted, plan_file_text(noted, manifest_files=files))
    shown = result if output_format == "text" else noted
    output.echo_plan(shown, _render(shown, output_format, no_color))
    if out is not None:
        echo(
            f"Saved the plan to {out}. To apply exactly this plan: reconciler apply {out}",
            err=True,
        )
    if any(finding.fails for finding in result.findings):
        sys.exit(1)  # an error finding of the built-in checks fails the plan, whatever the flags
    if detailed_exitcode:
        sys.exit(detailed_exit_code(result))


def detailed_exit_code(result: Plan) -> int:
    """2 whenever live state differs from the manifest, whether apply may change it or not
    (a drift job reads 0 as "in sync"); 0 only when it matches."""
    return EXIT_CHANGES if result.live_differs else EXIT_NO_CHANGES


async def _build(
    manifest: Manifest,
    options: PlanOptions,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
) -> Plan:
    from reconciler.plan.planner import build_plan
    from reconciler.platform.connect import connect

    async with connect(
        base_url, parallelism=parallelism, verbose=verbose, read_only=True
    ) as client:
        return await build_plan(manifest, client, options)


def with_warning_notes(result: Plan, manifest: Manifest) -> Plan:
    """The plan with each manifest warning as a `warning` note (for its JSON forms)."""
    from reconciler.plan.changes import Note

    notes = tuple(Note("warning", w.located_message) for w in manifest.warnings)
    return dataclasses.replace(result, notes=result.notes + notes) if notes else result


def with_findings(result: Plan, manifest: Manifest) -> Plan:
    """The plan with the findings of the plan-time checks (reconciler/plan/plan_rules.py)."""
    from reconciler.plan.plan_rules import plan_findings

    findings = plan_findings(manifest, result.changes, result.capacity)
    return dataclasses.replace(result, findings=tuple(findings))


def _render(result: Plan, output_format: str, no_color: bool) -> str:
    from reconciler.report import plan_json as render

    if output_format == "sarif":
        from reconciler.checks.sarif import render_sarif

        return render_sarif(result.findings)

    if output_format == "json":
        return render.render_json(result)
    if output_format == "markdown":
        text = render.render_markdown(result)
        return text if text.endswith("\n") else text + "\n"
    return render.render_text(result, color=use_color(no_color))


def use_color(no_color: bool) -> bool:
    """Colour only on a terminal, and never with --no-color or NO_COLOR (any value)."""
    if no_color or "NO_COLOR" in os.environ:
        return False
    return output.stdout_is_terminal()
