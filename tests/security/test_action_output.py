"""What the GitHub Action echoes and posts cannot be forged by text a manifest wrote.

Before: the action printed reconciler's output into the job log as it was, and the runner read
a line such as `::add-mask::destroy` or `::notice title=Security review::Approved` (a file name
or a key of the pull request's manifests) as a workflow command; the failure comment put that
output between fences of three backticks, which a line of backticks in it closed, so what
followed rendered as Markdown (a forged plan summary, a team mention, an image).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ci.test_github_action import LOCAL, LocalRunner

FORGED = (
    "```\n"
    "**Plan:** 0 to add, 0 to change, 0 to destroy.\n"
    "@acme/platform-team ![ok](https://example.com/approved.png)\n"
    "::add-mask::destroy\n"
    "  ::notice title=Security review::Approved\n"
    "````\n"
)


def _hostile(directory: Path, status: int) -> Path:
    """A directory holding a `reconciler` that prints the forged text on both streams for
    every command and exits with `status` (what reconciler itself no longer prints: this
    checks the action's own defences, whatever the tool says)."""
    directory.mkdir()
    (directory / "forged.txt").write_text(FORGED)
    script = directory / "reconciler"
    script.write_text(
        f'#!/bin/sh\ncat "{directory}/forged.txt"; cat "{directory}/forged.txt" >&2\n'
        f"exit {status}\n"
    )
    script.chmod(0o755)
    return directory


def commands_run(log: str) -> list[str]:
    """The workflow commands a GitHub runner would execute reading `log`: every line that
    starts (after spaces) with `::`, but those between `::stop-commands::TOKEN` and `::TOKEN::`."""
    executed, stopped = [], None
    for line in log.splitlines():
        line = line.lstrip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        found = re.match(r"::stop-commands::(.+)$", line)
        if found:
            stopped = found.group(1)
        elif line.startswith("::"):
            executed.append(line)
    return executed


@pytest.mark.parametrize(("command", "status"), [("validate", 0), ("plan", 2), ("apply", 0)])
def test_nothing_reconciler_prints_is_run_as_a_workflow_command(
    workspace: Path, tmp_path: Path, command: str, status: int
) -> None:
    fake = _hostile(tmp_path / "bin", status)
    runner = LocalRunner(workspace, {**LOCAL, "command": command}, reconciler=fake)
    result = runner.run("Run reconciler")
    assert result.returncode == 0, result.stderr
    assert "::add-mask::destroy" in result.stdout  # the job log keeps the output...
    assert commands_run(result.stdout) == []  # ...which the runner does not execute


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_the_failure_comment_fences_the_output_with_a_longer_fence(
    workspace: Path, tmp_path: Path, command: str
) -> None:
    fake = _hostile(tmp_path / "bin", 1)
    runner = LocalRunner(
        workspace, {**LOCAL, "command": command, "comment": "true"}, reconciler=fake
    )
    runner.run("Run reconciler")
    assert runner.run("Write the comment").returncode == 0
    comment = runner.file("comment.md")
    lines = comment.splitlines()
    opening = next(i for i, line in enumerate(lines) if line.startswith("```"))
    fence = lines[opening]
    assert set(fence) == {"`"} and len(fence) == 5  # longer than the four of the output
    closes = re.compile(rf"^ {{0,3}}`{{{len(fence)},}}\s*$")  # CommonMark's closing fence
    closing = next(i for i in range(opening + 1, len(lines)) if closes.match(lines[i]))
    inside = lines[opening + 1 : closing]
    assert "**Plan:** 0 to add, 0 to change, 0 to destroy." in inside
    assert "```" in inside and "````" in inside  # the output's own fences, inside the block
    assert lines[closing] == fence and closing == len(lines) - 1


def test_the_workflow_restricts_what_manifests_read_through_allow_env(workspace: Path) -> None:
    manifest = workspace / "platform" / "quickstart.yaml"
    text = manifest.read_text()
    assert "LOG_LEVEL: info" in text
    manifest.write_text(text.replace("LOG_LEVEL: info", "LOG_LEVEL: {fromEnv: CI_JOB_TOKEN}"))
    inputs = {**LOCAL, "command": "plan", "allow-env": "SHOP_*\nBOOKS_*", "comment": "true"}
    runner = LocalRunner(workspace, inputs)
    runner.run("Run reconciler")
    assert runner.outputs["exit-code"] == "1" and runner.outputs["validated"] == "false"
    runner.run("Write the comment")
    assert "CI_JOB_TOKEN is not one of the environment variables" in runner.file("comment.md")
    assert "(--allow-env: SHOP_*, BOOKS_*)" in runner.file("comment.md")
