"""Live states the platform accepts but the manifest rules once refused: export, then plan.

The invariant: for any live state, `export` then `plan` reports no changes. Each state
below is built through the platform API (as the dashboard or a script would), exported,
and planned; `validate` accepts the export and shows the warning at the exported value.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import Seed

SECRET = "sentinel-secret-value-5d2f"


@dataclass(frozen=True)
class LiveState:
    """One odd live state: what to write, where its value lands in the export, the warning."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    policies: list[dict[str, Any]] = field(default_factory=list)
    variables: list[dict[str, Any]] = field(default_factory=list)
    image: str = "ghcr.io/acme/web:1.4.2"
    written: str = ""
    """Text of the exported line that holds the value ..."""
    value_offset: int = 0
    """... and how far into that text the value starts (the warning's column)."""
    fragment: str = ""


def regions(low: int, high: int) -> dict[str, Any]:
    return {"regions": [{"name": "fra", "replicas": {"min": low, "max": high}}]}


def firewall(condition: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"name": "p", "enabled": True, "match": [condition], "firewall": {"action": "ACTION_DENY"}}
    ]


STATES = [
    LiveState(
        "replicas-min-over-max",
        settings=regions(5, 2),
        written="min: 5",
        value_offset=len("min: "),
        fragment="replicas.min 5 is greater than replicas.max 2",
    ),
    LiveState(
        "replicas-max-zero",
        settings=regions(0, 0),
        written="max: 0",
        value_offset=len("max: "),
        fragment="replicas.max 0 runs no instance in this region",
    ),
    LiveState(
        "remote-ip-host-bits",
        policies=firewall({"remoteIp": {"in": ["10.0.0.1/8"]}}),
        written="10.0.0.1/8",
        fragment="'10.0.0.1/8' has host bits set; the range is written '10.0.0.0/8'",
    ),
    LiveState(
        "method-lower-case",
        policies=firewall({"method": {"methods": ["get"]}}),
        written="[get]",
        value_offset=1,
        fragment="methods are upper case: write 'GET'",
    ),
    LiveState(
        "image-with-url-scheme",
        image="https://ghcr.io/acme/web:1.4.2",
        written="https://ghcr.io/acme/web:1.4.2",
        value_offset=-1,  # the value starts at its opening quote
        fragment="the image reference has a URL scheme ('https://')",
    ),
    LiveState(
        "writeonly-description-over-232",
        variables=[
            {"key": "TOKEN", "value": SECRET, "kind": "writeonly", "description": "d" * 250}
        ],
        written="d" * 250,
        fragment="should have at most 232 characters (it has 250)",
    ),
]


def build(seed: Seed, state: LiveState) -> None:
    """shop/web with the odd value in production (preview keeps the platform's defaults)."""
    seed.project("shop", "Shop")
    seed.app("shop", "web", name="Web", oci={"image": state.image})
    if state.settings:
        seed.settings("shop", "web", "production", **state.settings)
    if state.policies:
        seed.policies("shop", "web", "production", state.policies)
    if state.variables:
        seed.variables("shop", "web", "production", state.variables)


