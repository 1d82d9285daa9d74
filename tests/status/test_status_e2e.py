"""`reconciler status` against the emulator, walking deployments and domains through every
state with the emulator's clock and DNS table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.emulator.app import EmulatorConfig
from tests.export.seed import ok
from tests.fixtures.cli import platform_env, run_cli, shop_manifest

KEY = "status-test-key"
STEP_MS = 60_000  # one minute per deployment step and before a domain check begins
MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: "nginx:1.27"}
      environments:
        production:
          domains: [a.example.com, b.example.com, c.example.com, d.example.com, e.example.com]
        preview: {}
    ghost:
      name: Ghost
      oci: {image: "ghost:5"}
    """
)
PRODUCTION = {"project": "shop", "app": "web", "environment": "production"}
PREVIEW = {**PRODUCTION, "environment": "preview"}


@pytest.fixture
def platform(start_emulator) -> Any:
    server = start_emulator(EmulatorConfig(dev_key=KEY, step_ms=STEP_MS))
    ok(server, "projects.createProject", {"name": "Shop", "slug": "shop"})
    ok(
        server,
        "apps.createApp",
        {"project": "shop", "name": "Web", "slug": "web", "oci": {"image": "nginx:1.27"}},
    )
    return server


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "platform.yaml"
    path.write_text(MANIFEST)
    return path


def status(server: Any, manifest: Path, *args: str) -> Any:
    env = platform_env(server, KEY)
    result = run_cli(["status", "-f", str(manifest), *args], env=env)
    assert result.exit_code == 0, result.output
    return result


def environments(server: Any, manifest: Path) -> dict[str, dict[str, Any]]:
    document = json.loads(status(server, manifest, "--format", "json").stdout)
    assert document["format_version"] == "1"
    return {f"{e['app']}/{e['environment']}": e for e in document["environments"]}


def deploy(server: Any, where: dict[str, str], image: str) -> str:
    body = {**where, "image": {"dockerImage": image}}
    return ok(server, "deployments.createDeployment", body)["deploymentId"]


def test_deployment_states_none_in_progress_ready_failed_rolled_back(platform, manifest) -> None:
    envs = environments(platform, manifest)
    assert set(envs) == {"web/production", "web/preview", "ghost/production", "ghost/preview"}
    assert envs["ghost/production"]["appExists"] is False
    assert envs["web/production"]["deployment"] is None
    assert envs["web/production"]["newerDeployment"] is None
    assert "no deployments yet" in status(platform, manifest).stdout

    first = deploy(platform, PRODUCTION, "nginx:1.27")
    envs = environments(platform, manifest)
    in_progress = envs["web/production"]["newerDeployment"]
    assert envs["web/production"]["deployment"] is None
    assert in_progress["id"] == first and in_progress["final"] is False
    assert in_progress["image"] == "nginx:1.27"
    assert "(in progress)" in status(platform, manifest).stdout

    platform.advance_clock(10 * STEP_MS)
    envs = environments(platform, manifest)
    ready = envs["web/production"]["deployment"]
    assert (ready["id"], ready["status"], ready["isCurrent"]) == (first, "ready", True)
    assert envs["web/production"]["newerDeployment"] is None

    failing = deploy(platform, PRODUCTION, "nginx:fail-1")
    platform.advance_clock(10 * STEP_MS)
    envs = environments(platform, manifest)
    assert envs["web/production"]["deployment"]["id"] == first
    failed = envs["web/production"]["newerDeployment"]
    assert (failed["id"], failed["status"]) == (failing, "failed")
    assert failed["error"]["code"] == "build_failed"
    assert "error build_failed" in status(platform, manifest).stdout

    later = deploy(platform, PRODUCTION, "nginx:1.28")
    platform.advance_clock(10 * STEP_MS)
    assert environments(platform, manifest)["web/production"]["deployment"]["id"] == later
    ok(platform, "deployments.rollbackDeployment", {"deploymentId": first})
    envs = environments(platform, manifest)
    production = envs["web/production"]
    assert production["rolledBack"] is True
    assert production["deployment"]["id"] == first
    assert production["newerDeployment"]["id"] == later
    text = status(platform, manifest).stdout
    assert "rolled back" in text and "Warning: shop/web is rolled back" in text

    preview = deploy(platform, PREVIEW, "nginx:preview")
    before = len(platform.requests())
    envs = environments(platform, manifest)
    reads = [r["operation"] for r in platform.requests()[before:]]
    assert all(op.split(".")[1].startswith(("list", "get")) for op in reads), reads
    assert envs["web/preview"]["deployment"]["id"] == preview
    assert envs["web/preview"]["rolledBack"] is False


