"""Every example manifest, applied and then exported: the export plans no changes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reconciler.checks.static import static_findings
from reconciler.manifest.model import FromEnv
from reconciler.manifest.validate import load_manifest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "quickstart": ROOT / "examples" / "quickstart.yaml",
    "image-app": ROOT / "examples" / "image-app.yaml",
    "company": ROOT / "examples" / "company",
}


PINNED_ID = re.compile(r"^\s*id:\s*(?:proj|app)_\S+\s*(?:#.*)?\n", re.MULTILINE)


def unpinned_copy(path: Path, target: Path) -> Path:
    """The example without `id:` pins: pinned objects must already exist, and here nothing does."""
    target.mkdir()
    sources = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
    for source in sources:
        (target / source.name).write_text(PINNED_ID.sub("", source.read_text()))
    return target


def secret_env(path: Path) -> dict[str, str]:
    """A value for every `fromEnv` of the manifest, so apply can send it."""
    manifest = load_manifest([path])
    return {
        variable.source.name: f"example-{variable.key.lower()}"
        for project in manifest.projects
        for app in project.apps
        for env in app.environments
        for variable in (env.variables or ())
        if isinstance(variable.source, FromEnv)
    }


def waived_errors(path: Path) -> set[str]:
    """The rules whose error findings the example waives."""
    findings = static_findings(load_manifest([path]))
    return {f.rule for f in findings if f.severity == "error" and f.waiver is not None}


@pytest.mark.parametrize("templates", [(), ("--templates",)], ids=["plain", "templates"])
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_export_of_an_applied_example_plans_no_changes(
    name, templates, emulator, cli, tmp_path
) -> None:
    if not EXAMPLES[name].exists():
        pytest.skip(f"{EXAMPLES[name]} is not in this checkout")
    path = unpinned_copy(EXAMPLES[name], tmp_path / name)
    applied = cli("apply", "-f", str(path), "--auto-approve", env=secret_env(path))
    assert applied.exit_code == 0, applied.output

    out = tmp_path / "exported"
    exported = cli("export", "--out-dir", str(out), *templates)
    assert exported.exit_code == 0, exported.output
    planned = cli("plan", "-f", str(out), "--detailed-exitcode", "--format", "json")
    document = json.loads(planned.stdout)
    assert document["changes"] == [], planned.output
    # Waivers live in manifests only, so an error the example waives fails the exported one
    # (the platform holds no waiver to export); every other rule is satisfied alike.
    failing = {f["rule"] for f in document["findings"] if f["severity"] == "error"}
    assert failing == waived_errors(path)
    assert planned.exit_code == (1 if failing else 0), planned.output
    # and the example itself is still in sync: export read without writing anything
    assert cli("plan", "-f", str(path), "--detailed-exitcode", env=secret_env(path)).exit_code == 0
