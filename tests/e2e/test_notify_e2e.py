"""`plan` and `apply` notifications end to end: the CLI against the emulator, posting to a real
HTTP receiver on loopback. What each command posts and when, that a notification never changes
the exit status, and that the URL (a credential) never shows in any output. Retries are
counted with an injected sleep: nothing here waits on a clock."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import reconciler.cli.notify as cli_notify
from reconciler.cli.notify import notifies, outcome
from reconciler.cli.options import report_errors
from tests.e2e.test_apply_deploy_e2e import FAST, image_app
from tests.fixtures.cli import CliResult, platform_env, run_cli, shop_manifest, write_manifest
from tests.fixtures.webhooks import FakeTime, Reply, WebhookReceiver

SLACK_PATH = "/services/T0NOTIFY/B0NOTIFY/SlackSecretPart42"
HOOK_PATH = "/generic/hook-token-SECRET-7"
RUN = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "acme/infra",
    "GITHUB_RUN_ID": "99",
    "GITHUB_RUN_ATTEMPT": "1",
    "GITHUB_REF_NAME": "main",
    "GITHUB_SHA": "feedfacefeedfacefeedfacefeedfacefeedface",
    "GITLAB_CI": None,
    "CI_PIPELINE_URL": None,
}
ONE_APP = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
      environments:
        production:
          variables: {LOG_LEVEL: info}
    """
)


@pytest.fixture
def time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    """Every delivery of these tests sleeps on a fake clock."""
    fake = FakeTime()
    monkeypatch.setattr(cli_notify, "delivery_timing", fake.timing)
    return fake


@pytest.fixture
def notified(emulator: Any, webhooks: WebhookReceiver, time: FakeTime) -> Notified:
    return Notified(emulator, webhooks)


class Notified:
    """Runs the CLI with both URLs set to the receiver (and a GitHub run around it)."""

    def __init__(self, emulator: Any, receiver: WebhookReceiver) -> None:
        self.emulator = emulator
        self.receiver = receiver
        self.slack_url = receiver.url(SLACK_PATH)
        self.hook_url = receiver.url(HOOK_PATH, host="localhost")

    def env(self, **more: str | None) -> dict[str, str | None]:
        return {
            **platform_env(self.emulator),
            **RUN,
            "NO_COLOR": "1",
            "RECONCILER_NOTIFY_SLACK_URL": self.slack_url,
            "RECONCILER_NOTIFY_WEBHOOK_URL": self.hook_url,
            **more,
        }

    def __call__(self, *args: str, env: Mapping[str, str | None] | None = None) -> CliResult:
        result = run_cli(args, env={**self.env(), **(env or {})})
        for secret in (SLACK_PATH, HOOK_PATH, "SlackSecretPart42", "hook-token-SECRET"):
            assert secret not in result.output, result.output
        return result

    def slack(self) -> list[dict[str, Any]]:
        return [post.json() for post in self.receiver.posts_to(SLACK_PATH)]

    def generic(self) -> list[dict[str, Any]]:
        return [post.json() for post in self.receiver.posts_to(HOOK_PATH)]


def manifest(tmp_path: Path, text: str = ONE_APP) -> str:
    return str(write_manifest(tmp_path, text))


# --- plan -----------------------------------------------------------------------------------


def test_plan_posts_nothing_unless_asked(notified: Notified, tmp_path: Path) -> None:
    result = notified("plan", "-f", manifest(tmp_path), "--detailed-exitcode")

    assert result.exit_code == 2
    assert notified.receiver.posts == []
    assert "Notified" not in result.stderr


def test_plan_posts_drift_to_slack_and_the_generic_webhook(
    notified: Notified, tmp_path: Path
) -> None:
    result = notified("plan", "-f", manifest(tmp_path), "--detailed-exitcode", "--notify")

    assert result.exit_code == 2  # as without --notify
    port = notified.receiver.port
    assert f"Notified Slack at 127.0.0.1:{port} (plan: drift found)." in result.stderr
    assert f"Notified webhook at localhost:{port} (plan: drift found)." in result.stderr
    [body] = notified.generic()
    assert body["format_version"] == "1"
    assert (body["event"], body["command"], body["exit_code"]) == ("drift", "plan", 2)
    assert body["summary"] == {"add": 3, "change": 0, "destroy": 0, "blocked": 0}
    assert body["changes"][0] == {
        "address": "project.shop",
        "action": "create",
        "outcome": None,
        "error": None,
    }
    assert body["changes_total"] == 3
    assert body["run"] == {
        "provider": "github",
        "url": "https://github.com/acme/infra/actions/runs/99",
        "repository": "acme/infra",
        "ref": "main",
        "commit": "feedfacefeedfacefeedfacefeedfacefeedface",
    }
    [slack] = notified.slack()
    assert slack["text"].splitlines() == [
        ":warning: *reconciler plan: drift found* in `acme/infra`",
        "Live state differs from the manifests. Plan: 3 to add, 0 to change, 0 to destroy.",
        "• create `project.shop`",
        "• create `app.shop/web`",
        "• create `variable.shop/web/production/LOG_LEVEL`",
        "<https://github.com/acme/infra/actions/runs/99|GitHub Actions run> · `main` · "
        "`feedfacefeed`",
    ]


