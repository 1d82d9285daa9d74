"""`reconciler test --live` against the emulator's gateway: the manifest is applied and
deployed, then each test's request is sent from its client IP to the serving deployment's host.

Loopback addresses other than 127.0.0.1 can be bound on this machine (Linux routes all of
127.0.0.0/8 to lo), so a policy on 127.0.0.2 is decided live; a documentation address cannot
be bound, so its test is skipped with the reason."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import UnexpectedResponse
from reconciler.policy_tests.live import sendable_from, serving_host
from tests.fixtures.cli import platform_env, run_cli
from tests.policy_tests.cli_helpers import Sample, firewall, logging, manifest_text, run_json, write
from tests.policy_tests.cli_helpers import deployed as deployed_with

SECOND_LOOPBACK = "127.0.0.2"

pytestmark = pytest.mark.skipif(
    sendable_from(SECOND_LOOPBACK) is not None, reason="127.0.0.2 cannot be bound here"
)

POLICIES = [
    logging("log-all"),
    firewall("block-second-loopback", {"remoteIp": {"in": [f"{SECOND_LOOPBACK}/32"]}}),
    firewall("block-admin", {"path": {"path": {"prefix": "/admin"}}}),
]
SENT = [
    Sample("home is open", "/", "allow", client_ip="127.0.0.1", query={"q": "1"}),
    Sample("admin is closed", "/admin/users", "deny", client_ip="127.0.0.1"),
    Sample("the second loopback is blocked", "/", "deny", client_ip=SECOND_LOOPBACK),
]
UNSENDABLE = Sample("from the internet", "/admin", "deny", client_ip="198.51.100.7")
OTHER_HOST = Sample("another host", "/", "allow", client_ip="127.0.0.1", headers={"HOST": "x.test"})


def deployed(emulator: Any, tmp_path: Path, samples: list[Sample]) -> Path:
    return deployed_with(emulator, tmp_path, POLICIES, samples)


def live(emulator: Any, manifest: Path, *args: str) -> tuple[int, Any]:
    return run_json(
        "-f", manifest, "--live", "--live-via", emulator.base_url, *args, env=platform_env(emulator)
    )


def test_live_results_agree_with_the_gateway_and_unsendable_ips_are_skipped(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = deployed(emulator, tmp_path, [*SENT, UNSENDABLE, OTHER_HOST])
    code, report = live(emulator, manifest)
    assert code == 0, report
    assert report["summary"] == {"passed": 3, "failed": 0, "skipped": 2}
    sent, skipped, other_host = report["results"][:3], report["results"][3], report["results"][4]
    assert [(r["name"], r["actual"], r["passed"]) for r in sent] == [
        ("home is open", "allow", True),
        ("admin is closed", "deny", True),
        ("the second loopback is blocked", "deny", True),
    ]
    [deployment] = emulator.call(
        "deployments.listDeployments", {"project": "shop", "app": "web"}
    ).json()["data"]
    assert all(r["host"] in deployment["domains"] for r in sent)
    assert (skipped["passed"], skipped["actual"]) == (None, None)
    assert skipped["skipped"].startswith("this machine cannot send from 198.51.100.7")
    assert other_host["skipped"].startswith("the test sets HOST, which a live request cannot")


def test_a_live_answer_that_differs_fails_and_junit_marks_the_skip(
    emulator: Any, tmp_path: Path
) -> None:
    wrong = Sample("admin is open?", "/admin/users", "allow", client_ip="127.0.0.1")
    manifest = deployed(emulator, tmp_path, [wrong, UNSENDABLE])
    code, report = live(emulator, manifest)
    assert code == 1
    assert (report["results"][0]["actual"], report["results"][0]["passed"]) == ("deny", False)
    text = run_cli(
        ["test", "-f", str(manifest), "--live", "--live-via", emulator.base_url],
        env=platform_env(emulator),
    )
    assert "expected allow, got deny" in text.stdout
    assert "answered HTTP 403" in text.stdout
    assert "SKIP  from the internet" in text.stdout
    junit = run_cli(
        [
            "test",
            "-f",
            str(manifest),
            "--live",
            "--live-via",
            emulator.base_url,
            "--format",
            "junit",
        ],
        env=platform_env(emulator),
    )
    assert '<skipped message="this machine cannot send from 198.51.100.7' in junit.stdout


def test_an_environment_without_a_ready_deployment_is_skipped(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write(tmp_path, manifest_text(POLICIES, SENT[:1], environment="preview"))
    applied = run_cli(["apply", "-f", str(manifest), "--auto-approve"], env=platform_env(emulator))
    assert applied.exit_code == 0, applied.output
    code, report = live(emulator, manifest)
    assert code == 0
    [result] = report["results"]
    assert result["skipped"] == "no ready deployment serves shop/web/preview"


def test_live_via_without_live_is_a_usage_error(tmp_path: Path) -> None:
    manifest = write(tmp_path, manifest_text(POLICIES, SENT[:1]))
    result = run_cli(["test", "-f", str(manifest), "--live-via", "http://127.0.0.1:1"])
    assert result.exit_code == 1
    assert "--live-via is for --live runs" in result.stderr


def test_live_against_the_in_process_platform_is_a_usage_error(tmp_path: Path) -> None:
    manifest = write(tmp_path, manifest_text(POLICIES, SENT[:1]))
    result = run_cli(["test", "-f", str(manifest), "--live", "--base-url", "local"])
    assert result.exit_code == 1
    assert "--base-url local has no server to receive them" in result.stderr


class GarbageDomains:
    """A platform whose serving deployment lists its domains as something else than names."""

    async def call(self, operation: str, body: Any) -> Any:
        if operation == "apps.getApp":
            return {"currentDeploymentId": "d_1"}
        return {"id": "d_1", "status": "ready", "domains": "web.example.com"}


def test_an_answer_without_host_names_is_reported_not_used() -> None:
    with pytest.raises(UnexpectedResponse, match="lists its domains as str, not host names"):
        asyncio.run(serving_host(GarbageDomains(), "shop/web/production"))


@pytest.mark.parametrize(
    ("via", "problem"),
    [
        ("127.0.0.1:8787", "it needs http:// or https:// and a host"),
        ("ftp://127.0.0.1", "it needs http:// or https:// and a host"),
        ("http://[::1", "it does not parse (Invalid port: ':1')"),
    ],
)
def test_a_live_via_that_is_no_http_url_is_a_usage_error(
    tmp_path: Path, via: str, problem: str
) -> None:
    manifest = write(tmp_path, manifest_text(POLICIES, SENT[:1]))
    result = run_cli(["test", "-f", str(manifest), "--live", "--live-via", via])
    assert result.exit_code == 1
    assert f"--live-via {via!r} is not a URL to send requests to: {problem}" in result.stderr
