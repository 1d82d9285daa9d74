"""The CI examples and the pre-commit hook: parsed, installing reconciler by its distribution
name, and every reconciler command they run exists with flags the CLI accepts. (The GitHub
Action and its workflows: test_github_action.py.)"""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import threading
import tomllib
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
import yaml

import reconciler
from reconciler.cli import main
from tests.ci.scripts import (
    ACTION,
    DRIFT,
    GITHUB,
    GITLAB,
    HOOKS,
    MARKER,
    MATRIX,
    ROOT,
    check_accepted,
    check_all_accepted,
    gitlab_scripts,
    load,
    reconciler_invocations,
)

# --- the command extraction itself --------------------------------------------


def test_invocations_are_found_in_pipelines_redirections_and_conditionals() -> None:
    script = (
        'reconciler validate -f "$MANIFESTS" 2>&1 | tee validate.txt\n'
        "if true; then reconciler plan -f x --format markdown > plan.md 2> plan.err; fi\n"
        'pip install "reconciler==1"\n'
        "echo reconciler apply\n"
    )
    assert reconciler_invocations(script) == [
        ["validate", "-f", "platform/"],
        ["plan", "-f", "x", "--format", "markdown"],
    ]


def test_a_misspelt_flag_would_be_caught() -> None:
    with pytest.raises(AssertionError, match="refused"):
        check_accepted(["validate", "-f", "x", "--formatt", "json"])


# --- installing reconciler ----------------------------------------------------

DISTRIBUTION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
# `pip install reconciler` (bare, or pinned): that PyPI name is an unrelated project.
PYPI_NAME_TAKEN = re.compile(r"pip install[^\n]*(?<![@/\w-])reconciler(==[^\s\"']*)?[\"']?(\s|$)")
INSTALLS = re.compile(r"pip install[^\n]*")
DOCUMENTS = [ROOT / "README.md", ACTION, GITHUB, DRIFT, MATRIX, GITLAB, HOOKS]


def test_an_unrelated_reconciler_on_pypi_would_be_caught() -> None:
    assert PYPI_NAME_TAKEN.search('pip install "reconciler==0.1.0"\n')
    assert PYPI_NAME_TAKEN.search("pip install --quiet reconciler\n")
    assert not PYPI_NAME_TAKEN.search('pip install "reconciler-cli==0.1.0"\n')
    assert not PYPI_NAME_TAKEN.search("pip install reconciler-cli\n")


def test_the_distribution_is_reconciler_cli() -> None:
    """`reconciler` on PyPI is another project (a pandas helper without this CLI); this one is
    published as reconciler-cli, while the import package and the command stay `reconciler`."""
    assert DISTRIBUTION == "reconciler-cli"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_install_by_name_names_the_distribution(path: Path) -> None:
    text = path.read_text()
    assert not PYPI_NAME_TAKEN.search(text), f"{path.name} installs the unrelated `reconciler`"
    for install in INSTALLS.findall(text):
        by_name = re.search(r"(?<![\w./-])reconciler[\w-]*", install)
        if by_name:
            assert by_name.group(0) == DISTRIBUTION, install


def test_gitlab_installs_the_tag_of_this_version_from_git() -> None:
    pipeline = load(GITLAB)
    assert pipeline["variables"]["RECONCILER_VERSION"] == f"v{reconciler.__version__}"
    installs = [line for line in pipeline["default"]["before_script"] if "pip install" in line]
    assert installs == [
        'pip install --quiet "reconciler-cli @ git+https://github.com/acme/reconciler@'
        '$RECONCILER_VERSION"'
    ]


# reconciler-cli is not on any package index yet (publishing is a release step,
# docs/development.md#releasing): an install of it by name alone would fail.
def from_an_index(text: str) -> list[str]:
    """The `pip install` lines that name reconciler-cli without saying where it comes from (a
    git URL, `name @ URL`)."""
    return [
        install
        for install in INSTALLS.findall(text)
        if re.search(r"reconciler-cli(?![\w-])(?!\s*@)", install)
    ]


def test_an_install_from_an_index_would_be_caught() -> None:
    assert from_an_index("pip install reconciler-cli\n")
    assert from_an_index('pip install --quiet "reconciler-cli==0.1.0"\n')
    assert not from_an_index(
        'pip install "reconciler-cli @ git+https://github.com/acme/reconciler@v1"\n'
    )
    assert not from_an_index("pip install .\n")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_nothing_installs_reconciler_from_a_package_index(path: Path) -> None:
    assert not from_an_index(path.read_text()), f"{path.name} installs from an index"


