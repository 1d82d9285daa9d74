"""`fromFile` reads only inside the manifests' repository, and only regular files.

A manifest arrives in a pull request from someone untrusted: `fromFile: /etc/passwd`,
`../../.aws/credentials`, a symbolic link committed into the repository, `.git/config`
(remote URLs may carry a token) or a fifo would make `plan`/`apply` read, and `apply` send,
whatever lies there. Each case is refused by `validate` (file:line:column, what is wrong,
how to fix it) and by the one function that reads a file secret, which plan, apply and
saved-plan apply all go through.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler.manifest.model import FromFile
from reconciler.manifest.secret_sources import from_file
from reconciler.manifest.validate import ManifestInvalid, Problem, load_manifest
from reconciler.plan import secrets
from reconciler.sensitive import Secret

LINE, COLUMN = 9, 35  # where `fromFile`'s value is written in `_manifest`


def _manifest(directory: Path, declared: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "platform.yaml"
    path.write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            variables:\n"
        f"              TLS_KEY: {{fromFile: '{declared}'}}\n",
        encoding="utf-8",
    )
    return path


def _repository(tmp_path: Path) -> Path:
    """A git work tree (a `.git` directory is all it takes) with a secret file inside."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[remote]\n url = https://token@host/x\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "tls.key").write_text("inside-the-repo")
    return repo


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "tls.key").write_text("outside-the-repo")
    return outside


def _problem(manifest: Path) -> Problem:
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([manifest])
    (problem,) = caught.value.problems
    assert (problem.file, problem.line, problem.column) == (str(manifest), LINE, COLUMN)
    assert problem.path.endswith("variables.TLS_KEY.fromFile")
    return problem


def _read_refused(manifest: Path, declared: str) -> str:
    """What the one reader of file secrets (plan, apply, saved-plan apply) says."""
    with pytest.raises(secrets.SecretUnavailable) as caught:
        secrets.resolve_secret(from_file(declared, manifest.parent))
    return caught.value.message


Layout = Callable[[Path], tuple[Path, str]]
"""Builds a repository under tmp_path; returns the manifest's directory and the `fromFile`."""


def _absolute(tmp_path: Path) -> tuple[Path, str]:
    return _repository(tmp_path), str(_outside(tmp_path) / "tls.key")


def _dot_dot(tmp_path: Path) -> tuple[Path, str]:
    _outside(tmp_path)
    return _repository(tmp_path), "../outside/tls.key"


def _file_symlink(tmp_path: Path) -> tuple[Path, str]:
    repo = _repository(tmp_path)
    (repo / "secrets" / "link.key").symlink_to(_outside(tmp_path) / "tls.key")
    return repo, "secrets/link.key"


def _directory_symlink(tmp_path: Path) -> tuple[Path, str]:
    repo = _repository(tmp_path)
    (repo / "shared").symlink_to(_outside(tmp_path), target_is_directory=True)
    return repo, "shared/tls.key"


def _device_symlink(tmp_path: Path) -> tuple[Path, str]:
    repo = _repository(tmp_path)
    (repo / "secrets" / "zero.key").symlink_to("/dev/zero")
    return repo, "secrets/zero.key"


ESCAPES: dict[str, tuple[Layout, str]] = {
    "absolute path": (_absolute, "is an absolute path"),
    "dot-dot": (_dot_dot, "is outside the repository"),
    "file symlink": (_file_symlink, "is outside the repository"),
    "directory symlink": (_directory_symlink, "is outside the repository"),
    "symlink to /dev/zero": (_device_symlink, "is outside the repository"),
}


@pytest.mark.parametrize(("layout", "expected"), ESCAPES.values(), ids=ESCAPES.keys())
def test_a_path_out_of_the_repository_is_refused(
    tmp_path: Path, layout: Layout, expected: str
) -> None:
    directory, declared = layout(tmp_path)
    manifest = _manifest(directory, declared)
    problem = _problem(manifest)
    assert expected in problem.message
    assert str(directory.resolve()) in problem.message  # names the repository it must stay in
    assert "relative to the manifest" in problem.message  # and how to fix it
    assert expected in _read_refused(manifest, declared)


