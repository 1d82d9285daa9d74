"""The action, the workflows and the GitLab pipeline validate against the schemas GitHub and
GitLab publish, as vendored by check-jsonschema (`--builtin-schema vendor.*`: no network)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci.scripts import ACTION, DRIFT, GITHUB, GITLAB, MATRIX

CHECKS = [
    (ACTION, "vendor.github-actions"),
    (GITHUB, "vendor.github-workflows"),
    (DRIFT, "vendor.github-workflows"),
    (MATRIX, "vendor.github-workflows"),
    # every job says how long it may run (a stuck apply must not hold the lock for 6 hours)
    (GITHUB, "custom.github-workflows-require-timeout"),
    (DRIFT, "custom.github-workflows-require-timeout"),
    (MATRIX, "custom.github-workflows-require-timeout"),
    (GITLAB, "vendor.gitlab-ci"),
]


def check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("path", "schema"), CHECKS, ids=lambda v: getattr(v, "name", v))
def test_ci_file_validates_against_its_published_schema(path: Path, schema: str) -> None:
    result = check_jsonschema(schema, path)
    assert result.returncode == 0, result.stdout + result.stderr


BROKEN = {
    "vendor.github-actions": "name: x\ndescription: y\nruns:\n  using: composite\n",
    "vendor.github-workflows": (
        "on: push\njobs:\n  a:\n    runs_on: ubuntu-latest\n    steps: [{run: 'true'}]\n"
    ),
    "custom.github-workflows-require-timeout": (
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps: [{run: 'true'}]\n"
    ),
    "vendor.gitlab-ci": "job:\n  stage: test\n  scripts: [echo]\n",
}


@pytest.mark.parametrize("schema", sorted(BROKEN))
def test_a_broken_file_would_be_refused(schema: str, tmp_path: Path) -> None:
    """The checks above can fail: each schema refuses a file with one mistake (a composite
    action without steps, `runs_on`, a job without a timeout, `scripts`)."""
    path = tmp_path / "broken.yml"
    path.write_text(BROKEN[schema])
    result = check_jsonschema(schema, path)
    assert result.returncode == 1, result.stdout
    assert "broken.yml" in result.stdout + result.stderr
