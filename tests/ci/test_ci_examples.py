"""The CI examples and the pre-commit hook: parsed, and every reconciler command they run
exists with flags the CLI accepts."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
import yaml

from reconciler.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "examples" / "ci" / "github-actions.yml"
GITLAB = ROOT / "examples" / "ci" / "gitlab-ci.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
MARKER = "<!-- reconciler-plan -->"
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "&", "(", ")", "2>", "2>&1"}
# Values the workflows give these shell variables (DEPLOY_FLAG: its non-empty form).
SHELL_VARIABLES = {"MANIFESTS": "platform/", "DEPLOY_FLAG": "--deploy"}


def load(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # `on:` stays a string key


def github_scripts() -> list[str]:
    workflow = load(GITHUB)
    return [
        step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step
    ]


def gitlab_scripts() -> list[str]:
    pipeline = load(GITLAB)
    return [
        line
        for job in pipeline.values()
        if isinstance(job, dict) and "script" in job
        for line in job["script"]
    ]


def reconciler_invocations(script: str) -> list[list[str]]:
    """Each `reconciler ...` command of a shell script, as argv after `reconciler`."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # heredoc bodies (python) are not shell
            continue
        for start, token in enumerate(tokens):
            if token != "reconciler" or (
                start and tokens[start - 1] not in SHELL_OPERATORS | {"then", "do"}
            ):
                continue
            argv = []
            for arg in tokens[start + 1 :]:
                if arg in SHELL_OPERATORS or arg.startswith((">", "2>")):
                    break
                argv.append(arg)
            if argv and argv[-1].isdigit():  # `2>` split as `2` and `>`
                argv.pop()
            found.append([_expand(arg) for arg in argv])
    return found


def _expand(arg: str) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: SHELL_VARIABLES.get(m.group(1), m.group(0)), arg)


def check_all_accepted(commands: list[list[str]]) -> None:
    """Check every command whose module exists; skip (naming them) the ones still missing."""
    missing = []
    for argv in commands:
        assert argv[0] in COMMANDS, f"`reconciler {argv[0]}` is not a command"
        if importlib.util.find_spec(COMMANDS[argv[0]].split(":")[0]) is None:
            missing.append(argv[0])
        else:
            check_accepted(argv)
    if missing:
        pytest.skip(f"not in this checkout yet: {', '.join(sorted(set(missing)))}")


def check_accepted(argv: list[str]) -> None:
    name, args = argv[0], argv[1:]
    command = main.get_command(click.Context(main), name)
    assert command is not None
    try:
        command.make_context(f"reconciler {name}", list(args))
    except click.UsageError as error:
        raise AssertionError(f"`reconciler {' '.join(argv)}` is refused: {error}") from None


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

PYPI_NAME_TAKEN = re.compile(r"pip install[^\n]*(?<![@/\w-])reconciler(==[^\s\"']*)?[\"']?(\s|$)")


