"""The GitHub examples' built-in checks job (SARIF upload) and the per-project matrix."""

from __future__ import annotations

import json
import shlex
from typing import Any

from tests.ci.scripts import (
    ACTION,
    GITHUB,
    MATRIX,
    check_all_accepted,
    load,
    reconciler_invocations,
)


def _run_lines(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_the_checks_job_uploads_the_sarif_that_validate_writes() -> None:
    job = load(GITHUB)["jobs"]["checks"]
    assert "pull_request" in job["if"]
    assert job["permissions"] == {"contents": "read", "security-events": "write"}
    [command] = [line for line in _run_lines(job) if line.startswith("reconciler ")]
    words = shlex.split(command)
    assert words[words.index("--format") + 1] == "sarif"
    written = words[words.index(">") + 1]
    check_all_accepted(reconciler_invocations(command))
    upload = next(
        s
        for s in job["steps"]
        if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")
    )
    assert upload["with"]["sarif_file"] == written
    assert upload["if"].startswith("always()"), "an error finding must still be annotated"


def test_the_matrix_plans_each_changed_project_alone() -> None:
    workflow = load(MATRIX)
    assert set(workflow["on"]) == {"pull_request"} and workflow["permissions"] == {}
    projects, plan = workflow["jobs"]["projects"], workflow["jobs"]["plan"]
    checkout = projects["steps"][0]
    assert (
        checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == "0"
    )
    [line] = [line for line in _run_lines(projects) if "reconciler projects" in line]
    commands = reconciler_invocations(line.split("$(", 1)[1])
    check_all_accepted(commands)
    [argv] = commands
    assert argv[argv.index("--format") + 1] == "json" and "--changed-since" in argv
    assert projects["outputs"]["matrix"] == "${{ steps.list.outputs.matrix }}"
    assert plan["needs"] == "projects" and "!= '[]'" in plan["if"]
    assert plan["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.projects.outputs.matrix) }}"
    step = next(s for s in plan["steps"] if s.get("uses", "").startswith("acme/reconciler@"))
    assert step["with"]["command"] == "plan"
    assert set(step["with"]) <= set(load(ACTION)["inputs"])
    assert {"plan-file", "text-file"} == {
        name
        for name in load(ACTION)["outputs"]
        if f"steps.plan.outputs.{name}" in MATRIX.read_text()
    }
    assert step["with"]["args"] == "--target project.${{ matrix.project }}"
    assert plan["permissions"] == {"contents": "read"}


def test_the_matrix_entries_are_what_projects_prints() -> None:
    """GitHub makes one job per object of `include`, with its keys as `matrix.<key>`."""
    from click.testing import CliRunner

    from reconciler.cli import main
    from tests.ci.scripts import ROOT

    result = CliRunner().invoke(
        main, ["projects", "-f", str(ROOT / "examples" / "company"), "--format", "json"]
    )
    entries = json.loads(result.stdout)
    assert entries and all(set(entry) == {"project", "file"} for entry in entries)
    assert "matrix.project" in MATRIX.read_text()
