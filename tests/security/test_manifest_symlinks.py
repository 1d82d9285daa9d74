"""Manifest files are read under the rules `fromFile` secrets are: only inside the repository.

Before: `-f platform/` followed a committed link `platform/env.yaml -> /proc/self/environ` or
`-> ../.git/config` (or any file of the runner), and the key names and positions of what it
read reached the output the action posts to the pull request.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.cli import CliResult

Cli = Callable[..., CliResult]

MANIFEST = "version: 1\nprojects:\n  shop:\n    name: Shop\n"
OUTSIDE = "SECRET_KEY_NAME_FROM_THE_RUNNER: 1\nANOTHER_PRIVATE_KEY: 2\n"


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout (the working directory, as in CI) with platform/shop.yaml, and a file of the
    runner outside it."""
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://x-access-token:ghs_TOKEN@github.com/acme/infra\n'
    )
    (repo / "platform").mkdir()
    (repo / "platform" / "shop.yaml").write_text(MANIFEST)
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "env.yaml").write_text(OUTSIDE)
    monkeypatch.chdir(repo)
    return repo


def _assert_refused(result: CliResult, link: str, why: str) -> None:
    assert result.exit_code == 1, result.output
    assert f"{link}: {why}" in result.output
    for read in ("SECRET_KEY_NAME", "ANOTHER_PRIVATE_KEY", "ghs_TOKEN", "origin", "url ="):
        assert read not in result.output


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_link_out_of_the_repository_is_refused_not_read(
    cli: Cli, repository: Path, command: str
) -> None:
    os.symlink(repository.parent / "runner" / "env.yaml", repository / "platform" / "env.yaml")
    result = cli(command, "-f", "platform/")
    _assert_refused(result, "platform/env.yaml", "leads outside the repository")


def test_a_link_to_the_real_proc_environ_is_refused(cli: Cli, repository: Path) -> None:
    os.symlink("/proc/self/environ", repository / "platform" / "env.yaml")
    _assert_refused(cli("validate", "-f", "platform/"), "platform/env.yaml", "leads outside")


def test_a_link_into_git_is_refused(cli: Cli, repository: Path) -> None:
    os.symlink("../.git/config", repository / "platform" / "git.yaml")
    result = cli("validate", "-f", "platform/")
    _assert_refused(result, "platform/git.yaml", "leads into .git/")


def test_a_linked_directory_or_file_given_with_f_is_refused(cli: Cli, repository: Path) -> None:
    os.symlink(repository.parent / "runner", repository / "elsewhere")
    _assert_refused(cli("validate", "-f", "elsewhere/"), "elsewhere/", "leads outside")
    _assert_refused(cli("validate", "-f", "elsewhere/env.yaml"), "elsewhere/env.yaml", "leads")


def test_a_link_that_stays_in_the_repository_is_read(cli: Cli, repository: Path) -> None:
    (repository / "common").mkdir()
    (repository / "common" / "blog.yaml").write_text(
        "version: 1\nprojects:\n  blog:\n    name: Blog\n"
    )
    os.symlink("../common/blog.yaml", repository / "platform" / "blog.yaml")
    result = cli("validate", "-f", "platform/")
    assert result.exit_code == 0, result.output
    assert "Valid: 2 files, 2 projects" in result.stdout
