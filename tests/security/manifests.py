"""The manifest the security tests attack: one app, `shop/web`, whose production environment
holds the variables each test gives."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.cli import shop_manifest, write_manifest


def web_production(directory: Path, variables: list[str]) -> Path:
    """Write the manifest of shop/web with these `variables` lines in production (in a git
    work tree: `directory` holds a `.git`, the repository `fromFile` stays in)."""
    (directory / ".git").mkdir(exist_ok=True)
    return write_manifest(
        directory,
        shop_manifest(
            "web:\n"
            "  oci: {image: 'nginx:1.27'}\n"
            "  environments:\n"
            "    production:\n"
            "      runtime: {healthcheck: {method: GET, path: /healthz}}\n"
            "      variables:\n" + "".join(f"        {line}\n" for line in variables)
        ),
    )
