"""`reconciler validate` and `reconciler schema`: offline, no key, no network."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from reconciler.cli.colour import quiet_color_option
from reconciler.cli.options import allow_env_option, manifest_option, report_errors
from reconciler.report.output import echo

if TYPE_CHECKING:
    from reconciler.checks.findings import Finding
    from reconciler.checks.overrides import Override
    from reconciler.manifest.model import Manifest
    from reconciler.manifest.problems import Problem


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@manifest_option(required=False)
@allow_env_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="text: one problem a line (file:line:column: path: message), warnings on stderr; "
    "json: a list of objects, each with a severity (error or warning) and, for a finding of a "
    "built-in check, its rule; sarif: SARIF 2.1.0 for code-scanning annotations.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 1) on warnings too: values the platform accepts but that are likely mistakes.",
)
@quiet_color_option
@report_errors
def validate(
    paths: tuple[str, ...], files: tuple[str, ...], output_format: str, strict: bool
) -> None:
    """Check manifests offline: YAML, the JSON Schema and every rule of the platform.

    Manifests are given with -f or as arguments (`reconciler validate a.yaml b.yaml`, as
    pre-commit passes them); all are validated together, so projects merge across them.
    Exit 0 when valid, 1 listing every problem with its file, line and column.
    Warnings (values the platform accepts but that are likely mistakes) are listed too
    and do not fail the check unless --strict is given.
    Makes no network call and needs no API key.
    """
    from reconciler.checks.overrides import overrides
    from reconciler.checks.static import static_findings
    from reconciler.manifest.validate import ManifestInvalid
    from reconciler.pipeline import load_manifest

    if not paths and not files:
        raise click.UsageError("give the manifests to check: -f PATH (repeatable) or PATH...")
    try:
        manifest = load_manifest(files + paths)
    except ManifestInvalid as invalid:
        _report(invalid.problems, invalid.warnings, (), (), output_format, strict=strict)
        raise SystemExit(1) from None
    findings = static_findings(manifest)
    turned_down = overrides(manifest.checks)
    _report((), manifest.warnings, findings, turned_down, output_format, strict=strict)
    warned = manifest.warnings or any(f.severity == "warning" and not f.waiver for f in findings)
    if any(f.fails for f in findings) or (strict and warned):
        raise SystemExit(1)
    if output_format == "text":
        echo(_summary(manifest))


def _report(
    errors: Sequence[Problem],
    warnings: Sequence[Problem],
    findings: Sequence[Finding],
    turned_down: Sequence[Override],
    output_format: str,
    *,
    strict: bool,
) -> None:
    """Errors on stdout, then warnings, waived findings and the checks the manifests turn off
    or down on stderr (text); or one JSON list of all; or a SARIF log. A finding of a built-in
    check reads as the error or warning it is, with its rule id; an override is a note."""
    if output_format == "sarif":
        from reconciler.checks.sarif import render_sarif

        echo(render_sarif(findings, (*errors, *warnings), turned_down), nl=False)
        return
    if output_format == "json":
        # One list, as before, so existing readers keep working: errors first, each item
        # with a `severity`; a manifest with neither is still `[]`.
        failing = [f for f in findings if f.fails]
        rest = [f for f in findings if not f.fails]
        items = [
            *(p.to_json() for p in errors),
            *(f.to_json() for f in failing),
            *(p.to_json() for p in warnings),
            *(f.to_json() for f in rest),
            *({"severity": "note", **o.to_json()} for o in turned_down),
        ]
        echo(json.dumps(items, indent=2))
        return
    from reconciler.checks.findings import to_problem
    from reconciler.escaping import clean

    errors = sorted([*errors, *(to_problem(f) for f in findings if f.fails)])
    warnings = sorted(
        [*warnings, *(to_problem(f) for f in findings if not f.fails and f.waiver is None)]
    )
    for problem in errors:
        echo(str(problem))
    echo_warnings(warnings)
    echo_waived(findings)
    for override in turned_down:
        # the path too is the manifest's text
        echo(clean(str(override.diagnostic)), err=True)
    count = _count_line(errors, warnings, strict=strict)
    if count:
        echo(count, err=True)


def echo_waived(findings: Sequence[Finding]) -> None:
    """Each waived finding on stderr as a note with the waiver's reason: a waiver is a decision
    a reviewer should keep seeing."""
    for finding in findings:
        if finding.waiver is not None:
            echo(str(finding), err=True)


def echo_warnings(warnings: Sequence[Problem]) -> None:
    """Each warning on stderr, `warning: file:line:column: path: message` (plan and apply
    print them too, before the plan, so stdout stays the plan or its JSON)."""
    for warning in warnings:
        echo(str(warning), err=True)


def _count_line(errors: Sequence[Problem], warnings: Sequence[Problem], *, strict: bool) -> str:
    found = []
    if errors:
        found.append(_plural(len(errors), "problem"))
    if warnings:
        found.append(_plural(len(warnings), "warning"))
    if not found:
        return ""
    line = " and ".join(found) + " found"
    if errors:
        return line + "."
    if strict:
        return line + "; --strict fails on warnings."
    return line + "; the manifest is valid (--strict would fail on warnings)."


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _summary(manifest: Manifest) -> str:
    from reconciler.manifest.model import listed

    apps = sum(len(listed(p.apps)) for p in manifest.projects)
    envs = sum(len(a.environments) for p in manifest.projects for a in listed(p.apps))
    return (
        f"Valid: {_plural(len(manifest.sources), 'file')}, "
        f"{_plural(len(manifest.projects), 'project')}, {_plural(apps, 'app')}, "
        f"{_plural(envs, 'managed environment')}."
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
@quiet_color_option
@report_errors
def schema(output_format: str) -> None:
    """Print the manifest JSON Schema (Draft 2020-12), for editors and other tools."""
    from reconciler.manifest.schema import manifest_schema, schema_text

    if output_format == "markdown":
        from reconciler.manifest.reference import reference_markdown

        echo(reference_markdown(manifest_schema()), nl=False)
        return
    echo(schema_text(), nl=False)