@pytest.mark.parametrize(
    "declared", [".git/config", "secrets/../.git/config", "secrets/git-config.key"]
)
def test_nothing_under_dot_git_is_read(tmp_path: Path, declared: str) -> None:
    repo = _repository(tmp_path)
    (repo / "secrets" / "git-config.key").symlink_to(repo / ".git" / "config")
    manifest = _manifest(repo, declared)
    assert "is inside .git/" in _problem(manifest).message
    assert "is inside .git/" in _read_refused(manifest, declared)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    os.mkfifo(repo / "secrets" / "pipe.key")
    manifest = _manifest(repo, "secrets/pipe.key")
    outcome: dict[str, str] = {}

    def check() -> None:  # opening a fifo for reading blocks until someone writes to it
        outcome["validate"] = _problem(manifest).message
        outcome["read"] = _read_refused(manifest, "secrets/pipe.key")

    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "reading a fifo hung"
    assert "is not a regular file" in outcome["validate"]
    assert "is not a regular file" in outcome["read"]


def test_a_directory_is_refused(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    manifest = _manifest(repo, "secrets")
    assert "is not a regular file" in _problem(manifest).message
    assert "is not a regular file" in _read_refused(manifest, "secrets")


def test_a_manifest_in_a_subdirectory_reads_elsewhere_in_its_repository(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    manifest = _manifest(repo / "platform" / "shop", "../../secrets/tls.key")
    loaded = load_manifest([manifest])
    (variable,) = loaded.projects[0].apps[0].environments[0].variables  # type: ignore[misc]
    assert isinstance(variable.source, FromFile)
    assert variable.source.shown == "secrets/tls.key"  # as a reviewer finds it in the repo
    assert secrets.resolve_secret(variable.source) == Secret("inside-the-repo")


def test_a_symlink_that_stays_in_the_repository_is_followed(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    (repo / "current.key").symlink_to(repo / "secrets" / "tls.key")
    manifest = _manifest(repo, "current.key")
    loaded = load_manifest([manifest])
    (variable,) = loaded.projects[0].apps[0].environments[0].variables  # type: ignore[misc]
    assert secrets.resolve_secret(variable.source) == Secret("inside-the-repo")  # type: ignore[arg-type]


def test_a_git_file_marks_a_work_tree_too(tmp_path: Path) -> None:
    """`git worktree` and submodules put a `.git` file, not a directory, at the top."""
    repo = tmp_path / "worktree"
    (repo / "secrets").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    (repo / "secrets" / "tls.key").write_text("inside-the-work-tree")
    manifest = _manifest(repo / "platform", "../secrets/tls.key")
    load_manifest([manifest])
    assert secrets.resolve_secret(from_file("../secrets/tls.key", manifest.parent)) == Secret(
        "inside-the-work-tree"
    )
    refused = _manifest(repo / "other", "../.git")
    assert "is inside .git/" in _problem(refused).message


def test_without_a_repository_the_manifests_directory_is_the_limit(tmp_path: Path) -> None:
    home = tmp_path / "no-git"
    (home / "platform" / "secrets").mkdir(parents=True)
    (home / "platform" / "secrets" / "tls.key").write_text("beside-the-manifest")
    (home / "sibling.key").write_text("one-level-up")
    inside = _manifest(home / "platform", "secrets/tls.key")
    load_manifest([inside])
    assert secrets.resolve_secret(from_file("secrets/tls.key", inside.parent)) == Secret(
        "beside-the-manifest"
    )
    escaping = _manifest(home / "platform", "../sibling.key")
    problem = _problem(escaping)
    assert "is outside the manifest's directory" in problem.message
    assert "no git work tree holds it" in problem.message
    assert "is outside" in _read_refused(escaping, "../sibling.key")


def test_a_missing_file_is_no_problem_but_a_missing_escape_is(tmp_path: Path) -> None:
    """Secret files are kept out of git, so a pull request's plan runs without them (the value
    is known after apply); where a path points is checked all the same."""
    repo = _repository(tmp_path)
    missing = _manifest(repo, "secrets/not-checked-in.key")
    load_manifest([missing])
    assert secrets.resolve_secret(from_file("secrets/not-checked-in.key", repo)) is None
    escaping = _manifest(repo, "../elsewhere/not-there.key")
    assert "is outside the repository" in _problem(escaping).message