# --- GitLab CI ----------------------------------------------------------------


def test_gitlab_jobs_rules_and_commands() -> None:
    pipeline = load(GITLAB)
    assert pipeline["stages"] == ["plan", "apply"]
    plan, apply = pipeline["plan"], pipeline["apply"]
    assert plan["rules"][0]["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
    assert plan["variables"]["RECONCILER_API_KEY"] == "$RECONCILER_PLAN_API_KEY"
    assert apply["variables"]["RECONCILER_API_KEY"] == "$RECONCILER_APPLY_API_KEY"
    assert plan["variables"]["RECONCILER_FINGERPRINT_KEY"] == ""  # presence only in MRs
    assert apply["resource_group"]
    commands = [argv for line in gitlab_scripts() for argv in reconciler_invocations(line)]
    assert [argv[0] for argv in commands] == ["validate", "plan", "validate", "apply"]
    assert "--auto-approve" in commands[-1]
    check_all_accepted(commands)


def rule_holds(expression: str, variables: dict[str, str]) -> bool:
    """A GitLab `rules:if` of the forms the example uses (`$A == $B`, `$A == "x"`, `&&`, `||`,
    parentheses) evaluated for `variables`; an unset variable is null, as in GitLab."""
    python = re.sub(r"\$([A-Z_]+)", r"v.get('\1')", expression)
    python = python.replace("&&", " and ").replace("||", " or ")
    return bool(eval(python, {}, {"v": variables}))  # the example's own text, not input


def jobs_run(source: str, branch: str | None) -> set[str]:
    """The jobs of the example pipeline a pipeline of `source` on `branch` runs (rules only:
    `changes:` holds for every source but pushes and merge requests, so it is left out)."""
    pipeline = load(GITLAB)
    variables = {"CI_PIPELINE_SOURCE": source, "CI_DEFAULT_BRANCH": "main"}
    if branch is not None:
        variables["CI_COMMIT_BRANCH"] = branch
    if not any(rule_holds(r["if"], variables) for r in pipeline["workflow"]["rules"]):
        return set()
    return {
        name
        for name in ("plan", "apply")
        if any(rule_holds(r["if"], variables) for r in pipeline[name]["rules"])
    }


@pytest.mark.parametrize(
    ("source", "branch", "jobs"),
    [
        ("merge_request_event", None, {"plan"}),
        ("push", "main", {"apply"}),  # the merge
        ("web", "main", {"apply"}),  # run by hand, with RECONCILER_REVIEWED
        ("schedule", "main", set()),  # a schedule applies nothing nobody reviewed
        ("trigger", "main", set()),
        ("push", "feature", set()),
    ],
)
def test_gitlab_applies_on_the_merge_or_by_hand_only(
    source: str, branch: str | None, jobs: set[str]
) -> None:
    assert jobs_run(source, branch) == jobs


def test_gitlab_note_is_found_by_marker_and_updated_in_place() -> None:
    script = "\n".join(load(GITLAB)["plan"]["script"])
    assert MARKER in script
    assert "merge_requests/" in script and "/notes" in script
    assert '"PUT"' in script and '"POST"' in script and "X-Next-Page" in script
    assert "RECONCILER_GITLAB_TOKEN" in script


def test_gitlab_note_script_is_valid_python() -> None:
    script = "\n".join(load(GITLAB)["plan"]["script"])
    body = script.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
    compile(body, "gitlab-note.py", "exec")


# --- pre-commit ---------------------------------------------------------------


def hooks() -> dict[str, dict[str, Any]]:
    return {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text())}


def test_pre_commit_hook_definitions() -> None:
    hook = hooks()["reconciler-validate"]
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True and hook["require_serial"] is True
    directory = hooks()["reconciler-validate-dir"]
    assert directory["pass_filenames"] is False
    check_accepted(shlex.split(directory["entry"])[1:] + directory["args"])


MANIFESTS = ["platform/shop.yaml", "platform/teams/web.yml"]
NOT_MANIFESTS = [
    ".github/workflows/reconciler.yml",
    ".github/dependabot.yml",
    ".gitlab-ci.yml",
    "docker-compose.yml",
    "compose.yaml",
    "deploy/docker-compose.prod.yaml",
    ".pre-commit-config.yaml",
    "charts/web/values.yaml",
    "docs/platform/example.yaml",  # `platform/` deeper down is not the manifests directory
    "platform/README.md",
]


