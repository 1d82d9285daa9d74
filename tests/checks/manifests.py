"""Manifests for the checks' tests: one app whose production environment each test fills in."""

from __future__ import annotations

import textwrap
from pathlib import Path

from reconciler.checks.findings import Finding
from reconciler.checks.static import static_findings
from reconciler.manifest.validate import load_manifest


def manifest_text(
    *,
    checks: str = "",
    production: str = "runtime: {port: 8080}",
    preview: str = "",
    app: str = "",
    project: str = "",
    image: str = "ghcr.io/acme/web:1.4.2",
    app_protection: str = "true",
) -> str:
    """A valid manifest; each argument is YAML for its block, written at its own indentation."""

    def block(text: str, indent: int) -> str:
        return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * indent) + "\n"

    text = "version: 1\n"
    if checks:
        text += "checks:\n" + block(checks, 2)
    text += "projects:\n  shop:\n    deleteProtection: true\n"
    if project:
        text += block(project, 4)
    text += f"    apps:\n      web:\n        deleteProtection: {app_protection}\n"
    text += f'        oci: {{image: "{image}"}}\n'
    if app:
        text += block(app, 8)
    text += "        environments:\n          production:\n" + block(production, 12)
    if preview:
        text += "          preview:\n" + block(preview, 12)
    return text


def findings_of(path: Path) -> list[Finding]:
    return static_findings(load_manifest([path]))


def rules_found(path: Path) -> list[str]:
    return [finding.rule for finding in findings_of(path)]
