"""The GitHub Action (action.yml) and the workflows that use it: inputs and outputs agree with
what the workflows pass and read, the commands exist with flags the CLI accepts, the shell
steps really run (against the local emulator, as GitHub runs them), and the github-script
steps (plan comment, drift issue) create, update and close what they should."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ci.scripts import (
    ACTION,
    DRIFT,
    GITHUB,
    MARKER,
    ROOT,
    action_scripts,
    check_accepted,
    check_all_accepted,
    load,
    reconciler_invocations,
)
from tests.fixtures.webhooks import WebhookReceiver

USES = "acme/reconciler@v1"
HEAD_SHA = "0123456789abcdef0123456789abcdef01234567"
WORKFLOWS = [GITHUB, DRIFT]
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action() -> dict[str, Any]:
    return load(ACTION)


def steps_using_the_action(path: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        (job_name, step)
        for job_name, job in load(path)["jobs"].items()
        for step in job["steps"]
        if step.get("uses") == USES
    ]


def step_named(name: str) -> dict[str, Any]:
    return next(s for s in action()["runs"]["steps"] if s.get("name") == name)


# --- the action's interface ------------------------------------------------------


def test_action_is_composite_with_the_documented_inputs_and_outputs() -> None:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    inputs = spec["inputs"]
    assert {"command", "manifests", "api-key", "base-url", "comment"} <= set(inputs)
    assert inputs["command"]["default"] == "plan" and inputs["comment"]["default"] == "false"
    assert set(spec["outputs"]) == {
        "exit-code",
        "has-changes",
        "plan-file",
        "markdown-file",
        "text-file",
        "calls-digest",
    }
    for name, output in spec["outputs"].items():
        assert output["value"] == f"${{{{ steps.run.outputs.{name} }}}}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_pass_only_inputs_the_action_declares(path: Path) -> None:
    declared = set(action()["inputs"])
    uses = steps_using_the_action(path)
    assert uses, f"{path.name} does not use the action"
    for _, step in uses:
        assert set(step.get("with", {})) <= declared, set(step["with"]) - declared
        assert step["with"]["command"] in ("validate", "plan", "apply")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_read_only_outputs_the_action_declares(path: Path) -> None:
    text = path.read_text()
    ids = {step["id"] for _, step in steps_using_the_action(path) if "id" in step}
    read = set(re.findall(r"steps\.(\w+)\.outputs\.([\w-]+)", text))
    assert read, f"{path.name} reads no output"
    assert {step for step, _ in read} <= ids
    assert {name for _, name in read} <= set(action()["outputs"])


def test_action_scripts_take_inputs_only_through_env() -> None:
    """`${{ inputs.x }}` spliced into a script would let a manifest path or an argument run
    shell; through `env:` it is only ever a value."""
    for script in action_scripts():
        assert "${{" not in script


def test_action_scripts_are_valid_bash() -> None:
    for script in action_scripts():
        subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_action_runs_validate_then_plan_markdown_or_apply_auto_approve() -> None:
    commands = [argv for script in action_scripts() for argv in reconciler_invocations(script)]
    assert [argv[0] for argv in commands] == ["validate", "plan", "show", "apply"]
    plan, show, apply = commands[1], commands[2], commands[3]
    assert plan[plan.index("--format") + 1] == "markdown"
    assert "--out" in plan and "--detailed-exitcode" in plan
    # a comment cut to fit GitHub's limit points to the run, whose log and artifact hold the
    # whole plan as text
    assert plan[plan.index("--full-plan-url") + 1] == "$RUN_URL"
    assert "--show-permissions" in show
    assert "--auto-approve" in apply
    check_all_accepted(commands)


def test_action_installs_the_reconciler_of_its_own_checkout() -> None:
    """No package index holds reconciler: the action installs the one of its own ref."""
    install = step_named("Install reconciler")
    assert '"$venv/bin/pip" install --quiet "$ACTION_PATH"' in install["run"]
    assert "reconciler-cli" not in install["run"] and "version" not in action()["inputs"]
    assert install["env"] == {"ACTION_PATH": "${{ github.action_path }}"}


# --- the example workflows ---------------------------------------------------------


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
    # reads the merged pull request's comment for the digest its review saw; writes nothing
    assert apply["permissions"] == {"contents": "read", "pull-requests": "read"}
    assert apply["concurrency"]["cancel-in-progress"] == "false"
    [(_, step)] = [s for s in steps_using_the_action(GITHUB) if s[1]["with"]["command"] == "apply"]
    assert step["with"]["reviewed"] == "${{ inputs.reviewed || 'auto' }}"


def test_github_plans_with_a_comment_and_applies_with_the_deploy_switch() -> None:
    steps = dict(steps_using_the_action(GITHUB))
    plan, apply = steps["plan"]["with"], steps["apply"]["with"]
    assert plan["command"] == "plan" and plan["comment"] == "true"
    assert apply["command"] == "apply" and "comment" not in apply
    assert "inputs.deploy" in apply["args"] and "'--deploy'" in apply["args"]
    assert plan["manifests"] == apply["manifests"] == "platform/"


def test_github_keeps_the_saved_plan_even_when_the_plan_fails() -> None:
    steps = load(GITHUB)["jobs"]["plan"]["steps"]
    artifact = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    # the saved plan, and the whole plan as text: where a comment cut to fit points
    assert artifact["with"]["path"].splitlines() == [
        "${{ steps.plan.outputs.plan-file }}",
        "${{ steps.plan.outputs.text-file }}",
    ]
    assert artifact["if"].startswith("always()")


def test_github_keys_come_from_secrets_read_only_for_plans() -> None:
    workflow = load(GITHUB)
    steps = dict(steps_using_the_action(GITHUB))
    assert steps["plan"]["with"]["api-key"] == "${{ secrets.RECONCILER_PLAN_API_KEY }}"
    assert steps["apply"]["with"]["api-key"] == "${{ secrets.RECONCILER_APPLY_API_KEY }}"
    assert "secrets.RECONCILER_FINGERPRINT_KEY" in steps["apply"]["with"]["fingerprint-key"]
    assert steps["plan"]["with"]["base-url"] == "${{ vars.RECONCILER_BASE_URL }}"
    # pull-request code sees the read-only key and nothing else secret
    assert re.findall(r"secrets\.\w+", yaml.safe_dump(workflow["jobs"]["plan"])) == [
        "secrets.RECONCILER_PLAN_API_KEY"
    ]


def test_drift_runs_on_a_schedule_and_may_only_touch_issues() -> None:
    workflow = load(DRIFT)
    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    assert workflow["permissions"] == {}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "issues": "write"}
    (_, plan), *_ = steps_using_the_action(DRIFT)
    assert plan["with"]["command"] == "plan" and "comment" not in plan["with"]


def test_drift_posts_to_slack_with_the_url_from_a_secret_in_the_environment() -> None:
    (_, plan), *_ = steps_using_the_action(DRIFT)
    # a URL is a credential: in the step's environment, never an input or a flag
    assert plan["env"] == {
        "RECONCILER_NOTIFY_SLACK_URL": "${{ secrets.RECONCILER_NOTIFY_SLACK_URL }}"
    }
    assert plan["with"]["args"] == "--notify"
    check_accepted(["plan", "-f", "platform/", "--detailed-exitcode", "--notify"])


def test_only_the_apply_job_of_the_main_workflow_notifies() -> None:
    steps = dict(steps_using_the_action(GITHUB))
    assert steps["apply"]["env"]["RECONCILER_NOTIFY_SLACK_URL"] == (
        "${{ secrets.RECONCILER_NOTIFY_SLACK_URL }}"
    )
    assert "--notify" not in yaml.safe_dump(load(GITHUB)["jobs"]["plan"])


# --- running the action's shell steps as GitHub does ------------------------------


class LocalRunner:
    """Runs the action's `run:` steps the way a GitHub runner does (`bash -eo pipefail`, the
    step's `env:` with its expressions evaluated, GITHUB_OUTPUT collected), with the
    reconciler of this checkout on PATH instead of the install step."""

    def __init__(
        self,
        workspace: Path,
        inputs: dict[str, str],
        *,
        reconciler: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """`reconciler`: a directory whose `reconciler` comes first on PATH (a stand-in).
        `env`: the `env:` of the workflow step that uses the action, which every step of a
        composite action sees (under the step's own `env:`)."""
        self.workspace = workspace
        self.caller_env = dict(env or {})
        self.path = [] if reconciler is None else [str(reconciler)]
        self.temp = workspace.parent / "runner-temp"
        self.temp.mkdir(exist_ok=True)
        declared = action()["inputs"]
        unknown = set(inputs) - set(declared)
        assert not unknown, unknown
        self.inputs = {name: spec.get("default", "") for name, spec in declared.items()}
        self.inputs.update(inputs)
        self.outputs: dict[str, str] = {}
        self.reviewed_digest = ""  # what the "Find the reviewed plan" step would output

    def evaluate(self, expression: str) -> str:
        if (
            expression
            == "inputs.reviewed == 'auto' && steps.reviewed.outputs.digest || inputs.reviewed"
        ):
            auto = self.inputs["reviewed"] == "auto"
            return (self.reviewed_digest if auto else "") or self.inputs["reviewed"]
        head, _, name = expression.rpartition(".")
        if head == "inputs":
            return self.inputs[name]
        if head == "steps.run.outputs":
            return self.outputs.get(name, "")
        known = {
            "github.action_path": str(ROOT),
            "github.event.pull_request.head.sha": HEAD_SHA,
            "github.base_ref": "",  # a push: no base branch to compare check overrides with
            "runner.temp": str(self.temp),
        }
        assert expression in known, f"the runner cannot evaluate {expression!r}"
        return known[expression]

    def run(self, name: str) -> subprocess.CompletedProcess[str]:
        step = step_named(name)
        output = self.temp / "github-output"
        output.write_text("")
        env = {
            "PATH": os.pathsep.join(
                [*self.path, str(Path(sys.executable).parent), os.environ["PATH"]]
            ),
            "HOME": os.environ.get("HOME", str(self.workspace)),
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_WORKSPACE": str(self.workspace),
            **self.caller_env,
        }
        for key, value in step.get("env", {}).items():
            env[key] = EXPRESSION.sub(lambda m: self.evaluate(m.group(1)), value)
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            self.outputs[key] = value
        return result

    def file(self, name: str) -> str:
        return (self.temp / "reconciler" / name).read_text()

    def runs(self, name: str) -> bool:
        """Whether the step's `if:` holds (the one form the action's own steps use on
        outputs: `steps.run.outputs.NAME == 'VALUE'` or `!=`)."""
        condition = step_named(name)["if"]
        match = re.fullmatch(r"steps\.run\.outputs\.([\w-]+) (==|!=) '([^']*)'", condition)
        assert match, f"the runner cannot evaluate {condition!r}"
        name, operator, value = match.groups()
        return (self.outputs.get(name, "") == value) == (operator == "==")


LOCAL = {"base-url": "local", "manifests": "platform/"}
FAIL = "Fail unless the command succeeded"


def test_plan_with_changes_sets_exit_code_2_and_has_changes(workspace: Path) -> None:
    runner = LocalRunner(workspace, {**LOCAL, "command": "plan"})
    result = runner.run("Run reconciler")
    assert result.returncode == 0, result.stderr
    assert runner.outputs["exit-code"] == "2" and runner.outputs["has-changes"] == "true"
    assert runner.outputs["validated"] == "true" and not runner.runs(FAIL)
    saved = json.loads(Path(runner.outputs["plan-file"]).read_text())
    assert saved["changes"]
    assert "bookshelf" in Path(runner.outputs["markdown-file"]).read_text()
    assert "bookshelf" in result.stdout  # the job log keeps the whole plan


def test_the_drift_step_posts_drift_to_the_channel(
    workspace: Path, webhooks: WebhookReceiver
) -> None:
    (_, step), *_ = steps_using_the_action(DRIFT)
    url = webhooks.url("/services/T0/B0/drift-secret-part")
    runner = LocalRunner(
        workspace,
        {**LOCAL, "command": "plan", "args": step["with"]["args"]},
        env={"RECONCILER_NOTIFY_SLACK_URL": url},
    )

    result = runner.run("Run reconciler")

    assert result.returncode == 0 and runner.outputs["exit-code"] == "2", result.stderr
    [post] = webhooks.posts
    assert post.path == "/services/T0/B0/drift-secret-part"
    assert post.json()["text"].startswith(":warning: *reconciler plan: drift found*")
    assert "Notified Slack at 127.0.0.1" in result.stdout  # the action shows plan's stderr
    assert "drift-secret-part" not in result.stdout + result.stderr


def test_apply_then_plan_in_sync_sets_exit_code_0_and_no_changes(workspace: Path) -> None:
    applied = LocalRunner(workspace, {**LOCAL, "command": "apply"})
    result = applied.run("Run reconciler")
    assert result.returncode == 0 and applied.outputs["exit-code"] == "0", result.stdout
    assert "has-changes" not in applied.outputs and "plan-file" not in applied.outputs

    planned = LocalRunner(workspace, {**LOCAL, "command": "plan"})
    planned.run("Run reconciler")
    assert planned.outputs["exit-code"] == "0" and planned.outputs["has-changes"] == "false"
    assert not applied.runs(FAIL) and not planned.runs(FAIL)


def test_invalid_manifests_set_exit_code_1_and_the_comment_says_why(workspace: Path) -> None:
    manifest = workspace / "platform" / "quickstart.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1", "version: 2", 1))
    runner = LocalRunner(workspace, {**LOCAL, "command": "plan", "comment": "true"})
    assert runner.run("Run reconciler").returncode == 0  # the failing step comes last
    assert runner.outputs["exit-code"] == "1" and runner.outputs["validated"] == "false"
    assert "has-changes" not in runner.outputs  # neither true nor false: nothing was compared
    assert runner.run("Write the comment").returncode == 0
    comment = runner.file("comment.md")
    assert comment.startswith(MARKER)
    assert (
        "The manifests are invalid" in comment
        and "quickstart.yaml:8:10: version: must be 1 (got 2)" in comment
    )
    assert runner.runs(FAIL) and runner.run(FAIL).returncode == 1


