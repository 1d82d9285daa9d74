"""`reconciler projects`: the projects the manifests define, or those changed since a git ref,
as a list for a CI matrix (one plan per project, each job with `--target project.<slug>`)."""

from __future__ import annotations

import json

import click

from reconciler.cli.colour import quiet_color_option
from reconciler.cli.options import manifest_option, report_errors
from reconciler.report.output import echo


@click.command()
@manifest_option
@click.option(
    "--changed-since",
    metavar="GIT_REF",
    help="Only the projects whose merged manifest, or a fromFile file they read, changed since "
    "this git ref (a branch, tag or commit; new projects included). A change to prune, checks "
    "or limits changes them all.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one slug a line; json: a list of {project, file} objects, ready for "
    "`strategy.matrix.include` (fromJSON) in GitHub Actions.",
)
@quiet_color_option
@report_errors
def projects(files: tuple[str, ...], changed_since: str | None, output_format: str) -> None:
    """List the projects the manifests define, for fanning plans out in CI.

    With --changed-since, the manifests as of that ref are read from git (never judged by
    file names) and only the projects whose content differs are listed. Offline: no key,
    no network.
    """
    from reconciler.manifest.history import changed_projects
    from reconciler.manifest.validate import load_manifest

    manifest = load_manifest(files)
    slugs = [project.slug for project in manifest.projects]
    if changed_since is not None:
        slugs = changed_projects(manifest, files, changed_since)
    if output_format == "json":
        where = {p.slug: p.pos.file if p.pos else "" for p in manifest.projects}
        items = [{"project": slug, "file": where[slug]} for slug in slugs]
        echo(json.dumps(items))
        return
    for slug in slugs:
        echo(slug)
