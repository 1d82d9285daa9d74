"""`reconciler export`: manifests for the live state of a workspace."""

from __future__ import annotations

from pathlib import Path

import click

from reconciler.cli.colour import quiet_color_option
from reconciler.cli.interrupts import run_async
from reconciler.cli.options import connection_options, report_errors
from reconciler.diagnostics import INFO, Diagnostic
from reconciler.errors import UsageError
from reconciler.export import Export, ExportOptions, export_workspace
from reconciler.report import output
from reconciler.report.output import echo


@click.command("export")
@click.option(
    "--project",
    "projects",
    multiple=True,
    metavar="SLUG",
    help="Export only this project (repeatable). Default: every project of the workspace.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write one manifest holding every exported project to FILE (default: stdout).",
)
@click.option(
    "--out-dir",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write one manifest per project, DIR/<slug>.yaml (the directory is created).",
)
@click.option(
    "--pin-ids/--no-pin-ids",
    default=True,
    show_default=True,
    help="Write `id:` for projects and apps, so renaming a slug key later renames the object "
    "instead of deleting and re-creating it. Leave them out for a manifest meant for "
    "another workspace.",
)
@click.option(
    "--defaults/--no-defaults",
    "factor_defaults",
    default=True,
    show_default=True,
    help="Write what production and preview share once, under the app's `defaults`.",
)
@click.option(
    "--templates/--no-templates",
    "factor_templates",
    default=False,
    show_default=True,
    help="Write what several apps share once, as templates they extend (with --out-dir, in "
    "_templates.yaml), where that makes the manifest shorter.",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@connection_options
@quiet_color_option
@report_errors
def export(
    projects: tuple[str, ...],
    output: Path | None,
    out_dir: Path | None,
    pin_ids: bool,
    factor_defaults: bool,
    factor_templates: bool,
    force: bool,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
) -> None:
    """Write manifests for what exists on the platform (to adopt a workspace).

    Only what differs from the platform's defaults is written. Write-only variable
    values cannot be read back: they become `fromEnv` references with generated
    names, listed on stderr; set those variables before `plan`/`apply`. A plan of
    the result against the same workspace reports no changes.

    \b
    Examples:
      reconciler export --project shop > platform/shop.yaml
      reconciler export --out-dir platform/
      reconciler export --templates --out-dir platform/
    """
    if output is not None and out_dir is not None:
        raise UsageError("use either -o/--output or --out-dir, not both")
    result = run_async(
        _export(
            base_url,
            projects,
            parallelism,
            verbose,
            ExportOptions(pin_ids, factor_defaults, factor_templates),
        )
    )
    if out_dir is not None:
        written = _write_directory(result, out_dir, force=force)
        echo(f"Wrote {len(written)} manifest(s) to {out_dir}.", err=True)
    elif output is not None:
        _write_file(output, result.render(), force=force)
        echo(f"Wrote {len(result.projects)} project(s) to {output}.", err=True)
    else:
        echo(result.render(), nl=False)
    if not result.projects:
        echo("Warning: no projects found; nothing to manage yet.", err=True)
    for note in result.notes:  # the names the platform gave, escaped as every diagnostic is
        echo(Diagnostic(INFO, note).labelled, err=True)
    _print_secret_inputs(result)


async def _export(
    base_url: str | None,
    projects: tuple[str, ...],
    parallelism: int,
    verbose: bool,
    options: ExportOptions,
) -> Export:
    from reconciler.platform.connect import connect

    client = connect(base_url, parallelism=parallelism, verbose=verbose, read_only=True)
    async with client:
        return await export_workspace(client, projects, options)


def _write_directory(result: Export, out_dir: Path, *, force: bool) -> list[Path]:
    documents = result.render_by_project()
    targets = {slug: out_dir / f"{slug}.yaml" for slug in documents}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not force:
        raise UsageError(
            f"refusing to overwrite {', '.join(existing)}",
            hint="pass --force to overwrite, or choose another --out-dir",
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    for slug, path in targets.items():
        _write_file(path, documents[slug], force=True)
    return list(targets.values())


def _write_file(path: Path, text: str, *, force: bool) -> None:
    """Atomic: a reader (or an interrupted run) never sees half a manifest."""
    if path.exists() and not force:
        raise UsageError(f"refusing to overwrite {path}", hint="pass --force to overwrite it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        output.write_file(path, text)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None


def _print_secret_inputs(result: Export) -> None:
    if not result.secrets:
        return
    echo(
        f"\n{len(result.secrets)} write-only variable(s) cannot be read back; the manifest reads "
        "them from these environment variables at plan/apply time:",
        err=True,
    )
    width = max(len(s.env_name) for s in result.secrets)
    for secret in result.secrets:
        echo(f"  {secret.env_name.ljust(width)}  {secret.address}", err=True)