def test_the_comment_holds_the_markdown_plan(workspace: Path) -> None:
    runner = LocalRunner(workspace, {**LOCAL, "command": "plan", "comment": "true"})
    runner.run("Run reconciler")
    assert runner.run("Write the comment").returncode == 0
    comment = runner.file("comment.md")
    digest = runner.outputs["calls-digest"]
    assert digest.startswith("calls:v1:presence:")
    assert comment.startswith(
        f"{MARKER}\n<!-- reconciler-calls-digest: {digest} head={HEAD_SHA} -->\n"
        "### reconciler plan for `0123456`"
    )
    assert runner.file("plan.md") in comment


def test_manifest_paths_and_args_are_values_never_shell(workspace: Path) -> None:
    marker = workspace / "injected"
    runner = LocalRunner(
        workspace, {**LOCAL, "command": "plan", "manifests": f"platform/ $(touch {marker})"}
    )
    runner.run("Run reconciler")
    assert runner.outputs["exit-code"] == "1"  # `$(touch` is a path that does not exist
    assert not marker.exists()


def test_validate_takes_the_args(workspace: Path) -> None:
    manifest = workspace / "platform" / "quickstart.yaml"
    text = manifest.read_text()
    assert "replicas: {min: 2, max: 6}" in text
    manifest.write_text(text.replace("{min: 2, max: 6}", "{min: 6, max: 2}"))  # only a warning
    lenient = LocalRunner(workspace, {**LOCAL, "command": "validate"})
    lenient.run("Run reconciler")
    strict = LocalRunner(workspace, {**LOCAL, "command": "validate", "args": "--strict"})
    strict.run("Run reconciler")
    assert (lenient.outputs["exit-code"], strict.outputs["exit-code"]) == ("0", "1")