def selected(hook: dict[str, Any], path: str) -> bool:
    """pre-commit's file selection: `files` searched in the path, `exclude` (default `^$`) not."""
    return bool(re.search(hook.get("files", ""), path)) and not re.search(
        hook.get("exclude", "^$"), path
    )


@pytest.mark.parametrize("hook_id", ["reconciler-validate", "reconciler-validate-dir"])
def test_pre_commit_hooks_select_manifests_only(hook_id: str) -> None:
    hook = hooks()[hook_id]
    assert [p for p in MANIFESTS if not selected(hook, p)] == []
    assert [p for p in NOT_MANIFESTS if selected(hook, p)] == []


def test_directory_hook_validates_the_directory_its_files_pattern_selects() -> None:
    hook = hooks()["reconciler-validate-dir"]
    directory = hook["args"][hook["args"].index("-f") + 1]
    assert selected(hook, f"{directory}shop.yaml") and directory == "platform/"


def run_hook(entry: str, files: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run an entry the way pre-commit does: split it, append the file names."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [*shlex.split(entry), *files], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_pre_commit_entry_takes_file_names_as_arguments() -> None:
    entry = shlex.split(hooks()["reconciler-validate"]["entry"])
    assert entry == ["reconciler", "validate"]
    command = main.get_command(click.Context(main), "validate")
    assert command is not None
    paths = next(p for p in command.params if p.name == "paths")
    assert paths.nargs == -1


VALID = "version: 1\nprojects:\n  shop:\n    name: Shop\n"
INVALID = "version: 1\nprojects:\n  Shop!:\n    name: Shop\n"


def test_pre_commit_entry_validates_real_files(tmp_path: Path) -> None:
    if importlib.util.find_spec("reconciler.manifest.validate") is None:
        pytest.skip("the manifest loader is not in this checkout yet")
    (tmp_path / "a.yaml").write_text(VALID)
    (tmp_path / "b.yaml").write_text(VALID.replace("shop", "blog"))
    (tmp_path / "bad.yaml").write_text(INVALID)
    entry = hooks()["reconciler-validate"]["entry"]
    assert run_hook(entry, ["a.yaml", "b.yaml"], tmp_path).returncode == 0
    failed = run_hook(entry, ["a.yaml", "bad.yaml"], tmp_path)
    assert failed.returncode == 1
    assert "bad.yaml:3:" in failed.stdout + failed.stderr


# --- keys -----------------------------------------------------------------------


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_read_only_key_permissions_are_exactly_the_read_operations(path: Path) -> None:
    from reconciler.platform.operations import OPERATIONS, permission

    reads = {permission(op, None) for op in OPERATIONS.values() if not op.is_write}
    named = set(re.findall(r"\b(?:project|app|environment)\.\*\.\w+", path.read_text()))
    assert named == reads
    assert all(".read_" in p for p in named)


ME = {"id": 5}  # the user of the job's token
SOMEONE = {"id": 6}


class FakeGitLab(http.server.BaseHTTPRequestHandler):
    """Merge-request notes API: two pages of notes, the marked one of the token's user on the
    second (the first holds someone else's note that starts with the marker too)."""

    pages: ClassVar[dict[str, list[dict[str, Any]]]] = {
        "1": [
            {"id": 1, "body": "looks good", "author": SOMEONE},
            {"id": 2, "body": f"{MARKER}\nforged", "author": SOMEONE},
        ],
        "2": [
            {"id": 9, "body": f"{MARKER}\nold plan", "author": ME},
            {"id": 10, "body": "later", "author": SOMEONE},
        ],
    }
    seen: ClassVar[list[tuple[str, str, str | None, Any]]] = []
    with_marker: ClassVar[bool] = True

    def _reply(self, data: Any, next_page: str = "") -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Next-Page", next_page)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, self.headers["PRIVATE-TOKEN"], None))
        if self.path == "/api/v4/user":
            self._reply(ME)
            return
        page = re.search(r"[?&]page=(\d+)", self.path).group(1)
        notes = self.pages.get(page, []) if self.with_marker else self.pages["1"]
        self._reply(notes, "2" if page == "1" and self.with_marker else "")

    def _write(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.command, self.path, self.headers["PRIVATE-TOKEN"], body))
        self._reply({"id": 11})

    do_PUT = do_POST = _write

    def log_message(self, *args: Any) -> None:
        pass


