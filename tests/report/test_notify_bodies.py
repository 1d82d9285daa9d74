"""What a notification says, and how each body lays it out: the events of plan and apply, the
generic JSON body, and Slack's mrkdwn, where no text from a manifest, the platform or the CI
can form a link, a mention or a line of its own."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler import sensitive
from reconciler.apply.deploy import DeploymentOutcome, DeployTarget
from reconciler.apply.outcome import ChangeResult, Outcome, SilentObserver
from reconciler.errors import OutputError, PermissionDenied
from reconciler.manifest.model import Position
from reconciler.manifest.problems import ManifestInvalid, Problem
from reconciler.plan.changes import Action, Change, Plan
from reconciler.report import output
from reconciler.report.notify import Ending, apply_notification, plan_notification, run_link
from reconciler.report.notify.bodies import SLACK_LISTED, slack_body, slack_code, slack_text
from reconciler.report.notify.events import LISTED, TEXT_LIMIT
from reconciler.report.progress import ApplyRecord, DeployRecord

GITHUB = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "acme/infra",
    "GITHUB_RUN_ID": "4242",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_REF_NAME": "main",
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
}


def change(address: str, action: Action = Action.UPDATE) -> Change:
    return Change(address, "variable", action, {}, {})


def plan_of(*addresses: str, targets: tuple[str, ...] = ()) -> Plan:
    return Plan(changes=tuple(change(a) for a in addresses), targets=targets)


@dataclass
class Run:
    """What `reconciler/cli/apply.py` records of an apply (`ApplyRun`)."""

    plan: Plan | None = None
    applied: ApplyRecord | None = None
    deployed: DeployRecord | None = None


def applied(plan: Plan, *outcomes: Outcome, error: str = "environments.x: 500") -> Run:
    record = ApplyRecord(SilentObserver())
    for c, outcome in zip(plan.changes, outcomes, strict=False):
        record.change_finished(
            ChangeResult(c, outcome, error=error if outcome is Outcome.FAILED else None)
        )
    return Run(plan, record)


def deployed(run: Run, *statuses: str) -> Run:
    record = DeployRecord(SilentDeploy())
    for index, status in enumerate(statuses):
        target = DeployTarget("shop", f"app{index}", "production", ("variables",))
        code = "build_failed" if status == "failed" else None
        record.finished(DeploymentOutcome(target, f"d_{index}", status, error_code=code))
    run.deployed = record
    return run


class SilentDeploy:
    def started(self, total: int) -> None: ...
    def created(self, target: DeployTarget, deployment_id: str, source: str) -> None: ...
    def status_changed(self, target: DeployTarget, deployment_id: str, status: str) -> None: ...
    def finished(self, outcome: DeploymentOutcome) -> None: ...


# --- plan's events ------------------------------------------------------------------------


def test_plan_posts_drift_with_counts_and_the_first_addresses() -> None:
    plan = Plan(
        changes=(
            change("variable.shop/web/production/A"),
            change("domain.shop/web/production/x.example.com", Action.CREATE),
            change("app.shop/old", Action.BLOCKED),
        ),
        targets=("app.shop/web",),
    )
    n = plan_notification(plan, Ending(2), in_sync=False)

    assert n is not None and n.event == "drift" and n.exit_code == 2
    assert n.summary == {"add": 1, "change": 1, "destroy": 0, "blocked": 1}
    assert n.text == (
        "Live state differs from the manifests. Plan: 1 to add, 1 to change, 0 to destroy. "
        "1 blocked by delete protection."
    )
    assert [(c.address, c.action) for c in n.changes] == [
        ("variable.shop/web/production/A", "update"),
        ("domain.shop/web/production/x.example.com", "create"),
        ("app.shop/old", "blocked"),
    ]
    assert n.targets == ("app.shop/web",)


def test_plan_in_sync_posts_only_when_asked() -> None:
    assert plan_notification(plan_of(), Ending(0), in_sync=False) is None
    n = plan_notification(plan_of(), Ending(0), in_sync=True)
    assert n is not None and n.event == "in_sync" and n.changes == ()


def test_a_failed_plan_says_what_stopped_it_in_its_first_line() -> None:
    error = PermissionDenied(
        "projects.listProjects: 403 the key lacks project.*.read_project",
        operation="projects.listProjects",
        status=403,
    )
    n = plan_notification(None, Ending(1, error), in_sync=False)

    assert n is not None and n.event == "failed" and n.summary is None
    assert n.error is not None
    assert (n.error.kind, n.error.operation, n.error.status) == (
        "PermissionDenied",
        "projects.listProjects",
        403,
    )


def test_an_invalid_manifest_is_named_without_its_values() -> None:

    error = ManifestInvalid([Problem.at(Position("p.yaml", 3, 7), "projects.shop.name", "got number 5")])
    n = plan_notification(None, Ending(1, error), in_sync=False)

    assert n is not None and n.error is not None
    assert n.error.message == "the manifest has 1 problem"  # not the problem lines


def test_an_interrupted_plan_posts_nothing() -> None:
    assert plan_notification(None, Ending(130, interrupted=True), in_sync=True) is None


def test_long_plans_are_cut_and_counted() -> None:
    plan = plan_of(*(f"variable.shop/web/production/V{n}" for n in range(LISTED + 7)))
    n = plan_notification(plan, Ending(0), in_sync=False)

    assert n is not None and len(n.changes) == LISTED and n.changes_total == LISTED + 7
    text = slack_body(n)["text"]
    assert text.count("\n• ") == SLACK_LISTED
    assert f"…and {LISTED + 7 - SLACK_LISTED} more" in text


# --- apply's events -----------------------------------------------------------------------


def test_apply_posts_applied_with_counts() -> None:
    plan = Plan(changes=(change("app.shop/web", Action.CREATE), change("variable.shop/web/p/A")))
    n = apply_notification(applied(plan, Outcome.DONE, Outcome.DONE), Ending(0), in_sync=False)

    assert n is not None and n.event == "applied"
    assert n.text == "Apply complete! Resources: 1 added, 1 changed, 0 destroyed."
    assert n.summary == {
        "added": 1,
        "changed": 1,
        "destroyed": 0,
        "failed": 0,
        "skipped": 0,
        "blocked": 0,
        "unfinished": 0,
    }


def test_apply_failed_lists_what_failed_first() -> None:
    plan = plan_of("variable.shop/web/p/A", "variable.shop/web/p/B", "variable.shop/web/p/C")
    run = applied(plan, Outcome.DONE, Outcome.SKIPPED, Outcome.FAILED)
    n = apply_notification(run, Ending(1), in_sync=False)

    assert n is not None and n.event == "failed" and n.error is None
    assert n.text.startswith(
        "Apply incomplete! Resources: 0 added, 1 changed, 0 destroyed; 1 failed"
    )
    assert [(c.address, c.outcome) for c in n.changes] == [
        ("variable.shop/web/p/C", "failed"),
        ("variable.shop/web/p/B", "skipped"),
        ("variable.shop/web/p/A", "done"),
    ]
    assert n.changes[0].error == "environments.x: 500"


def test_apply_rollout_failed_when_every_change_applied_but_a_deployment_did_not_go_live() -> None:
    plan = plan_of("variable.shop/web/p/A")
    run = deployed(applied(plan, Outcome.DONE), "ready", "failed")
    n = apply_notification(run, Ending(1), in_sync=False)

    assert n is not None and n.event == "rollout_failed"
    assert n.text.endswith("1 of 2 deployment(s) did not go live.")
    assert [(d.status, d.error_code, d.live) for d in n.deployments] == [
        ("ready", None, True),
        ("failed", "build_failed", False),
    ]
    assert slack_body(n)["text"].splitlines()[2:6] == [
        "Deployments:",
        "• `shop/app0/production`: ready",
        "• `shop/app1/production`: failed (build_failed)",
        "• done `variable.shop/web/p/A` (update)",
    ]


def test_apply_with_nothing_to_do_posts_only_when_asked() -> None:
    assert apply_notification(Run(), Ending(0), in_sync=False) is None
    n = apply_notification(Run(), Ending(0), in_sync=True)
    assert n is not None and n.event == "in_sync"


def test_apply_refused_before_any_write() -> None:
    from reconciler.errors import ApplyRefused

    refused = ApplyRefused("refusing to delete 12 objects (--max-deletes 10); nothing was applied")
    n = apply_notification(Run(), Ending(1, refused), in_sync=False)

    assert n is not None and n.event == "failed" and n.summary is None
    assert n.error is not None and n.error.kind == "ApplyRefused"


def test_an_interrupted_apply_is_a_failure_with_what_it_did() -> None:
    plan = plan_of("variable.shop/web/p/A", "variable.shop/web/p/B")
    n = apply_notification(
        applied(plan, Outcome.DONE), Ending(130, interrupted=True), in_sync=False
    )

    assert n is not None and n.event == "failed"
    assert n.error is not None and n.error.kind == "Interrupted"
    assert n.summary is not None and n.summary["unfinished"] == 1
    assert n.text.endswith("Before it stopped: 0 added, 1 changed, 0 destroyed.")


def test_a_bug_is_named_by_its_class_only() -> None:
    n = apply_notification(None, Ending(1, KeyError("sk_live_value")), in_sync=False)
    assert n is not None and n.error is not None
    assert (n.error.kind, n.error.message) == ("InternalError", "internal error (KeyError)")


# --- texts that are not reconciler's own ----------------------------------------------------


def test_a_secret_value_is_never_posted() -> None:
    """Secret values are `Secret`s, which refuse to be encoded: a body that would hold one is
    refused whole. (Error texts of the platform arrive redacted by the client that sent the
    call: tests/security.)"""
    secret = sensitive.Secret("sk_live_notify_SENTINEL_1234")
    with pytest.raises(OutputError, match="secret value"):
        output.outgoing_json({"text": "ok", "value": secret})


def test_texts_are_one_cleaned_line_cut_to_the_limit() -> None:
    error = PermissionDenied("first\x1b[31m line\u202e\nsecond line", operation="o", status=403)
    n = plan_notification(None, Ending(1, error), in_sync=False)
    assert n is not None and n.error is not None
    assert n.error.message == "first\\x1b[31m line\\u202e"

    long = plan_of("variable.shop/web/p/" + "X" * 1000)
    n = plan_notification(long, Ending(0), in_sync=False)
    assert n is not None and len(n.changes[0].address) == TEXT_LIMIT


def test_the_run_link_of_github_and_gitlab() -> None:
    github = run_link(GITHUB)
    assert github is not None
    assert github.url == "https://github.com/acme/infra/actions/runs/4242"
    assert (github.repository, github.ref) == ("acme/infra", "main")
    retried = run_link({**GITHUB, "GITHUB_RUN_ATTEMPT": "2"})
    assert retried is not None and retried.url is not None
    assert retried.url.endswith("/runs/4242/attempts/2")

    gitlab = run_link(
        {
            "GITLAB_CI": "true",
            "CI_PIPELINE_URL": "https://gitlab.example.com/acme/infra/-/pipelines/7",
            "CI_JOB_URL": "https://gitlab.example.com/acme/infra/-/jobs/70",
            "CI_PROJECT_PATH": "acme/infra",
        }
    )
    assert gitlab is not None and gitlab.url == "https://gitlab.example.com/acme/infra/-/jobs/70"
    assert run_link({}) is None


def test_a_run_url_that_could_end_a_slack_link_is_no_link() -> None:
    link = run_link({**GITHUB, "GITHUB_SERVER_URL": "https://x.example|<!channel>"})
    assert link is not None and link.url is None


# --- Slack: nothing forged -----------------------------------------------------------------

_ENTITY = re.compile(r"&(?!amp;|lt;|gt;)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
texts = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ["<!channel>", "<!here|x>", "<@U123>", "<#C1|general>", "<https://evil.example|click>",
     "&lt;!channel&gt;", "a\n<!everyone>", "`<!channel>`", "*bold* _it_ ~s~ > quote"]
)  # fmt: skip


@given(texts)
def test_slack_text_cannot_hold_a_control_sequence(text: str) -> None:
    for shown in (slack_text(text), slack_code(text)[1:-1]):
        assert "<" not in shown and ">" not in shown
        assert not _ENTITY.search(shown)
        assert not _CONTROL.search(shown)
    assert "`" not in slack_code(text)[1:-1]


@given(
    addresses=st.lists(texts, min_size=1, max_size=12),
    target=texts,
    message=texts,
    repository=texts,
    ref=texts,
    server=texts,
)
def test_no_manifest_platform_or_ci_text_forms_a_link_mention_or_line_in_slack(
    addresses: list[str], target: str, message: str, repository: str, ref: str, server: str
) -> None:
    env = {**GITHUB, "GITHUB_REPOSITORY": repository, "GITHUB_REF_NAME": ref}
    env["GITHUB_SERVER_URL"] = server
    link = run_link(env)
    plan = Plan(changes=tuple(change(a) for a in addresses), targets=(target,))
    run = applied(plan, *[Outcome.FAILED] * len(addresses), error=message)
    bodies = [
        slack_body(n)["text"]
        for n in (
            plan_notification(plan, Ending(2), in_sync=False, link=link),
            apply_notification(run, Ending(1), in_sync=False, link=link),
            plan_notification(
                None,
                Ending(1, PermissionDenied(message, operation=target)),
                in_sync=False,
                link=link,
            ),
        )
        if n is not None
    ]
    for text in bodies:
        lines = text.split("\n")
        *content, last = lines
        for line in content:  # reconciler's own `<`: the run's link, on the last line only
            assert "<" not in line and ">" not in line and not _ENTITY.search(line)
        links = re.findall(r"<([^>]*)>", last)
        assert len(links) <= 1
        for found in links:
            assert re.fullmatch(r"https?://[^\s<>|&\"'`\\]+\|GitHub Actions run", found)
        assert "<!" not in text and "<@" not in text and "<#" not in text
        assert not _CONTROL.search(text.replace("\n", ""))
        _check_line_starts(lines)


def _check_line_starts(lines: list[str]) -> None:
    """Every line but the result line (the second) starts as reconciler writes it: no text
    of others starts one."""
    starts = (":warning:", ":x:", ":white_check_mark:", "•", "…and", "Targets:", "Deployments:",
              "PermissionDenied:", "<http", "`")  # fmt: skip
    assert all(line.startswith(starts) for i, line in enumerate(lines) if i != 1), lines