def test_an_unknown_command_fails_the_step(workspace: Path) -> None:
    result = LocalRunner(workspace, {**LOCAL, "command": "destroy"}).run("Run reconciler")
    assert result.returncode == 1
    assert "command must be validate, plan or apply (got 'destroy')" in result.stdout


# --- a run that ends otherwise: killed (137), crashed (139), a status of no meaning ---------


def stand_in(directory: Path, **statuses: int) -> Path:
    """A directory holding a `reconciler` that prints a line to each stream and exits with
    `statuses[subcommand]` (0 when not given), writing the subcommands it ran to `ran`."""
    directory.mkdir()
    cases = "".join(f"  {name}) exit {status} ;;\n" for name, status in statuses.items())
    script = directory / "reconciler"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$1" >> {shlex.quote(str(directory / "ran"))}\n'
        'echo "partial output of $1"; echo "last words of $1" >&2\n'
        f'case "$1" in\n{cases}esac\nexit 0\n'
    )
    script.chmod(0o755)
    return directory


ENDED_OTHERWISE = [
    ("plan", 137, "was killed by signal 9 (exit status 137)"),
    ("plan", 139, "was killed by signal 11 (exit status 139)"),
    ("plan", 1, "failed (exit status 1)"),
    ("plan", 3, "ended with exit status 3, which is not one of its results"),
    ("plan", 130, "was interrupted (exit status 130)"),
    ("apply", 137, "was killed by signal 9 (exit status 137)"),
    ("apply", 2, "ended with exit status 2, which is not one of its results"),
    ("validate", 2, "ended with exit status 2, which is not one of its results"),
    ("validate", 139, "was killed by signal 11 (exit status 139)"),
]


