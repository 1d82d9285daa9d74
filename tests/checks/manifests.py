"""Manifests for the checks' tests: one app whose production environment each test fills in."""

from __future__ import annotations

import textwrap
from pathlib import Path

from reconciler.checks.findings import Finding
from reconciler.checks.static import static_findings
from reconciler.manifest.validate import load_manifest

HEALTHCHECK = "healthcheck: {method: GET, path: /healthz}"


def manifest_text(
    *,
    checks: str = "",
    production: str | None = None,
    preview: str = "",
    app: str = "",
    project: str = "",
    image: str = "ghcr.io/acme/web:1.4.2",
    app_protection: str = "true",
    healthcheck: bool = True,
) -> str:
    """A valid manifest; each argument is YAML for its block, written at its own indentation.

    Production gets a health check (the rule warns by default), on the block's last line so that
    no position before it moves, unless `production` writes a runtime of its own or
    `healthcheck` is false."""

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
    if production is None:
        production = "runtime: {port: 8080" + (f", {HEALTHCHECK}}}" if healthcheck else "}")
    elif healthcheck and "runtime" not in production:
        production += f"\nruntime: {{{HEALTHCHECK}}}"
    text += "        environments:\n          production:\n" + block(production, 12)
    if preview:
        text += "          preview:\n" + block(preview, 12)
    return text


def findings_of(path: Path) -> list[Finding]:
    return static_findings(load_manifest([path]))


def rules_found(path: Path) -> list[str]:
    return [finding.rule for finding in findings_of(path)]