def position_of(text: str, written: str, value_offset: int) -> tuple[int, int]:
    """1-based line and column of the value inside the first line holding `written`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if written in line:
            return number, line.index(written) + value_offset + 1
    raise AssertionError(f"{written!r} is not in the export:\n{text}")


def warning_lines(stderr: str) -> list[str]:
    """The manifest's warnings; not the finding of the built-in rule production-healthcheck,
    which every exported production environment here has (none has a health check live)."""
    return [
        line
        for line in stderr.splitlines()
        if line.startswith("warning: ") and "[production-healthcheck]" not in line
    ]


@pytest.mark.parametrize("state", STATES, ids=[s.name for s in STATES])
def test_export_then_plan_reports_no_changes_and_validate_warns_at_the_value(
    state: LiveState, seed: Seed, cli, tmp_path: Path
) -> None:
    build(seed, state)
    exported = tmp_path / "out.yaml"
    result = cli("export", "-o", str(exported))
    assert result.exit_code == 0, result.output

    planned = cli("plan", "-f", str(exported), "--detailed-exitcode")
    assert planned.exit_code == 0, planned.output
    assert "No changes. Live state matches the manifest." in planned.stdout

    line, column = position_of(exported.read_text(), state.written, state.value_offset)
    expected = re.compile(rf"warning: {re.escape(str(exported))}:{line}:{column}: \S+: (.*)$")
    for output in (planned.stderr, cli("validate", "-f", str(exported)).stderr):
        (warning,) = warning_lines(output)  # once, at the exported value
        found = expected.match(warning)
        assert found and state.fragment in found.group(1), warning

    checked = cli("validate", "-f", str(exported))
    assert checked.exit_code == 0 and checked.stdout.startswith("Valid: 1 file")
    assert cli("validate", "--strict", "-f", str(exported)).exit_code == 1
    for output in (result.output, planned.output, checked.output):
        assert SECRET not in output


def test_every_odd_state_at_once_through_plan_json_saved_plans_and_apply(
    seed: Seed, cli, tmp_path: Path
) -> None:
    """All of them in one workspace: the warnings go to stderr once per command, the JSON
    forms carry them as notes, and apply has nothing to do."""
    seed.project("shop", "Shop")
    for index, state in enumerate(STATES):
        slug = f"app-{index}"
        seed.app("shop", slug, oci={"image": state.image})
        if state.settings:
            seed.settings("shop", slug, "production", **state.settings)
        if state.policies:
            seed.policies("shop", slug, "production", state.policies)
        if state.variables:
            seed.variables("shop", slug, "production", state.variables)
    exported = tmp_path / "out.yaml"
    assert cli("export", "-o", str(exported)).exit_code == 0

    as_json = cli("plan", "-f", str(exported), "--format", "json", "--out", str(tmp_path / "p"))
    assert as_json.exit_code == 0, as_json.output
    document = json.loads(as_json.stdout)
    assert document["changes"] == []
    notes = [n for n in document["notes"] if n["message"].startswith(f"{exported}:")]
    assert len(notes) == len(STATES) == len(warning_lines(as_json.stderr))
    assert {n["severity"] for n in notes} == {"warning"}
    for state in STATES:
        assert any(state.fragment in n["message"] for n in notes), state.name
    saved = json.loads((tmp_path / "p").read_text())
    assert [n for n in saved["notes"] if n in notes] == notes

    text = cli("plan", "-f", str(exported))
    assert text.exit_code == 0, text.output
    for state in STATES:  # stderr said it; the text plan does not repeat it
        assert state.fragment not in text.stdout, state.name
    assert len(warning_lines(text.stderr)) == len(STATES)

    # A pull-request comment is all a reviewer sees: the markdown plan carries the warnings.
    markdown = cli("plan", "-f", str(exported), "--format", "markdown")
    assert markdown.exit_code == 0, markdown.output
    for state in STATES:
        assert state.fragment in html.unescape(markdown.stdout), state.name

    status = cli("status", "-f", str(exported), "--format", "json")
    assert status.exit_code == 0, status.output
    assert len(warning_lines(status.stderr)) == len(STATES)
    json.loads(status.stdout)  # stdout stays the JSON document

    applied = cli("apply", "-f", str(exported), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert "Apply complete! Resources: 0 added, 0 changed, 0 destroyed." in applied.stdout
    assert len(warning_lines(applied.stderr)) == len(STATES)
    from_saved = cli("apply", str(tmp_path / "p"))
    assert from_saved.exit_code == 0, from_saved.output
    assert len(warning_lines(from_saved.stderr)) == len(STATES)
    for output in (as_json.output, text.output, markdown.output, applied.output, from_saved.output):
        assert SECRET not in output
