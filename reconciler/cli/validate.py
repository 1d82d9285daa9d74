"""`reconciler validate` and `reconciler schema`: offline, no key, no network."""

from __future__ import annotations

import json

import click

from reconciler.cli.options import manifest_option, report_errors


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@manifest_option(required=False)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one problem a line (file:line:column: path: message); json: a list of objects.",
)
@report_errors
def validate(paths: tuple[str, ...], files: tuple[str, ...], output_format: str) -> None:
    """Check manifests offline: YAML, the JSON Schema and every rule of the platform.

    Manifests are given with -f or as arguments (`reconciler validate a.yaml b.yaml`, as
    pre-commit passes them); all are validated together, so projects merge across them.
    Exit 0 when valid, 1 listing every problem with its file, line and column.
    Makes no network call and needs no API key.
    """
    from reconciler.manifest.validate import ManifestInvalid, load_manifest

    if not paths and not files:
        raise click.UsageError("give the manifests to check: -f PATH (repeatable) or PATH...")
    try:
        manifest = load_manifest(files + paths)
    except ManifestInvalid as invalid:
        if output_format == "json":
            click.echo(json.dumps([p.to_json() for p in invalid.problems], indent=2))
        else:
            for problem in invalid.problems:
                click.echo(str(problem))
            count = len(invalid.problems)
            click.echo(f"{count} problem{'s' if count != 1 else ''} found.", err=True)
        raise SystemExit(1) from None
    if output_format == "json":
        click.echo("[]")
        return
    apps = sum(len(p.apps) for p in manifest.projects)
    envs = sum(len(a.environments) for p in manifest.projects for a in p.apps)
    files_read = len(manifest.sources)
    click.echo(
        f"Valid: {files_read} file{'s' if files_read != 1 else ''}, "
        f"{len(manifest.projects)} project{'s' if len(manifest.projects) != 1 else ''}, "
        f"{apps} app{'s' if apps != 1 else ''}, "
        f"{envs} managed environment{'s' if envs != 1 else ''}."
    )


@click.command()
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["json", "markdown"]),
    default="json",
    show_default=True,
    help="json: the schema itself; markdown: a field reference generated from it.",
)
@report_errors
def schema(output_format: str) -> None:
    """Print the manifest JSON Schema (Draft 2020-12), for editors and other tools."""
    from reconciler.manifest.schema import manifest_schema, schema_text

    if output_format == "markdown":
        from reconciler.manifest.reference import reference_markdown

        click.echo(reference_markdown(manifest_schema()), nl=False)
        return
    click.echo(schema_text(), nl=False)