def run_gitlab_python(
    handler: type[http.server.BaseHTTPRequestHandler],
    job: str,
    env: dict[str, str],
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """The Python heredoc of a job of the GitLab example, run against `handler` on loopback as
    the GitLab API."""
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        script = "\n".join(load(GITLAB)[job]["script"])
        body = script.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
        api = {
            "CI_API_V4_URL": f"http://127.0.0.1:{server.server_port}/api/v4",
            "CI_PROJECT_ID": "42",
            "RECONCILER_GITLAB_TOKEN": "glpat-test",
        }
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(body)],
            cwd=cwd,
            env={**os.environ, **api, **env},
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        server.shutdown()
        server.server_close()


def run_note_script(tmp_path: Path, *, with_marker: bool) -> list[tuple[str, str, str | None, Any]]:
    FakeGitLab.with_marker = with_marker
    FakeGitLab.seen = []
    (tmp_path / "comment.md").write_text(f"{MARKER}\nnew plan")
    done = run_gitlab_python(FakeGitLab, "plan", {"CI_MERGE_REQUEST_IID": "7"}, tmp_path)
    assert done.returncode == 0, done.stderr
    return FakeGitLab.seen


def test_gitlab_note_script_edits_the_marked_note_found_on_a_later_page(tmp_path: Path) -> None:
    seen = run_note_script(tmp_path, with_marker=True)
    notes = "/api/v4/projects/42/merge_requests/7/notes"
    assert [(method, path.split("?")[0]) for method, path, _, _ in seen] == [
        ("GET", "/api/v4/user"),
        ("GET", notes),
        ("GET", notes),
        ("PUT", f"{notes}/9"),
    ]
    assert all(token == "glpat-test" for _, _, token, _ in seen)
    assert seen[-1][3] == {"body": f"{MARKER}\nnew plan"}


def test_gitlab_note_script_creates_the_first_note(tmp_path: Path) -> None:
    seen = run_note_script(tmp_path, with_marker=False)
    assert [method for method, *_ in seen] == ["GET", "GET", "POST"]
    assert seen[-1][1] == "/api/v4/projects/42/merge_requests/7/notes"


MERGE_SHA = "f" * 40
MR_HEAD = "a" * 40
REVIEWED = "calls:v1:presence:" + "1" * 64


def _digest_note(author: dict[str, int], digest: str, head: str) -> dict[str, Any]:
    return {
        "author": author,
        "body": f"{MARKER}\n<!-- reconciler-calls-digest: {digest} head={head} -->\n### plan",
    }


class FakeMergedRequest(http.server.BaseHTTPRequestHandler):
    """The GitLab API the apply job reads: the merge request merged as MERGE_SHA, its notes."""

    notes: ClassVar[list[dict[str, Any]]] = []

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        answers: dict[str, Any] = {
            "/api/v4/user": ME,
            f"/api/v4/projects/42/repository/commits/{MERGE_SHA}/merge_requests": [
                {"iid": 7, "state": "merged", "merge_commit_sha": MERGE_SHA, "sha": MR_HEAD}
            ],
            "/api/v4/projects/42/merge_requests/7/notes": self.notes,
        }
        payload = json.dumps(answers[path]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def find_reviewed_on_gitlab(notes: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    FakeMergedRequest.notes = notes
    return run_gitlab_python(FakeMergedRequest, "apply", {"CI_COMMIT_SHA": MERGE_SHA})


def test_gitlab_apply_takes_the_digest_of_its_own_note_for_the_last_commit() -> None:
    forged = "calls:v1:presence:" + "2" * 64
    notes = [
        _digest_note(SOMEONE, forged, MR_HEAD),  # anyone can write a note: not ours
        _digest_note(ME, "calls:v1:presence:" + "3" * 64, "b" * 40),  # an earlier push
        _digest_note(ME, REVIEWED, MR_HEAD),
    ]
    found = find_reviewed_on_gitlab(notes)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == REVIEWED


def test_gitlab_apply_without_a_reviewed_note_stops() -> None:
    found = find_reviewed_on_gitlab([_digest_note(SOMEONE, REVIEWED, MR_HEAD)])
    assert found.returncode == 1 and found.stdout == ""
    assert "has no plan note for its last commit" in found.stderr
