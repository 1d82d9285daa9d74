"""Progress lines and the report after apply."""

from __future__ import annotations

import io
import shlex

from rich.console import Console

from reconciler.apply import ApplyResult, CallResult, ChangeResult, Outcome
from reconciler.plan.changes import Action, Change
from reconciler.platform.operations import get_operation
from reconciler.report.progress import (
    PlainApplyProgress,
    RichApplyProgress,
    describe_change,
    render_report,
    summary_line,
)


def result(
    address: str, kind: str, action: Action, outcome: Outcome, **extra: object
) -> ChangeResult:
    return ChangeResult(Change(address, kind, action, None, None), outcome, **extra)  # type: ignore[arg-type]


CREATED_APP = result(
    "app.shop/web",
    "app",
    Action.CREATE,
    Outcome.DONE,
    calls=(
        CallResult(get_operation("apps.createApp"), True, 200),
        CallResult(get_operation("apps.updateApp"), True, 200),
    ),
)
FAILED_SETTINGS = result(
    "settings.shop/api/production",
    "settings",
    Action.UPDATE,
    Outcome.FAILED,
    calls=(
        CallResult(get_operation("environments.updateSettings"), False, 500, error="boom (500)"),
    ),
    error="environments.updateSettings: server error (500) after 5 attempts",
)
SKIPPED_VARIABLE = result(
    "variable.shop/api/production/KEY",
    "variable",
    Action.CREATE,
    Outcome.SKIPPED,
    blocked_by=("app.shop/api",),
)
NEW_DOMAIN = result(
    "domain.shop/web/production/shop.example.com",
    "domain",
    Action.CREATE,
    Outcome.DONE,
    calls=(
        CallResult(
            get_operation("domains.createDomain"),
            True,
            200,
            data={
                "domainId": "dom_1",
                "dnsRecords": [
                    {
                        "type": "CNAME",
                        "name": "shop.example.com",
                        "value": "edge.platform.test",
                        "ttl": 300,
                    },
                    {
                        "type": "TXT",
                        "name": "_verify.shop.example.com",
                        "value": "token-1",
                        "ttl": 300,
                    },
                ],
            },
        ),
    ),
)


def test_one_line_per_finished_change() -> None:
    assert describe_change(CREATED_APP) == (
        "app.shop/web: created (apps.createApp 200, apps.updateApp 200)"
    )
    assert describe_change(FAILED_SETTINGS) == (
        "settings.shop/api/production: failed: "
        "environments.updateSettings: server error (500) after 5 attempts"
    )
    assert describe_change(SKIPPED_VARIABLE) == (
        "variable.shop/api/production/KEY: skipped (needs app.shop/api, which did not apply)"
    )


def test_a_create_found_by_rereading_says_so() -> None:
    found = result(
        "project.shop",
        "project",
        Action.CREATE,
        Outcome.DONE,
        calls=(CallResult(get_operation("projects.createProject"), True, 200, reread=True),),
    )
    assert describe_change(found) == (
        "project.shop: created (projects.createProject: already created by an earlier attempt "
        "that failed ambiguously)"
    )


def test_plain_progress_prints_lines_only() -> None:
    lines: list[str] = []
    progress = PlainApplyProgress(lines.append)
    progress.started(3)
    progress.call_finished(None)
    progress.change_finished(CREATED_APP)
    progress.close()
    assert lines == [
        "Applying: 3 API calls.",
        "app.shop/web: created (apps.createApp 200, apps.updateApp 200)",
    ]


def test_rich_progress_counts_calls_and_prints_changes() -> None:
    out = io.StringIO()
    progress = RichApplyProgress(Console(file=out, force_terminal=True, width=100))
    progress.started(2)
    progress.call_finished(CREATED_APP.calls[0])
    progress.change_finished(CREATED_APP)
    progress.call_finished(None)
    assert progress._bar.tasks[0].completed == 2
    progress.close()
    assert "app.shop/web: created" in out.getvalue()


def test_a_complete_apply_ends_with_terraforms_line() -> None:
    report = render_report(ApplyResult((CREATED_APP, NEW_DOMAIN)))
    assert report.splitlines()[-1] == "Apply complete! Resources: 2 added, 0 changed, 0 destroyed."


def test_an_incomplete_apply_lists_done_failed_and_skipped() -> None:
    applied = ApplyResult((CREATED_APP, FAILED_SETTINGS, SKIPPED_VARIABLE))
    report = render_report(applied)
    assert "Applied (1):\n  app.shop/web (created)" in report
    assert (
        "Failed (1):\n  settings.shop/api/production: "
        "environments.updateSettings: server error (500) after 5 attempts"
    ) in report
    assert (
        "Skipped because a change they need did not apply (1):\n"
        "  variable.shop/api/production/KEY: needs app.shop/api"
    ) in report
    assert summary_line(applied) == (
        "Apply incomplete! Resources: 1 added, 0 changed, 0 destroyed; "
        "1 failed, 1 skipped, 0 blocked."
    )


def test_new_domains_print_their_dns_records_as_a_table() -> None:
    report = render_report(ApplyResult((NEW_DOMAIN,)))
    table = report.split("Create these DNS records so the new domains can be verified:\n")[1]
    rows = [line.split() for line in table.splitlines()[:3]]
    assert rows == [
        ["DOMAIN", "TYPE", "NAME", "VALUE", "TTL"],
        ["shop.example.com", "CNAME", "shop.example.com", "edge.platform.test", "300"],
        ["shop.example.com", "TXT", "_verify.shop.example.com", "token-1", "300"],
    ]


def test_an_interrupted_rollout_says_what_finished_what_goes_on_and_what_was_not_created() -> None:
    from reconciler.apply.deploy import DeploymentOutcome, DeployTarget
    from reconciler.report.progress import (
        DeployRecord,
        PlainDeployProgress,
        render_interrupted_deploy,
    )

    web, api, blog = (
        DeployTarget("shop", app, "production", reasons=("settings",))
        for app in ("web", "api", "blog")
    )
    lines: list[str] = []
    record = DeployRecord(PlainDeployProgress(lines.append))
    record.started(3)
    record.created(web, "d_web", "image nginx:1")
    record.finished(DeploymentOutcome(web, "d_web", "ready"))
    record.created(api, "d_api", "image nginx:2")
    record.status_changed(api, "d_api", "building")

    text = render_interrupted_deploy(
        (web, api, blog),
        record,
        "reconciler status -f p.yaml --wait",
        lambda flags: shlex.join(["reconciler", "apply", "-f", "p y.yaml", "--redeploy", *flags]),
    )

    assert "Finished (1):\n  shop/web/production (d_web): ready" in text
    assert (
        "In flight: they go on rolling out on the platform (1):\n"
        "  shop/api/production (d_api): building\n"
        "To wait for them: reconciler status -f p.yaml --wait"
    ) in text
    assert (
        "Not deployed: no deployment was confirmed created (1):\n  shop/blog/production\n"
        "To deploy them: reconciler apply -f 'p y.yaml' --redeploy "
        "--target settings.shop/blog/production"
    ) in text
    assert lines[0] == "Deploying 3 environment(s); waiting for each to finish."  # passed on