@pytest.mark.parametrize(
    ("command", "status", "said"), ENDED_OTHERWISE, ids=[f"{c}-{s}" for c, s, _ in ENDED_OTHERWISE]
)
def test_any_other_status_fails_the_step_with_it_and_sets_no_has_changes(
    workspace: Path, tmp_path: Path, command: str, status: int, said: str
) -> None:
    """A killed or crashed plan is no answer about drift: has-changes stays empty (the drift
    workflow would close its issue on `false`), and the action fails with the status."""
    fake = stand_in(tmp_path / "bin", **{command: status})
    runner = LocalRunner(workspace, {**LOCAL, "command": command}, reconciler=fake)
    assert runner.run("Run reconciler").returncode == 0  # the comment is written first
    assert runner.outputs["exit-code"] == str(status)
    assert not {"has-changes", "plan-file", "markdown-file"} & set(runner.outputs)
    assert runner.runs(FAIL)
    failed = runner.run(FAIL)
    assert failed.returncode == status
    assert failed.stdout == f"::error::reconciler {command} {said}.\n"


@pytest.mark.parametrize(
    ("command", "status", "changes"),
    [("plan", 0, "false"), ("plan", 2, "true"), ("apply", 0, None), ("validate", 0, None)],
)
def test_only_the_documented_statuses_pass(
    workspace: Path, tmp_path: Path, command: str, status: int, changes: str | None
) -> None:
    fake = stand_in(tmp_path / "bin", **{command: status})
    runner = LocalRunner(workspace, {**LOCAL, "command": command}, reconciler=fake)
    assert runner.run("Run reconciler").returncode == 0
    assert runner.outputs["exit-code"] == str(status) and not runner.runs(FAIL)
    assert runner.outputs.get("has-changes") == changes