def test_plan_in_sync_posts_only_with_notify_in_sync(notified: Notified, tmp_path: Path) -> None:
    path = manifest(tmp_path)
    assert notified("apply", "-f", path, "--auto-approve", "--no-notify").exit_code == 0

    quiet = notified("plan", "-f", path, "--notify", "--detailed-exitcode")
    assert quiet.exit_code == 0 and notified.receiver.posts == []

    asked = notified("plan", "-f", path, "--notify-in-sync", "--detailed-exitcode")
    assert asked.exit_code == 0
    [body] = notified.generic()
    assert (body["event"], body["text"]) == (
        "in_sync",
        "No changes. Live state matches the manifests.",
    )


def test_a_failed_plan_posts_failed_and_still_exits_1(notified: Notified, tmp_path: Path) -> None:
    result = notified(
        "plan", "-f", manifest(tmp_path), "--notify", env={"RECONCILER_API_KEY": "wrong-key"}
    )

    assert result.exit_code == 1
    assert result.stderr.index("Error:") < result.stderr.index("Notified")  # its error first
    [body] = notified.generic()
    assert body["event"] == "failed" and body["summary"] is None
    assert body["error"]["kind"] == "AuthenticationError"
    assert body["error"]["status"] == 401
    assert "wrong-key" not in str(body)


def test_an_invalid_manifest_posts_failed(notified: Notified, tmp_path: Path) -> None:
    path = manifest(tmp_path, "version: 1\nprojects:\n  shop:\n    name: 5\n")
    result = notified("plan", "-f", path, "--notify")

    assert result.exit_code == 1
    [body] = notified.generic()
    assert body["error"] == {
        "kind": "ManifestInvalid",
        "message": "the manifest has 1 problem",
        "operation": None,
        "status": None,
    }


# --- a notification never changes the exit status -------------------------------------------


def test_an_unreachable_webhook_is_a_warning_and_the_exit_status_stays(
    notified: Notified, time: FakeTime, tmp_path: Path
) -> None:
    notified.receiver.script(*[Reply(500)] * 6)

    result = notified("plan", "-f", manifest(tmp_path), "--detailed-exitcode", "--notify")

    assert result.exit_code == 2
    assert len(notified.receiver.posts) == 6  # 3 attempts to each of the two
    assert sorted(time.slept) == [1.0, 1.0, 2.0, 2.0]
    port = notified.receiver.port
    assert (
        f"Warning: could not notify Slack at 127.0.0.1:{port} (plan: drift found): "
        "HTTP 500 (3 attempts). The exit status is not affected."
    ) in result.stderr


def test_nothing_listening_does_not_fail_apply(
    emulator: Any, time: FakeTime, tmp_path: Path
) -> None:
    closed = WebhookReceiver()
    url = closed.url(SLACK_PATH)
    closed.stop()
    env = {**platform_env(emulator), **RUN, "RECONCILER_NOTIFY_SLACK_URL": url}

    result = run_cli(["apply", "-f", manifest(tmp_path), "--auto-approve"], env=env)

    assert result.exit_code == 0
    assert "could not notify Slack at 127.0.0.1" in result.stderr
    assert "could not connect (3 attempts)" in result.stderr
    assert SLACK_PATH not in result.output