def test_a_stopped_preview_and_a_superseded_production_deployment(platform, manifest) -> None:
    preview = deploy(platform, PREVIEW, "nginx:preview")
    platform.advance_clock(10 * STEP_MS)
    ok(platform, "deployments.stopDeployment", {"deploymentId": preview})
    stopped = environments(platform, manifest)["web/preview"]["deployment"]
    assert (stopped["id"], stopped["status"], stopped["final"]) == (preview, "stopped", True)
    line = next(x for x in status(platform, manifest).stdout.splitlines() if preview in x)
    assert "stopped" in line and "(in progress)" not in line

    # A second deployment replaces the first before it starts: the first never ran, so
    # status shows the second as serving and says nothing of the superseded one.
    superseded = deploy(platform, PRODUCTION, "nginx:1.27")
    latest = deploy(platform, PRODUCTION, "nginx:1.28")
    platform.advance_clock(10 * STEP_MS)
    listed = ok(platform, "deployments.listDeployments", {**PRODUCTION, "limit": 10})
    assert {d["id"]: d["status"] for d in listed}[superseded] == "superseded"
    production = environments(platform, manifest)["web/production"]
    assert production["deployment"]["id"] == latest
    assert production["newerDeployment"] is None
    assert superseded not in status(platform, manifest).stdout


def create_domain(server: Any, host: str) -> list[dict[str, Any]]:
    return ok(server, "domains.createDomain", {**PRODUCTION, "domain": host})["dnsRecords"]


def test_every_domain_status_with_records_not_seen(platform, manifest) -> None:
    create_domain(platform, "d.example.com")
    platform.advance_clock(24 * 60 * 60 * 1000 + STEP_MS)  # d: 24 hours without records
    create_domain(platform, "b.example.com")
    c_records = create_domain(platform, "c.example.com")
    platform.advance_clock(2 * STEP_MS)  # b and c: checks have begun
    platform.set_dns([{k: r[k] for k in ("type", "name", "value")} for r in c_records])
    create_domain(platform, "a.example.com")  # a: just created
    create_domain(platform, "z.example.com")  # live, not in the manifest

    domains = {
        d["domain"]: d for d in environments(platform, manifest)["web/production"]["domains"]
    }
    assert {host: d["status"] for host, d in domains.items()} == {
        "a.example.com": "pending",
        "b.example.com": "verifying",
        "c.example.com": "verified",
        "d.example.com": "failed",
        "e.example.com": "not created",
        "z.example.com": "pending",
    }
    assert domains["c.example.com"]["dnsRecordsNotSeen"] == []
    assert len(domains["a.example.com"]["dnsRecordsNotSeen"]) == 2
    assert {r["type"] for r in domains["b.example.com"]["dnsRecordsNotSeen"]} == {"CNAME", "TXT"}
    assert "24 hours" in domains["d.example.com"]["verificationError"]
    assert domains["z.example.com"]["inManifest"] is False
    assert domains["e.example.com"]["inManifest"] is True

    text = status(platform, manifest).stdout
    records = text.split("DNS records to create")[1]
    assert "_platform-verification.b.example.com" in records
    assert "c.example.com" not in records
    assert "The DNS records were not found within 24 hours" in text
    assert "not in the manifest" in text


def test_a_domain_attached_to_another_project_says_where(platform, manifest) -> None:
    """The plan says where a host it adds is attached; status says the same, not "not
    created" (the host exists, in blog/site/production, so apply would get a 409)."""
    ok(platform, "projects.createProject", {"name": "Blog", "slug": "blog"})
    ok(
        platform,
        "apps.createApp",
        {"project": "blog", "name": "Site", "slug": "site", "oci": {"image": "ghost:5"}},
    )
    elsewhere = {"project": "blog", "app": "site", "environment": "production"}
    ok(platform, "domains.createDomain", {**elsewhere, "domain": "e.example.com"})
    domains = {
        d["domain"]: d for d in environments(platform, manifest)["web/production"]["domains"]
    }
    assert domains["e.example.com"]["status"] == "attached elsewhere"
    assert domains["e.example.com"]["attachedTo"] == "blog/site/production"
    assert domains["e.example.com"]["movedByNextApply"] is False
    assert domains["a.example.com"]["status"] == "not created"  # free: created by apply
    text = status(platform, manifest).stdout
    assert "attached to blog/site/production; a domain can be in only one environment" in text
    plan = run_cli(["plan", "-f", str(manifest)], env=platform_env(platform, KEY)).stdout
    assert "e.example.com is already attached to blog/site/production" in plan


def test_errors_are_messages(platform, manifest, tmp_path: Path) -> None:
    env = platform_env(platform, "wrong")
    result = run_cli(["status", "-f", str(manifest)], env=env)
    assert result.exit_code == 1 and "RECONCILER_API_KEY" in result.stderr
    assert "Traceback" not in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nprojects: {Shop!: {}}\n")
    invalid = run_cli(["status", "-f", str(bad)], env=env)
    assert invalid.exit_code == 1 and "bad.yaml:2:" in invalid.output


def test_verbose_status_never_logs_the_key(platform, manifest) -> None:
    env = platform_env(platform, KEY)
    result = run_cli(["status", "-f", str(manifest), "-v"], env=env)
    assert result.exit_code == 0, result.output
    assert "apps.listApps" in result.stderr
    assert KEY not in result.output
