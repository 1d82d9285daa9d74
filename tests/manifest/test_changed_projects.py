"""`reconciler projects [--changed-since REF]` on a real git repository with two commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.cli import main

SHOP = "  shop:\n    apps:\n      web:\n        oci: {image: nginx:1.27}\n" + (
    "        environments:\n          production:\n            runtime: {vCpus: 1}\n"
)
BLOG = "  blog:\n    name: Blog\n"
DOCS = "  docs:\n    name: Docs\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )


def manifest(*projects: str, header: str = "") -> str:
    return "version: 1\n" + header + "projects:\n" + "".join(projects)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose first commit has platform/a.yaml (shop, blog) and b.yaml (docs)."""
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform" / "a.yaml").write_text(manifest(SHOP, BLOG))
    (tmp_path / "platform" / "b.yaml").write_text(manifest(DOCS))
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "first")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def commit(repo: Path, files: dict[str, str | None]) -> None:
    for name, text in files.items():
        path = repo / "platform" / name
        if text is None:
            path.unlink()
        else:
            path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "second")


def projects(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["projects", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


def test_lists_every_project_with_its_file_for_a_matrix(repo: Path) -> None:
    code, out, _ = projects("-f", "platform/", "--format", "json")
    assert code == 0
    assert json.loads(out) == [
        {"project": "shop", "file": "platform/a.yaml"},
        {"project": "blog", "file": "platform/a.yaml"},
        {"project": "docs", "file": "platform/b.yaml"},
    ]
    assert projects("-f", "platform/")[1] == "shop\nblog\ndocs\n"


def test_changed_since_judges_the_merged_model_not_the_files(repo: Path) -> None:
    """shop changes, blog moves to another file re-indented (unchanged), news is new, docs'
    file is rewritten with the same meaning (1 written as 1.0 elsewhere is the same number)."""
    moved_blog = "  blog: {name: Blog}\n"
    commit(
        repo,
        {
            "a.yaml": manifest(SHOP.replace("vCpus: 1", "vCpus: 2")),
            "c.yaml": manifest(moved_blog, "  news:\n    name: News\n"),
            "b.yaml": "# the docs project\n" + manifest(DOCS),
        },
    )
    code, out, err = projects("-f", "platform/", "--changed-since", "HEAD~1", "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out) == [
        {"project": "shop", "file": "platform/a.yaml"},
        {"project": "news", "file": "platform/c.yaml"},
    ]
    assert projects("-f", "platform/", "--changed-since", "HEAD")[1] == ""


def test_a_number_written_differently_is_no_change(repo: Path) -> None:
    commit(repo, {"a.yaml": manifest(SHOP.replace("vCpus: 1", "vCpus: 1.0"), BLOG)})
    assert projects("-f", "platform/", "--changed-since", "HEAD~1")[1] == ""


def test_a_workspace_wide_block_changes_every_project(repo: Path) -> None:
    commit(repo, {"b.yaml": manifest(DOCS, header="checks: {query-logging: error}\n")})
    assert projects("-f", "platform/", "--changed-since", "HEAD~1")[1] == "shop\nblog\ndocs\n"


def test_a_waiver_changes_only_its_project(repo: Path) -> None:
    waived = DOCS + '    checks: {production-healthcheck: {"off": true, reason: no app}}\n'
    commit(repo, {"b.yaml": manifest(waived)})
    assert projects("-f", "platform/", "--changed-since", "HEAD~1")[1] == "docs\n"


def test_manifests_the_ref_did_not_have_make_every_project_new(repo: Path) -> None:
    (repo / "other").mkdir()
    (repo / "other" / "x.yaml").write_text(manifest(DOCS.replace("docs", "xdocs")))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "other")
    assert projects("-f", "other/", "--changed-since", "HEAD~1")[1] == "xdocs\n"


def test_a_ref_that_does_not_exist_is_a_clear_error(repo: Path) -> None:
    code, out, err = projects("-f", "platform/", "--changed-since", "origin/nope")
    assert code == 1 and out == ""
    assert "git ref 'origin/nope' does not exist" in err and "fetch-depth: 0" in err
    assert "Traceback" not in err


def test_an_option_looking_ref_is_refused(repo: Path) -> None:
    code, _, err = projects("-f", "platform/", "--changed-since=--output=/tmp/x")
    assert code == 1 and "is not a git ref" in err


def test_outside_a_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(manifest(DOCS))
    code, _, err = projects("-f", str(path), "--changed-since", "HEAD")
    assert code == 1 and "is not in a git repository" in err


def test_a_manifest_outside_the_repository_is_a_clear_error(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "x.yaml"
    outside.write_text(manifest(DOCS.replace("docs", "xdocs")))
    code, _, err = projects("-f", "platform/", "-f", str(outside), "--changed-since", "HEAD")
    assert code == 1 and "is outside the git repository" in err


TLS_SHOP = SHOP + "            variables: {TLS_KEY: {fromFile: tls.key}}\n"
TLS_BLOG = BLOG + (
    "    apps:\n      site:\n        oci: {image: nginx:1.27}\n"
    "        environments:\n          preview:\n            variables:\n"
    "              TLS_KEY: {fromFile: tls.key}\n              OTHER: {fromFile: other.key}\n"
)


@pytest.fixture
def secret_repo(repo: Path) -> Path:
    """shop and blog read platform/tls.key, blog also other.key (absent); docs reads none."""
    (repo / "platform" / "tls.key").write_text("first key\n")
    commit(repo, {"a.yaml": manifest(TLS_SHOP, TLS_BLOG)})
    return repo


def changed_since_previous() -> str:
    return projects("-f", "platform/", "--changed-since", "HEAD~1")[1]


def test_a_changed_from_file_changes_every_project_that_reads_it(secret_repo: Path) -> None:
    (secret_repo / "platform" / "tls.key").write_text("second key\n")
    commit(secret_repo, {})
    assert changed_since_previous() == "shop\nblog\n"


def test_a_removed_or_added_from_file_is_a_change(secret_repo: Path) -> None:
    (secret_repo / "platform" / "tls.key").unlink()
    commit(secret_repo, {})
    assert changed_since_previous() == "shop\nblog\n"
    (secret_repo / "platform" / "other.key").write_text("now there\n")
    commit(secret_repo, {})
    assert changed_since_previous() == "blog\n"


def test_an_unchanged_from_file_changes_nothing(secret_repo: Path) -> None:
    commit(secret_repo, {"b.yaml": manifest(DOCS.replace("Docs", "Docs site"))})
    assert changed_since_previous() == "docs\n"


def test_the_work_tree_is_compared_not_only_commits(secret_repo: Path) -> None:
    """The manifests are read from the work tree; so are the files they read."""
    (secret_repo / "platform" / "tls.key").write_text("edited, not committed\n")
    assert projects("-f", "platform/", "--changed-since", "HEAD")[1] == "shop\nblog\n"


TEMPLATES = """version: 1
templates:
  web:
    params:
      replicas: {type: integer, default: 2}
    runtime: {port: 8080}
    regions: [{name: fra, replicas: {min: "${replicas}", max: 4}}]
  unused: {runtime: {port: 9000}}
"""
USES_WEB = "  {slug}:\n    apps:\n      site:\n        oci: {{image: nginx:1.27}}\n        extends: [web]\n"


@pytest.fixture
def template_repo(repo: Path) -> Path:
    """shop and docs use the template `web` of platform/t.yaml; blog uses none."""
    commit(
        repo,
        {
            "t.yaml": TEMPLATES,
            "a.yaml": manifest(USES_WEB.format(slug="shop"), BLOG),
            "b.yaml": manifest(USES_WEB.format(slug="docs")),
        },
    )
    return repo


def test_a_template_change_lists_every_project_it_reaches(template_repo: Path) -> None:
    commit(template_repo, {"t.yaml": TEMPLATES.replace("port: 8080", "port: 8081")})
    assert changed_since_previous() == "shop\ndocs\n"


def test_a_parameter_default_changes_the_projects_that_use_it(template_repo: Path) -> None:
    commit(template_repo, {"t.yaml": TEMPLATES.replace("default: 2", "default: 3")})
    assert changed_since_previous() == "shop\ndocs\n"
    passing = USES_WEB.format(slug="docs").replace(
        "[web]", "[{template: web, params: {replicas: 3}}]"
    )
    commit(template_repo, {"b.yaml": manifest(passing)})
    assert changed_since_previous() == ""  # the same value, now given by the use


def test_a_template_nobody_uses_changes_nothing(template_repo: Path) -> None:
    commit(template_repo, {"t.yaml": TEMPLATES.replace("port: 9000", "port: 9001")})
    assert changed_since_previous() == ""


def test_workspace_app_defaults_change_every_project_with_apps(template_repo: Path) -> None:
    commit(template_repo, {"t.yaml": TEMPLATES + "appDefaults: {variables: {COMPANY: acme}}\n"})
    assert changed_since_previous() == "shop\ndocs\n"
