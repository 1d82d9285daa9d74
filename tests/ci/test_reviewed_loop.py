"""The review loop as GitHub runs it: the pull request's job plans and posts the comment that
publishes the digest of the plan's calls; the merge job finds the merged pull request of its
commit, takes the digest of the comment this action wrote for that pull request's last commit,
and applies only those calls. Both jobs are played against the built-in emulator, the GitHub
API by a fake client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ci.scripts import MARKER
from tests.ci.test_github_action import HEAD_SHA, LOCAL, LocalRunner, step_named

MERGE_SHA = "f" * 40
HARNESS = """
const script = process.argv[1];
const input = JSON.parse(process.argv[2]);
const calls = [];
const github = {
  paginate: async (fn, args) => { calls.push([fn, args]); return input.listed[fn]; },
  rest: {
    repos: { listPullRequestsAssociatedWithCommit: 'pulls' },
    issues: { listComments: 'comments' },
  },
};
const core = {
  setOutput: (name, value) => calls.push(['output', name, value]),
  setFailed: (message) => calls.push(['failed', message]),
  info: () => {},
};
const context = { repo: { owner: 'acme', repo: 'platform' } };
Object.assign(process.env, input.env);
const run = new Function('github', 'context', 'core', `return (async () => { ${script} })();`);
run(github, context, core).then(() => console.log(JSON.stringify(calls)));
"""


def find_reviewed(pulls: list[dict[str, Any]], comments: list[dict[str, Any]]) -> list[Any]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = str(step_named("Find the reviewed plan")["with"]["script"])
    payload = {"listed": {"pulls": pulls, "comments": comments}, "env": {"SHA": MERGE_SHA}}
    result = subprocess.run(
        [node, "-e", HARNESS, "--", script, json.dumps(payload)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(result.stdout)


def merged_pull(head: str = HEAD_SHA) -> dict[str, Any]:
    return {
        "number": 7,
        "merged_at": "2026-11-27T10:00:00Z",
        "merge_commit_sha": MERGE_SHA,
        "head": {"sha": head},
    }


def bot(body: str) -> dict[str, Any]:
    return {"user": {"type": "Bot"}, "body": body}


def pull_request_job(workspace: Path) -> str:
    """The plan job of the pull request: its comment."""
    runner = LocalRunner(workspace, {**LOCAL, "command": "plan", "comment": "true"})
    assert runner.run("Run reconciler").returncode == 0
    assert runner.outputs["passed"] == "true", runner.file("plan.err")
    assert runner.run("Write the comment").returncode == 0
    return runner.file("comment.md")


def merge_job(workspace: Path, digest: str) -> LocalRunner:
    runner = LocalRunner(workspace, {**LOCAL, "command": "apply", "reviewed": "auto"})
    runner.reviewed_digest = digest
    assert runner.run("Run reconciler").returncode == 0  # the failing step comes last
    return runner


def digest_found(calls: list[Any]) -> str:
    [(_, name, value)] = [call for call in calls if call[0] == "output"]
    assert name == "digest"
    return str(value)


def out_of_band_variable(workspace: Path) -> None:
    """Someone sets a variable by hand, on the platform, after the review."""
    manifest = (workspace / "platform" / "quickstart.yaml").read_text()
    hand = workspace.parent / "by-hand.yaml"
    hand.write_text(
        manifest.replace("LOG_LEVEL: info", "LOG_LEVEL: info\n              HOTFIX: '1'")
    )
    done = subprocess.run(
        ["reconciler", "apply", "-f", str(hand), "--base-url", "local", "--auto-approve"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
        env={**_env()},
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _env() -> dict[str, str]:
    return {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "HOME": os.environ.get("HOME", "/tmp"),
        "NO_COLOR": "1",
    }


def test_a_change_on_the_platform_after_the_review_stops_the_merge(workspace: Path) -> None:
    comment = pull_request_job(workspace)
    digest = digest_found(find_reviewed([merged_pull()], [bot(comment)]))
    out_of_band_variable(workspace)
    merge = merge_job(workspace, digest)
    assert merge.outputs["passed"] == "false" and merge.outputs["exit-code"] == "1"
    log = merge.file("apply.txt")
    assert "the plan made now is not the plan that was reviewed" in log
    assert f"reviewed {digest}" in log
    assert "Apply complete" not in log


def test_no_change_since_the_review_applies_the_reviewed_calls(workspace: Path) -> None:
    comment = pull_request_job(workspace)
    digest = digest_found(find_reviewed([merged_pull()], [bot(comment)]))
    merge = merge_job(workspace, digest)
    assert merge.outputs["passed"] == "true", merge.file("apply.txt")
    assert "Apply complete! Resources: 13 added" in merge.file("apply.txt")


def test_only_the_actions_own_comment_for_the_last_commit_counts(workspace: Path) -> None:
    comment = pull_request_job(workspace)
    digest_line = comment.splitlines()[1]
    forged = f"{MARKER}\n{digest_line}\nlooks right"
    by_a_person = {"user": {"type": "User"}, "body": forged}
    quoted = bot(f"a bot quoting the plan:\n{comment}")
    for comments in ([by_a_person], [quoted], []):
        calls = find_reviewed([merged_pull()], comments)
        assert calls[-1][0] == "failed" and "no plan comment for its last commit" in calls[-1][1]
    older_push = find_reviewed([merged_pull(head="a" * 40)], [bot(comment)])
    assert older_push[-1][0] == "failed"


def test_a_commit_no_pull_request_merged_has_nothing_reviewed() -> None:
    not_merged = {**merged_pull(), "merged_at": None}
    other_commit = {**merged_pull(), "merge_commit_sha": "e" * 40}
    for pulls in ([], [not_merged], [other_commit]):
        calls = find_reviewed(pulls, [])
        assert calls[-1][0] == "failed" and "no merged pull request" in calls[-1][1]