def test_an_unrelated_reconciler_on_pypi_would_be_caught() -> None:
    assert PYPI_NAME_TAKEN.search('pip install "reconciler==0.1.0"\n')
    assert PYPI_NAME_TAKEN.search("pip install --quiet reconciler\n")
    assert not PYPI_NAME_TAKEN.search('pip install "$RECONCILER_PACKAGE"\n')


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_reconciler_is_installed_from_its_source_never_by_name_from_pypi(path: Path) -> None:
    """`reconciler` on PyPI is another project (a pandas/Wikidata helper without this CLI):
    the examples must install this one, by a direct reference to a tagged source archive."""
    commands = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
    assert not PYPI_NAME_TAKEN.search("\n".join(commands))
    document = load(path)
    variables = document.get("env") or document.get("variables")
    package = variables["RECONCILER_PACKAGE"]
    name, _, url = (part.strip() for part in package.partition("@"))
    project = re.search(r'^name = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert project and name == project.group(1)
    assert re.fullmatch(r"https://\S+/v\d+\.\d+\.\d+[\w./-]*\.tar\.gz", url), url
    installs = [line for line in commands if "pip install" in line]
    assert installs and all('"$RECONCILER_PACKAGE"' in line for line in installs)


# --- GitHub Actions -----------------------------------------------------------


def test_github_triggers_and_jobs() -> None:
    workflow = load(GITHUB)
    assert set(workflow["on"]) == {"pull_request", "push", "workflow_dispatch"}
    assert workflow["on"]["push"]["branches"] == ["main"]
    assert workflow["on"]["workflow_dispatch"]["inputs"]["deploy"]["type"] == "boolean"
    assert workflow["permissions"] == {}
    plan, apply = workflow["jobs"]["plan"], workflow["jobs"]["apply"]
    assert "pull_request" in plan["if"]
    assert "refs/heads/main" in apply["if"] and "push" in apply["if"]
    assert plan["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert apply["permissions"] == {"contents": "read"}
    assert apply["concurrency"]["cancel-in-progress"] == "false"


def test_github_runs_validate_plan_markdown_and_apply_auto_approve() -> None:
    commands = [argv for script in github_scripts() for argv in reconciler_invocations(script)]
    names = [argv[0] for argv in commands]
    assert names.count("validate") == 2 and names.count("plan") == 1 and names.count("apply") == 1
    plan = next(argv for argv in commands if argv[0] == "plan")
    assert plan[plan.index("--format") + 1] == "markdown" and "--out" in plan
    apply = next(argv for argv in commands if argv[0] == "apply")
    assert "--auto-approve" in apply and "--deploy" in apply
    check_all_accepted(commands)


def test_github_plan_keeps_the_whole_plan_in_the_log_and_the_saved_plan() -> None:
    steps = load(GITHUB)["jobs"]["plan"]["steps"]
    plan = next(s for s in steps if s.get("id") == "plan")
    assert "|| status=$?" in plan["run"] and 'exit "$status"' in plan["run"]
    assert "cat plan.md" in plan["run"]
    artifact = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert artifact["with"]["path"] == "plan.json"


def test_github_keys_come_from_secrets_read_only_for_plans() -> None:
    workflow = load(GITHUB)
    assert workflow["env"]["RECONCILER_BASE_URL"] == "${{ vars.RECONCILER_BASE_URL }}"
    steps = {
        job: {step.get("id", step.get("name")): step for step in spec["steps"]}
        for job, spec in workflow["jobs"].items()
    }
    plan_env = steps["plan"]["plan"]["env"]
    apply_env = steps["apply"]["Apply"]["env"]
    assert plan_env["RECONCILER_API_KEY"] == "${{ secrets.RECONCILER_PLAN_API_KEY }}"
    assert apply_env["RECONCILER_API_KEY"] == "${{ secrets.RECONCILER_APPLY_API_KEY }}"
    assert "inputs.deploy" in apply_env["DEPLOY_FLAG"]
    # pull-request code sees the read-only key and nothing else secret
    assert re.findall(r"secrets\.\w+", yaml.safe_dump(workflow["jobs"]["plan"])) == [
        "secrets.RECONCILER_PLAN_API_KEY"
    ]
    assert "secrets.RECONCILER_FINGERPRINT_KEY" in apply_env["RECONCILER_FINGERPRINT_KEY"]


def test_github_comment_is_found_by_marker_and_updated_in_place() -> None:
    workflow = load(GITHUB)
    steps = workflow["jobs"]["plan"]["steps"]
    comment = next(s for s in steps if s.get("uses", "").startswith("actions/github-script@"))
    script = comment["with"]["script"]
    assert MARKER in script
    assert "updateComment" in script and "createComment" in script
    assert "github.paginate" in script  # a PR with more than one page of comments
    assert "65535" in script and "lastIndexOf('\\n<details>'" in script  # cut at a whole change
    writer = next(s for s in steps if s.get("name") == "Write the comment")
    assert f"echo '{MARKER}'" in writer["run"]
    assert comment["if"] == "always()" and writer["if"] == "always()"
    failing = steps[-1]
    assert failing["run"] == "exit 1" and "steps.validate.outcome" in failing["if"]


# --- GitLab CI ----------------------------------------------------------------


def test_gitlab_jobs_rules_and_commands() -> None:
    pipeline = load(GITLAB)
    assert pipeline["stages"] == ["plan", "apply"]
    plan, apply = pipeline["plan"], pipeline["apply"]
    assert plan["rules"][0]["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
    assert apply["rules"][0]["if"] == "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"
    assert plan["variables"]["RECONCILER_API_KEY"] == "$RECONCILER_PLAN_API_KEY"
    assert apply["variables"]["RECONCILER_API_KEY"] == "$RECONCILER_APPLY_API_KEY"
    assert plan["variables"]["RECONCILER_FINGERPRINT_KEY"] == ""  # presence only in MRs
    assert apply["resource_group"]
    commands = [argv for line in gitlab_scripts() for argv in reconciler_invocations(line)]
    assert [argv[0] for argv in commands] == ["validate", "plan", "validate", "apply"]
    assert "--auto-approve" in commands[-1]
    check_all_accepted(commands)


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
    assert re.search(hook["files"], "platform/shop.yaml") and re.search(hook["files"], "a.yml")
    assert not re.search(hook["files"], "README.md")
    directory = hooks()["reconciler-validate-dir"]
    assert directory["pass_filenames"] is False
    check_accepted(shlex.split(directory["entry"])[1:] + directory["args"])


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

    reads = {permission(name, None) for name, op in OPERATIONS.items() if not op.is_write}
    named = set(re.findall(r"\b(?:project|app|environment)\.\*\.\w+", path.read_text()))
    assert named == reads
    assert all(".read_" in p for p in named)


HARNESS = """
const script = process.argv[1];
const input = JSON.parse(process.argv[2]);
const calls = [];
const github = {
  paginate: async (fn, args) => { calls.push(['list', args]); return input.comments; },
  rest: { issues: {
    listComments: 'listComments',
    updateComment: async (args) => calls.push(['update', args]),
    createComment: async (args) => calls.push(['create', args]),
  } },
};
const context = { repo: { owner: 'acme', repo: 'platform' }, issue: { number: 7 } };
const fakeRequire = (name) => name === 'fs' ? { readFileSync: () => input.body } : require(name);
const run = new Function('github', 'context', 'require', `return (async () => { ${script} })();`);
run(github, context, fakeRequire).then(() => console.log(JSON.stringify(calls)));
"""


def run_comment_script(body: str, comments: list[dict[str, Any]]) -> list[Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    steps = load(GITHUB)["jobs"]["plan"]["steps"]
    script = next(s for s in steps if s.get("uses", "").startswith("actions/github-script@"))
    payload = json.dumps({"body": body, "comments": comments})
    result = subprocess.run(
        [node, "-e", HARNESS, "--", script["with"]["script"], payload],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(result.stdout)


def test_comment_script_updates_the_marked_comment_in_place() -> None:
    comments = [
        {"id": 1, "user": {"type": "User"}, "body": f"quoting {MARKER}"},
        {"id": 2, "user": {"type": "Bot"}, "body": "another bot"},
        {"id": 3, "user": {"type": "Bot"}, "body": f"{MARKER}\nold plan"},
    ]
    calls = run_comment_script(f"{MARKER}\nnew plan", comments)
    assert calls[-1] == [
        "update",
        {"owner": "acme", "repo": "platform", "comment_id": 3, "body": f"{MARKER}\nnew plan"},
    ]
    assert not any(call[0] == "create" for call in calls)


def test_comment_script_creates_the_first_comment_and_cuts_oversized_ones() -> None:
    calls = run_comment_script(f"{MARKER}\nfirst", [])
    assert calls[-1] == [
        "create",
        {"owner": "acme", "repo": "platform", "issue_number": 7, "body": f"{MARKER}\nfirst"},
    ]
    change = "\n<details><summary>change</summary>\n\n```diff\n+ x\n```\n\n</details>"
    huge = MARKER + "\n**Plan:** many changes." + change * 1200
    assert len(huge) > 65535
    body = run_comment_script(huge, [])[-1][1]["body"]
    assert len(body) < 65535
    assert body.startswith(MARKER) and "whole plan is in the job log" in body
    assert body.split("\n\n_Shortened")[0].endswith("</details>")  # cut between changes


class FakeGitLab(http.server.BaseHTTPRequestHandler):
    """Merge-request notes API: two pages of notes, the marked one on the second."""

    pages: ClassVar[dict[str, list[dict[str, Any]]]] = {
        "1": [{"id": 1, "body": "looks good"}],
        "2": [{"id": 9, "body": f"{MARKER}\nold plan"}, {"id": 10, "body": "later"}],
    }
    seen: ClassVar[list[tuple[str, str, str | None, Any]]] = []

    def _reply(self, data: Any, next_page: str = "") -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Next-Page", next_page)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        page = re.search(r"[?&]page=(\d+)", self.path).group(1)
        self.seen.append(("GET", self.path, self.headers["PRIVATE-TOKEN"], None))
        notes = self.pages.get(page, []) if self.server.with_marker else self.pages["1"]
        self._reply(notes, "2" if page == "1" and self.server.with_marker else "")

    def _write(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.command, self.path, self.headers["PRIVATE-TOKEN"], body))
        self._reply({"id": 11})

    do_PUT = do_POST = _write

    def log_message(self, *args: Any) -> None:
        pass


def run_note_script(tmp_path: Path, *, with_marker: bool) -> list[tuple[str, str, str | None, Any]]:
    server = http.server.HTTPServer(("127.0.0.1", 0), FakeGitLab)
    server.with_marker = with_marker
    FakeGitLab.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        script = "\n".join(load(GITLAB)["plan"]["script"])
        body = script.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
        (tmp_path / "comment.md").write_text(f"{MARKER}\nnew plan")
        env = {
            **os.environ,
            "CI_API_V4_URL": f"http://127.0.0.1:{server.server_port}/api/v4",
            "CI_PROJECT_ID": "42",
            "CI_MERGE_REQUEST_IID": "7",
            "RECONCILER_GITLAB_TOKEN": "glpat-test",
        }
        subprocess.run(
            [sys.executable, "-c", textwrap.dedent(body)],
            cwd=tmp_path,
            env=env,
            check=True,
            timeout=30,
        )
    finally:
        server.shutdown()
        server.server_close()
    return FakeGitLab.seen


def test_gitlab_note_script_edits_the_marked_note_found_on_a_later_page(tmp_path: Path) -> None:
    seen = run_note_script(tmp_path, with_marker=True)
    notes = "/api/v4/projects/42/merge_requests/7/notes"
    assert [(method, path.split("?")[0]) for method, path, _, _ in seen] == [
        ("GET", notes),
        ("GET", notes),
        ("PUT", f"{notes}/9"),
    ]
    assert all(token == "glpat-test" for _, _, token, _ in seen)
    assert seen[-1][3] == {"body": f"{MARKER}\nnew plan"}


def test_gitlab_note_script_creates_the_first_note(tmp_path: Path) -> None:
    seen = run_note_script(tmp_path, with_marker=False)
    assert [method for method, *_ in seen] == ["GET", "POST"]
    assert seen[-1][1] == "/api/v4/projects/42/merge_requests/7/notes"