ENDED_OTHERWISE_COMMENTS = [
    ("plan", {"validate": 139}, "validate was killed by signal 11 (exit status 139)", "invalid"),
    ("plan", {"plan": 137}, "plan was killed by signal 9 (exit status 137)", "partial output"),
    ("apply", {"apply": 137}, "apply was killed by signal 9 (exit status 137)", "succeeded"),
]


@pytest.mark.parametrize(
    ("command", "statuses", "said", "unsaid"),
    ENDED_OTHERWISE_COMMENTS,
    ids=["validate-crashed", "plan-killed", "apply-killed"],
)
def test_the_comment_on_a_run_that_ended_otherwise_says_how_with_its_last_words(
    workspace: Path,
    tmp_path: Path,
    command: str,
    statuses: dict[str, int],
    said: str,
    unsaid: str,
) -> None:
    """Not "the manifests are invalid" for a crashed validate (the command then does not run),
    no partial plan for a killed plan, no "succeeded" for a killed apply (its output goes
    through `tee`: pipefail keeps reconciler's status)."""
    fake = stand_in(tmp_path / "bin", **statuses)
    runner = LocalRunner(
        workspace, {**LOCAL, "command": command, "comment": "true"}, reconciler=fake
    )
    runner.run("Run reconciler")
    ran = ["validate"] if statuses.get("validate") else ["validate", command]
    assert (fake / "ran").read_text().split() == ran
    assert runner.runs(FAIL)
    runner.run("Write the comment")
    comment = runner.file("comment.md")
    assert f":x: **reconciler {said}.**" in comment
    assert f"last words of {ran[-1]}" in comment and unsaid not in comment


