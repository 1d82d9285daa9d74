"""Status gathering and rendering over spec-shaped responses (a fake client)."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from typing import Any

import pytest
from rich.console import Console

from reconciler.errors import UnexpectedResponse
from reconciler.manifest.model import App, Domain, Environment, Manifest, Project, Prune
from reconciler.report.status import format_age, render_json, render_rich, render_text
from reconciler.status import ATTACHED_ELSEWHERE, NOT_CREATED, gather_status
from tests.export.fakes import FakeClient, not_found

NOW = 1_700_000_000_000
MINUTE = 60_000


def manifest(*apps: App, slug: str = "shop") -> Manifest:
    return Manifest(version=1, prune=Prune(), projects=(Project(slug=slug, apps=apps),))


def deployment(
    id: str, status: str, *, age_ms: int = 0, current: bool = False, **extra: Any
) -> dict:
    return {
        "id": id,
        "status": status,
        "isCurrent": current,
        "environment": "production",
        "availableActions": [],
        "createdAt": NOW - age_ms,
        **extra,
    }


def client_for(
    app: dict, newest: dict[str, dict | None], deployments: dict[str, dict], domains=()
) -> FakeClient:
    def list_deployments(body: dict) -> list[dict]:
        assert body["limit"] == 1
        found = newest.get(body["environment"])
        return [found] if found else []

    def list_domains(body: dict) -> list[dict]:
        return [d for d in domains if d["env"] == body["environment"]]

    return FakeClient(
        {
            "apps.listApps": lambda body: [{"id": "app_web00000", **app}],
            "deployments.listDeployments": list_deployments,
            "deployments.getDeployment": lambda body: deployments[body["deploymentId"]],
            "domains.listDomains": list_domains,
            "domains.getDomain": not_found("domains.getDomain"),
        }
    )


def web(*envs: Environment) -> App:
    return App(slug="web", environments=envs)


def status_of(client: FakeClient, desired: Manifest):
    return asyncio.run(gather_status(desired, client))


@pytest.mark.parametrize(
    ("age_ms", "text"),
    [
        (0, "0s"),
        (59_999, "59s"),
        (MINUTE, "1m"),
        (5 * MINUTE, "5m"),
        (3 * 60 * MINUTE, "3h"),
        (47 * 60 * MINUTE, "1d"),
        (2 * 24 * 60 * MINUTE, "2d"),
        (-MINUTE, "0s"),
    ],
)
def test_age_in_the_largest_whole_unit(age_ms: int, text: str) -> None:
    assert format_age(NOW - age_ms, NOW) == text


def test_production_current_is_newest_costs_no_extra_read() -> None:
    ready = deployment(
        "d_1", "ready", age_ms=5 * MINUTE, current=True, docker={"image": "nginx:1.27"}
    )
    client = client_for({"slug": "web", "currentDeploymentId": "d_1"}, {"production": ready}, {})
    report = status_of(client, manifest(web(Environment("production"))))
    (env,) = report.environments
    assert env.serving is not None and env.serving.id == "d_1" and env.newer is None
    assert env.serving.source == "nginx:1.27"
    assert "deployments.getDeployment" not in client.operations()
    text = render_text(report, NOW)
    assert "shop/web/production  d_1" in text
    assert "ready" in text and "nginx:1.27" in text and "5m" in text and "current" in text


def test_production_newer_deployment_in_progress_is_shown_beside_the_current() -> None:
    current = deployment(
        "d_1",
        "ready",
        age_ms=2 * 24 * 60 * MINUTE,
        current=True,
        git={"commitSha": "0123456789abcdef", "branch": "main"},
    )
    building = deployment("d_2", "building", age_ms=MINUTE, git={"commitSha": "fedcba9876543210"})
    client = client_for(
        {"slug": "web", "currentDeploymentId": "d_1"}, {"production": building}, {"d_1": current}
    )
    report = status_of(client, manifest(web(Environment("production"))))
    (env,) = report.environments
    assert env.serving.id == "d_1" and env.newer.id == "d_2"
    assert env.serving.source == "0123456 (main)"
    assert not env.newer.is_final
    text = render_text(report, NOW)
    assert "building (in progress)" in text and "newer, not serving" in text and "2d" in text
    data = json.loads(render_json(report, NOW))["environments"][0]
    assert data["deployment"]["id"] == "d_1" and data["deployment"]["age"] == "2d"
    assert data["newerDeployment"]["status"] == "building"
    assert data["newerDeployment"]["final"] is False


def test_first_production_deployment_failed_with_its_error() -> None:
    failed = deployment(
        "d_1",
        "failed",
        age_ms=3 * 60 * MINUTE,
        docker={"image": "app:fail-1"},
        error={"code": "build_failed", "step": "building", "message": "exit 1"},
    )
    client = client_for({"slug": "web"}, {"production": failed}, {})
    report = status_of(client, manifest(web(Environment("production"))))
    (env,) = report.environments
    assert env.serving is None and env.newer.error_code == "build_failed"
    text = render_text(report, NOW)
    assert "nothing serving yet" in text
    assert "error build_failed at building: exit 1" in text
    data = json.loads(render_json(report, NOW))["environments"][0]
    assert data["deployment"] is None
    assert data["newerDeployment"]["error"] == {
        "code": "build_failed",
        "step": "building",
        "message": "exit 1",
    }


def test_no_deployments_yet_for_either_environment_of_an_app_naming_none() -> None:
    client = client_for({"slug": "web"}, {}, {})
    report = status_of(client, manifest(web()))
    assert [e.environment for e in report.environments] == ["production", "preview"]
    assert all(e.serving is None and e.newer is None for e in report.environments)
    assert render_text(report, NOW).count("no deployments yet") == 2


def test_rolled_back_production_warns_and_preview_shows_its_newest() -> None:
    target = deployment("d_1", "ready", age_ms=60 * MINUTE, current=True, docker={"image": "app:1"})
    later = deployment("d_2", "ready", age_ms=MINUTE, docker={"image": "app:2"})
    preview = deployment(
        "d_3", "ready", age_ms=MINUTE, docker={"image": "app:3"}, environment="preview"
    )
    client = client_for(
        {"slug": "web", "currentDeploymentId": "d_1", "isRolledBack": True},
        {"production": later, "preview": preview},
        {"d_1": target},
    )
    report = status_of(client, manifest(web(Environment("production"), Environment("preview"))))
    production, preview_env = report.environments
    assert production.rolled_back and not preview_env.rolled_back
    assert preview_env.serving.id == "d_3" and preview_env.newer is None
    text = render_text(report, NOW)
    assert "rolled back" in text
    assert "Warning: shop/web is rolled back" in text
    assert json.loads(render_json(report, NOW))["environments"][0]["rolledBack"] is True


def test_app_or_project_not_created_yet() -> None:
    client = FakeClient(
        {
            "apps.listApps": not_found("apps.listApps"),
            "domains.getDomain": not_found("domains.getDomain"),
        }
    )
    desired = manifest(web(Environment("production", domains=(Domain("shop.example.com"),))))
    report = status_of(client, desired)
    (env,) = report.environments
    assert not env.app_exists
    assert [(d.host, d.status) for d in env.domains] == [("shop.example.com", NOT_CREATED)]
    assert client.operations() == ["apps.listApps", "domains.getDomain"]
    assert "app not created" in render_text(report, NOW)


def domain(host: str, status: str, *, error: str | None = None, verified=(False, False)) -> dict:
    records = [
        {
            "type": "CNAME",
            "name": host,
            "value": "edge.platform.test",
            "ttl": 300,
            "verified": verified[0],
        },
        {
            "type": "TXT",
            "name": f"_verify.{host}",
            "value": "token-1",
            "ttl": 300,
            "verified": verified[1],
        },
    ]
    result = {
        "id": f"dom_{host}",
        "domain": host,
        "status": status,
        "dnsRecords": records,
        "env": "production",
    }
    if error:
        result["verificationError"] = error
    return result


def test_every_domain_status_with_records_not_seen() -> None:
    live = [
        domain("a.example.com", "pending"),
        domain("b.example.com", "verifying", verified=(True, False)),
        domain("c.example.com", "verified", verified=(True, True)),
        domain("d.example.com", "failed", error="TXT record not found after 24 hours"),
        domain("old.example.com", "verified", verified=(True, True)),
    ]
    hosts = ("a.example.com", "b.example.com", "c.example.com", "d.example.com", "new.example.com")
    desired = manifest(web(Environment("production", domains=tuple(Domain(h) for h in hosts))))
    client = client_for({"slug": "web"}, {}, {}, domains=live)
    report = status_of(client, desired)
    (env,) = report.environments
    by_host = {d.host: d for d in env.domains}
    assert {h: d.status for h, d in by_host.items()} == {
        "a.example.com": "pending",
        "b.example.com": "verifying",
        "c.example.com": "verified",
        "d.example.com": "failed",
        "new.example.com": NOT_CREATED,
        "old.example.com": "verified",
    }
    assert [r.type for r in by_host["a.example.com"].records_not_seen] == ["CNAME", "TXT"]
    assert [r.type for r in by_host["b.example.com"].records_not_seen] == ["TXT"]
    assert by_host["c.example.com"].records_not_seen == ()
    assert by_host["old.example.com"].in_manifest is False
    assert by_host["old.example.com"].removed_by_next_apply
    assert not by_host["a.example.com"].removed_by_next_apply
    text = render_text(report, NOW)
    assert "TXT record not found after 24 hours" in text
    assert re.search(
        r"old\.example\.com +shop/web/production +verified +not in the manifest: the next apply",
        text,
    )
    assert "run `reconciler apply`" in text
    records_section = text.split("DNS records to create")[1]
    assert "_verify.b.example.com" in records_section
    assert "c.example.com" not in records_section  # verified: nothing to do
    data = json.loads(render_json(report, NOW))["environments"][0]["domains"]
    failed = next(d for d in data if d["domain"] == "d.example.com")
    assert failed["verificationError"] == "TXT record not found after 24 hours"
    assert failed["dnsRecordsNotSeen"][0] == {
        "type": "CNAME",
        "name": "d.example.com",
        "value": "edge.platform.test",
        "ttl": 300,
    }


def test_live_hosts_compare_as_the_plan_compares_them() -> None:
    """A live host in capitals with a trailing dot is the manifest's host (the plan reads it
    so, `LiveDomain`): status shows it once, found, not as a new host beside an old one."""
    live = [domain("Shop.Example.com.", "verified", verified=(True, True))]
    desired = manifest(web(Environment("production", domains=(Domain("shop.example.com"),))))
    report = status_of(client_for({"slug": "web"}, {}, {}, domains=live), desired)
    (info,) = report.environments[0].domains
    assert (info.host, info.status, info.in_manifest) == ("shop.example.com", "verified", True)


def test_a_live_domain_without_a_host_is_refused_as_the_plan_refuses_it() -> None:
    nameless = {k: v for k, v in domain("a.example.com", "pending").items() if k != "domain"}
    client = client_for({"slug": "web"}, {}, {}, domains=[nameless])
    with pytest.raises(UnexpectedResponse, match=r"domains\.listDomains: .* `domain` string"):
        status_of(client, manifest(web(Environment("production"))))


def test_reads_are_one_list_per_project_and_two_per_environment() -> None:
    client = client_for({"slug": "web"}, {}, {})
    desired = manifest(web(Environment("production"), Environment("preview")), App(slug="api"))
    client.handlers["apps.listApps"] = lambda body: [
        {"id": "app_web00000", "slug": "web"},
        {"id": "app_api00000", "slug": "api"},
    ]
    status_of(client, desired)
    assert Counter(client.operations()) == {
        "apps.listApps": 1,
        "deployments.listDeployments": 4,
        "domains.listDomains": 4,
    }


def test_rich_tables_carry_the_same_rows() -> None:
    failed = deployment(
        "d_9", "failed", docker={"image": "app:[x]"}, error={"code": "cpu_quota_exceeded"}
    )
    client = client_for(
        {"slug": "web"}, {"production": failed}, {}, domains=[domain("a.example.com", "pending")]
    )
    report = status_of(client, manifest(web(Environment("production"))))
    console = Console(record=True, width=200, color_system=None)
    render_rich(report, NOW, console)
    out = console.export_text()
    assert "Deployments" in out and "Domains" in out and "DNS records to create" in out
    assert "app:[x]" in out  # markup in values is escaped, not interpreted
    assert "error cpu_quota_exceeded" in out
    assert "edge.platform.test" in out
    narrow = Console(record=True, width=40, color_system=None)
    render_rich(report, NOW, narrow)
    # records are never folded or cut on a narrow terminal: people copy them
    assert "_verify.a.example.com  token-1" in narrow.export_text().replace("\n", "")


def test_pinned_ids_find_objects_whose_rename_is_pending() -> None:
    client = client_for({"id": "app_web00001", "slug": "old-web"}, {}, {})
    desired = Manifest(
        version=1,
        prune=Prune(),
        projects=(
            Project(
                slug="shop",
                id="proj_shop0001",
                apps=(
                    App(slug="web", id="app_web00001", environments=(Environment("production"),)),
                ),
            ),
        ),
    )
    (env,) = status_of(client, desired).environments
    assert env.app_exists and env.address == "shop/web/production"
    assert client.calls[0] == ("apps.listApps", {"project": "proj_shop0001"})
    reads = {op: body for op, body in client.calls[1:]}
    assert reads["deployments.listDeployments"]["app"] == "old-web"
    assert reads["domains.listDomains"] == {
        "project": "proj_shop0001",
        "app": "old-web",
        "environment": "production",
    }


def test_live_domains_of_an_environment_whose_domains_are_unmanaged_or_not_pruned() -> None:
    live = [domain("old.example.com", "verified", verified=(True, True))]
    unmanaged = status_of(
        client_for({"slug": "web"}, {}, {}, domains=live), manifest(web(Environment("production")))
    )
    (info,) = unmanaged.environments[0].domains
    assert info.in_manifest is None and not info.removed_by_next_apply
    assert "not in the manifest" not in render_text(unmanaged, NOW)
    assert (
        json.loads(render_json(unmanaged, NOW))["environments"][0]["domains"][0]["inManifest"]
        is None
    )

    kept = Manifest(
        version=1,
        prune=Prune(domains=False),
        projects=(Project(slug="shop", apps=(web(Environment("production", domains=())),)),),
    )
    report = status_of(client_for({"slug": "web"}, {}, {}, domains=live), kept)
    (info,) = report.environments[0].domains
    assert info.in_manifest is False and not info.removed_by_next_apply
    assert "prune.domains is off: left alone" in render_text(report, NOW)


def test_long_error_messages_are_one_short_line_in_tables_and_whole_in_json() -> None:
    message = "line one\nline two " + "x" * 300
    failed = deployment("d_1", "failed", error={"code": "unknown", "message": message})
    report = status_of(
        client_for({"slug": "web"}, {"production": failed}, {}),
        manifest(web(Environment("production"))),
    )
    row = next(line for line in render_text(report, NOW).splitlines() if "d_1" in line)
    assert "error unknown: line one line two xxx" in row and row.endswith("…")
    assert len(row) < 250
    data = json.loads(render_json(report, NOW))["environments"][0]["newerDeployment"]
    assert data["error"]["message"] == message


ELSEWHERE = {
    "id": "dom_blog",
    "domain": "blog.example.com",
    "status": "verified",
    "projectId": "proj_blog0001",
    "appId": "app_site0001",
    "environmentId": "env_site0001",
}


def _attached_client(*, readable: bool = True) -> FakeClient:
    """blog.example.com is not in shop/web/production but attached to blog/site/production."""
    client = client_for({"slug": "web"}, {}, {})
    client.handlers["domains.getDomain"] = lambda body: (
        ELSEWHERE if body["domain"] == "blog.example.com" else not_found("x")(body)
    )
    slugs = {
        "projects.getProject": {"slug": "blog"},
        "apps.getApp": {"slug": "site"},
        "environments.getEnvironment": {"slug": "production"},
    }
    for operation, answer in slugs.items():
        client.handlers[operation] = (
            (lambda body, answer=answer: answer) if readable else not_found(operation)
        )
    return client


def test_a_host_attached_to_another_project_says_where() -> None:
    hosts = (Domain("blog.example.com"), Domain("new.example.com"))
    client = _attached_client()
    report = status_of(client, manifest(web(Environment("production", domains=hosts))))
    by_host = {d.host: d for d in report.environments[0].domains}
    assert by_host["new.example.com"].status == NOT_CREATED
    blog = by_host["blog.example.com"]
    assert (blog.status, blog.attached_to) == (ATTACHED_ELSEWHERE, "blog/site/production")
    text = render_text(report, NOW)
    assert re.search(
        r"blog\.example\.com +shop/web/production +attached elsewhere +attached to "
        r"blog/site/production; a domain can be in only one environment",
        text,
    ), text
    assert "remove it there first" in text
    data = json.loads(render_json(report, NOW))["environments"][0]["domains"]
    found = next(d for d in data if d["domain"] == "blog.example.com")
    assert (found["status"], found["attachedTo"]) == ("attached elsewhere", "blog/site/production")
    assert next(d for d in data if d["domain"] == "new.example.com")["attachedTo"] is None
    # looked up only for hosts that are not where the manifest wants them
    assert [b["domain"] for op, b in client.calls if op == "domains.getDomain"] == [
        "blog.example.com",
        "new.example.com",
    ]


def test_where_a_host_is_attached_falls_back_to_ids_when_the_key_cannot_read_there() -> None:
    client = _attached_client(readable=False)
    desired = manifest(web(Environment("production", domains=(Domain("blog.example.com"),))))
    (blog,) = status_of(client, desired).environments[0].domains
    assert blog.status == ATTACHED_ELSEWHERE
    assert blog.attached_to == (
        "project proj_blog0001, app app_site0001, environment env_site0001 (outside this manifest)"
    )


def test_a_host_attached_to_another_environment_of_the_manifest_moves_on_the_next_apply() -> None:
    moving = dict(ELSEWHERE, domain="shop.example.com", env="preview")
    client = client_for({"slug": "web"}, {}, {}, domains=[moving])
    client.handlers["domains.getDomain"] = lambda body: moving
    client.handlers["projects.getProject"] = lambda body: {"slug": "shop"}
    client.handlers["apps.getApp"] = lambda body: {"slug": "web"}
    client.handlers["environments.getEnvironment"] = lambda body: {"slug": "preview"}
    desired = manifest(
        web(
            Environment("production", domains=(Domain("shop.example.com"),)),
            Environment("preview", domains=()),
        )
    )
    report = status_of(client, desired)
    production = report.environments[0]
    (info,) = production.domains
    assert (info.status, info.attached_to) == (ATTACHED_ELSEWHERE, "shop/web/preview")
    assert "attached to shop/web/preview: the next apply moves it here" in render_text(report, NOW)