def test_a_bug_in_the_notification_is_a_warning(
    notified: Notified, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr("reconciler.report.notify.events.plan_notification", broken)
    result = notified("plan", "-f", manifest(tmp_path), "--detailed-exitcode", "--notify")

    assert result.exit_code == 2
    assert "could not post the notification: internal error (RuntimeError)" in result.stderr


def test_bad_urls_are_named_by_their_variable_only(notified: Notified, tmp_path: Path) -> None:
    result = notified(
        "plan",
        "-f",
        manifest(tmp_path),
        "--notify",
        env={
            "RECONCILER_NOTIFY_WEBHOOK_URL": "http://hooks.example.com/generic/hook-token-SECRET-7"
        },
    )

    assert result.exit_code == 0
    assert (
        "Warning: RECONCILER_NOTIFY_WEBHOOK_URL is a plain http:// URL (only https:// is used, "
        "http:// only to this machine); nothing is sent to it." in result.stderr
    )
    assert len(notified.slack()) == 1 and notified.generic() == []
    assert "hooks.example.com" not in result.output


def test_notify_without_a_url_says_so(emulator: Any, tmp_path: Path) -> None:
    env = {
        **platform_env(emulator),
        "RECONCILER_NOTIFY_SLACK_URL": "",
        "RECONCILER_NOTIFY_WEBHOOK_URL": None,
    }
    result = run_cli(["plan", "-f", manifest(tmp_path), "--notify"], env=env)

    assert result.exit_code == 0
    assert (
        "Warning: --notify: neither RECONCILER_NOTIFY_SLACK_URL nor "
        "RECONCILER_NOTIFY_WEBHOOK_URL is set; no notification was posted."
    ) in result.stderr
    silent = run_cli(["apply", "-f", manifest(tmp_path), "--auto-approve"], env=env)
    assert silent.exit_code == 0 and "notif" not in silent.stderr.lower()


def test_no_notify_and_notify_in_sync_contradict(emulator: Any, tmp_path: Path) -> None:
    result = run_cli(
        ["plan", "-f", manifest(tmp_path), "--no-notify", "--notify-in-sync"],
        env=platform_env(emulator),
    )
    assert result.exit_code == 1
    assert "--no-notify and --notify-in-sync contradict each other" in result.stderr


# --- apply ----------------------------------------------------------------------------------


def test_apply_posts_applied_by_default(notified: Notified, tmp_path: Path) -> None:
    result = notified("apply", "-f", manifest(tmp_path), "--auto-approve")

    assert result.exit_code == 0
    [body] = notified.generic()
    assert (body["event"], body["exit_code"]) == ("applied", 0)
    assert body["text"] == "Apply complete! Resources: 3 added, 0 changed, 0 destroyed."
    assert body["summary"]["added"] == 3
    assert {c["outcome"] for c in body["changes"]} == {"done"}
    [slack] = notified.slack()
    assert slack["text"].startswith(
        ":white_check_mark: *reconciler apply: applied* in `acme/infra`"
    )

    again = notified("apply", "-f", manifest(tmp_path), "--auto-approve")
    assert again.exit_code == 0 and len(notified.generic()) == 1  # nothing to apply: no post
    notified("apply", "-f", manifest(tmp_path), "--auto-approve", "--notify-in-sync")
    assert notified.generic()[-1]["event"] == "in_sync"


def test_apply_no_notify_posts_nothing(notified: Notified, tmp_path: Path) -> None:
    result = notified("apply", "-f", manifest(tmp_path), "--auto-approve", "--no-notify")
    assert result.exit_code == 0 and notified.receiver.posts == []


def test_apply_posts_failed_with_what_failed(notified: Notified, tmp_path: Path) -> None:
    notified.emulator.set_faults(
        [{"operation": "environments.setEnvironmentVariables", "times": 1, "status": 400}]
    )
    result = notified("apply", "-f", manifest(tmp_path), "--auto-approve")

    assert result.exit_code == 1
    [body] = notified.generic()
    assert body["event"] == "failed"
    assert body["text"].startswith("Apply incomplete! Resources: 2 added")
    first = body["changes"][0]
    assert (first["address"], first["outcome"]) == (
        "variable.shop/web/production/LOG_LEVEL",
        "failed",
    )
    assert "400" in first["error"]
    assert ":x: *reconciler apply failed*" in notified.slack()[0]["text"]


def test_apply_refused_posts_failed(notified: Notified, tmp_path: Path) -> None:
    path = manifest(tmp_path)
    notified("apply", "-f", path, "--auto-approve", "--no-notify")
    Path(path).write_text(
        ONE_APP.replace("oci: {image: ghcr.io/acme/web:1.0}", "git: {repository: acme/web}")
    )

    result = notified("apply", "-f", path, "--auto-approve")  # a replace, without --allow-replace

    assert result.exit_code == 1
    [body] = notified.generic()
    assert body["event"] == "failed" and body["error"]["kind"] == "ApplyRefused"
    assert body["summary"] is None and body["changes"] == []


def test_apply_posts_rollout_failed_after_deploy(notified: Notified, tmp_path: Path) -> None:
    path = manifest(tmp_path, image_app("ghcr.io/acme/web:fail-1"))

    result = notified("apply", "-f", path, *FAST)

    assert result.exit_code == 1  # as without notifications
    [body] = notified.generic()
    assert body["event"] == "rollout_failed"
    assert body["text"].endswith("1 of 1 deployment(s) did not go live.")
    [deployment] = body["deployments"]
    assert deployment["address"] == "shop/web/production"
    assert (deployment["status"], deployment["error_code"], deployment["live"]) == (
        "failed",
        "build_failed",
        False,
    )
    assert "• `shop/web/production`: failed (build_failed)" in notified.slack()[0]["text"]


def test_apply_deploy_that_went_live_is_applied(notified: Notified, tmp_path: Path) -> None:
    result = notified("apply", "-f", manifest(tmp_path, image_app("ghcr.io/acme/web:1.0")), *FAST)

    assert result.exit_code == 0
    [body] = notified.generic()
    assert body["event"] == "applied"
    assert body["text"].endswith("1 of 1 deployment(s) went live.")


# --- the watch over a command's end ---------------------------------------------------------


def test_an_interrupted_apply_posts_failed(webhooks: WebhookReceiver, time: FakeTime) -> None:
    @click.command()
    @report_errors
    @notifies("apply", default=True)
    def stopped() -> None:
        outcome(_NoRun())
        raise KeyboardInterrupt

    result = CliRunner().invoke(
        stopped, [], env={"RECONCILER_NOTIFY_WEBHOOK_URL": webhooks.url(), **RUN}
    )

    assert result.exit_code == 130
    [post] = webhooks.posts
    assert post.json()["event"] == "failed"
    assert post.json()["error"]["kind"] == "Interrupted"


class _NoRun:
    plan = None
    applied = None
    deployed = None