# --- the github-script steps, run by node with a fake GitHub client ---------------

HARNESS = """
const script = process.argv[1];
const input = JSON.parse(process.argv[2]);
const calls = [];
const record = (name) => async (args) => { calls.push([name, args]); return { data: {} }; };
const github = {
  paginate: async (fn, args) => { calls.push(['list', args]); return input.listed; },
  rest: { issues: {
    listComments: 'listComments', listForRepo: 'listForRepo',
    updateComment: record('updateComment'), createComment: record('createComment'),
    create: record('create'), update: record('update'),
  } },
};
const context = { repo: { owner: 'acme', repo: 'platform' }, issue: { number: 7 },
                  serverUrl: 'https://github.com', runId: 99 };
Object.assign(process.env, input.env);
const fakeRequire = (name) => name === 'fs' ? { readFileSync: () => input.file } : require(name);
const run = new Function('github', 'context', 'require', `return (async () => { ${script} })();`);
run(github, context, fakeRequire).then(() => console.log(JSON.stringify(calls)));
"""


def run_github_script(
    script: str, file: str, listed: list[dict[str, Any]], env: dict[str, str] | None = None
) -> list[Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    payload = json.dumps({"file": file, "listed": listed, "env": env or {}})
    result = subprocess.run(
        [node, "-e", HARNESS, "--", script, payload],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(result.stdout)


def comment_script() -> str:
    return str(step_named("Post or update the comment")["with"]["script"])


def drift_script() -> str:
    (job,) = load(DRIFT)["jobs"].values()
    step = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/github-script@"))
    return str(step["with"]["script"])


def test_comment_script_updates_the_marked_comment_in_place() -> None:
    comments = [
        {"id": 1, "user": {"type": "User"}, "body": f"quoting {MARKER}"},
        {"id": 2, "user": {"type": "Bot"}, "body": "another bot"},
        {"id": 3, "user": {"type": "Bot"}, "body": f"{MARKER}\nold plan"},
    ]
    calls = run_github_script(comment_script(), f"{MARKER}\nnew plan", comments)
    assert calls[-1] == [
        "updateComment",
        {"owner": "acme", "repo": "platform", "comment_id": 3, "body": f"{MARKER}\nnew plan"},
    ]
    assert not any(call[0] == "createComment" for call in calls)


def test_comment_script_creates_the_first_comment_and_cuts_oversized_ones() -> None:
    calls = run_github_script(comment_script(), f"{MARKER}\nfirst", [])
    assert calls[-1] == [
        "createComment",
        {"owner": "acme", "repo": "platform", "issue_number": 7, "body": f"{MARKER}\nfirst"},
    ]
    change = "\n<details><summary>change</summary>\n\n```diff\n+ x\n```\n\n</details>"
    huge = MARKER + "\n**Plan:** many changes." + change * 1200
    assert len(huge) > 65535
    body = run_github_script(comment_script(), huge, [])[-1][1]["body"]
    assert len(body) < 65535
    assert body.startswith(MARKER) and "whole plan is in the job log" in body
    assert body.split("\n\n_Shortened")[0].endswith("</details>")  # cut between changes


DRIFT_MARKER = "<!-- reconciler-drift -->"
OPEN_DRIFT = {"number": 12, "user": {"type": "Bot"}, "body": f"{DRIFT_MARKER}\nold plan"}
OTHERS = [
    {"number": 3, "user": {"type": "User"}, "body": f"mentions {DRIFT_MARKER}"},
    {"number": 4, "user": {"type": "Bot"}, "body": DRIFT_MARKER, "pull_request": {}},
]
DRIFTED = {"HAS_CHANGES": "true", "PLAN_MARKDOWN": "/tmp/plan.md"}
IN_SYNC = {"HAS_CHANGES": "false", "PLAN_MARKDOWN": "/tmp/plan.md"}


def test_drift_opens_one_issue_with_the_plan() -> None:
    calls = run_github_script(drift_script(), "**Plan:** 1 to change", OTHERS, DRIFTED)
    assert calls[0] == [
        "list",
        {"owner": "acme", "repo": "platform", "state": "open", "per_page": 100},
    ]
    (created,) = [args for name, args in calls if name == "create"]
    assert created["body"].startswith(DRIFT_MARKER) and "**Plan:** 1 to change" in created["body"]
    assert "actions/runs/99" in created["body"]
    assert [name for name, _ in calls] == ["list", "create"]


def test_drift_updates_the_open_issue_instead_of_opening_another() -> None:
    calls = run_github_script(
        drift_script(), "**Plan:** 2 to change", [*OTHERS, OPEN_DRIFT], DRIFTED
    )
    assert [name for name, _ in calls] == ["list", "update"]
    update = calls[1][1]
    assert update["issue_number"] == 12 and "**Plan:** 2 to change" in update["body"]
    assert "state" not in update


def test_drift_closes_the_issue_when_in_sync_again() -> None:
    calls = run_github_script(drift_script(), "", [*OTHERS, OPEN_DRIFT], IN_SYNC)
    assert [name for name, _ in calls] == ["list", "createComment", "update"]
    assert (
        calls[1][1]["issue_number"] == 12 and "matches the manifests again" in calls[1][1]["body"]
    )
    assert calls[2][1] == {
        "owner": "acme",
        "repo": "platform",
        "issue_number": 12,
        "state": "closed",
        "state_reason": "completed",
    }


def test_drift_without_an_answer_leaves_the_issue_open() -> None:
    """has-changes is empty when the plan gave no answer (the action then fails, and this step
    does not run; were it run anyway, it must not take the silence for `in sync`)."""
    calls = run_github_script(drift_script(), "", [*OTHERS, OPEN_DRIFT], {"HAS_CHANGES": ""})
    assert [name for name, _ in calls] == ["list"]


def test_drift_in_sync_with_no_issue_does_nothing() -> None:
    calls = run_github_script(drift_script(), "", OTHERS, IN_SYNC)
    assert [name for name, _ in calls] == ["list"]


def test_drift_issue_body_is_cut_to_fit() -> None:
    change = "\n<details><summary>change</summary>\n\n```diff\n+ x\n```\n\n</details>"
    plan = "**Plan:** many changes." + change * 1200
    calls = run_github_script(drift_script(), plan, [], DRIFTED)
    body = calls[-1][1]["body"]
    assert len(body) <= 65536 and "Shortened" in body
    assert body.split("\n\n_Shortened")[0].endswith("</details>")
