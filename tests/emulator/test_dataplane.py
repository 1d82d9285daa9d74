"""The gateway in front of ready deployments: routing by Host, the policies a deployment copied
at creation, 403 / 200 / 404 answers, and the client IP taken from the connection."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import re2

from reconciler.emulator.app import EmulatorConfig
from tests.emulator.helpers import deploy, get_deployment, make_app, make_project, ok, target
from tests.fixtures.emulator import STEP_MS, EmulatorAsgi, EmulatorServer

DONE = 20 * STEP_MS  # enough clock for any deployment to finish
DENY = {"action": "ACTION_DENY"}
DENY_ADMIN = {
    "name": "deny-admin",
    "enabled": True,
    "match": [{"path": {"path": {"prefix": "/admin"}}}],
    "firewall": DENY,
}
LOG_ALL = {"name": "log-all", "enabled": True, "logging": {"requestHeaders": True}}


@pytest.fixture
def web(emulator: EmulatorServer) -> EmulatorServer:
    make_project(emulator)
    make_app(emulator)
    return emulator


def set_policies(
    emulator: EmulatorServer, policies: list[dict[str, Any]], env: str = "production"
) -> None:
    ok(emulator.call("gateway.setPolicies", {**target(env), "policies": policies}))


def ready(emulator: EmulatorServer, env: str = "production") -> dict[str, Any]:
    deployment_id = deploy(emulator, env)
    emulator.advance_clock(DONE)
    deployment = get_deployment(emulator, deployment_id)
    assert deployment["status"] == "ready"
    return deployment


def visit(emulator: EmulatorServer, host: str, path: str = "/", **extra: Any) -> httpx.Response:
    return emulator.http.get(path, headers={"Host": host, **extra.pop("headers", {})}, **extra)


def own_host(deployment: dict[str, Any]) -> str:
    return deployment["domains"][0]  # <app>-<id>-<project>.platform-emulator.test


def test_blocked_request_is_403_and_names_the_policy(web: EmulatorServer) -> None:
    set_policies(web, [LOG_ALL, DENY_ADMIN])
    deployment = ready(web)
    blocked = visit(web, own_host(deployment), "/admin/users?x=1")
    assert blocked.status_code == 403
    assert blocked.json()["blockedBy"] == {"index": 1, "name": "deny-admin"}
    assert blocked.json()["loggedBy"] == [{"index": 0, "name": "log-all"}]
    allowed = visit(web, own_host(deployment), "/shop")
    assert allowed.status_code == 200
    assert allowed.json() == {
        "host": own_host(deployment),
        "deployment": {
            "id": deployment["id"],
            "project": "shop",
            "app": "web",
            "environment": "production",
        },
        "blockedBy": None,
        "loggedBy": [{"index": 0, "name": "log-all"}],
    }


def test_every_host_of_a_ready_deployment_is_served_whatever_the_case_port_or_trailing_dot(
    web: EmulatorServer,
) -> None:
    set_policies(web, [DENY_ADMIN])
    deployment = ready(web)
    assert len(deployment["domains"]) == 2  # its own host and the environment's
    for host in deployment["domains"]:
        for written in (host, host.upper() + ":8787", host + "."):
            answer = visit(web, written, "/admin")
            assert answer.status_code == 403, written
            assert answer.json()["deployment"]["id"] == deployment["id"]


def test_a_deployment_keeps_the_policies_it_copied_at_creation(web: EmulatorServer) -> None:
    set_policies(web, [DENY_ADMIN])
    first = ready(web)
    set_policies(web, [])  # reaches traffic only from the next deployment
    assert visit(web, own_host(first), "/admin").status_code == 403
    second = ready(web)
    assert visit(web, own_host(second), "/admin").status_code == 200
    assert visit(web, own_host(first), "/admin").status_code == 403
    environment_host = "web-shop.platform-emulator.test"  # follows the current deployment
    assert visit(web, environment_host, "/admin").json()["deployment"]["id"] == second["id"]


def test_paths_of_the_api_on_a_served_host_go_to_the_gateway(web: EmulatorServer) -> None:
    deployment = ready(web)
    answer = web.http.post(
        "/v1/projects.listProjects",
        json={},
        headers={"Host": own_host(deployment), "Authorization": f"Bearer {web.api_key}"},
    )
    assert answer.status_code == 200 and answer.json()["deployment"]["id"] == deployment["id"]
    assert "data" not in answer.json()
    assert [r["operation"] for r in web.requests()][-1] == "deployments.getDeployment"


def test_platform_hosts_no_ready_deployment_answers_on_are_404(start_emulator) -> None:
    # a long step, so that no wall-clock delay under load finishes the deployment early
    slow = start_emulator(EmulatorConfig(dev_key="k", step_ms=60_000))
    make_project(slow)
    make_app(slow)
    building = get_deployment(slow, deploy(slow))
    assert building["status"] == "pending"
    for host in (
        own_host(building),
        "web-shop.platform-emulator.test",
        "nothing.platform-emulator.test",
    ):
        answer = visit(slow, host)
        assert answer.status_code == 404, host
        assert answer.headers["content-type"] == "application/problem+json"
        assert host in answer.json()["detail"]
    ok(slow.call("domains.createDomain", {**target(), "domain": "shop.example.com"}))
    slow.advance_clock(20 * 60_000)
    assert get_deployment(slow, building["id"])["status"] == "ready"
    assert visit(slow, own_host(building)).status_code == 200
    assert visit(slow, "shop.example.com").status_code == 404  # the domain is not verified


def test_a_verified_custom_domain_is_served_by_the_deployment_serving_its_environment(
    web: EmulatorServer,
) -> None:
    created = ok(web.call("domains.createDomain", {**target(), "domain": "shop.example.com"}))
    web.set_dns(
        [{k: r[k] for k in ("type", "name", "value")} for r in created["data"]["dnsRecords"]]
    )
    set_policies(web, [DENY_ADMIN])
    deployment = ready(web)
    assert "shop.example.com" in deployment["domains"]
    assert visit(web, "Shop.Example.com", "/admin").status_code == 403
    assert visit(web, "shop.example.com", "/").json()["deployment"]["id"] == deployment["id"]


def test_preview_hosts_follow_the_newest_ready_preview_and_a_stopped_one_is_not_served(
    web: EmulatorServer,
) -> None:
    older = ready(web, "preview")
    set_policies(web, [DENY_ADMIN], "preview")
    newer = ready(web, "preview")
    assert visit(web, own_host(older), "/admin").status_code == 200
    assert visit(web, own_host(newer), "/admin").status_code == 403
    ok(web.call("deployments.stopDeployment", {"deploymentId": newer["id"]}), 202)
    assert visit(web, own_host(newer), "/").status_code == 404


def test_the_api_host_keeps_working(web: EmulatorServer) -> None:
    ready(web)
    for host in (None, "localhost", "127.0.0.1:1"):
        headers = {"Authorization": f"Bearer {web.api_key}", **({"Host": host} if host else {})}
        answer = web.http.post("/v1/projects.listProjects", json={}, headers=headers)
        assert [p["slug"] for p in ok(answer)["data"]] == ["shop"]


def test_the_client_ip_is_the_connections_not_a_header() -> None:
    office_only = {
        "name": "office-only",
        "enabled": True,
        "match": [{"remoteIp": {"notIn": ["203.0.113.0/24", "2001:db8::/32"]}}],
        "firewall": DENY,
    }

    async def scenario() -> dict[str, int]:
        emulator = EmulatorAsgi()
        async with emulator.client() as api:
            await api.post("/v1/projects.createProject", json={"name": "S", "slug": "shop"})
            app = {"project": "shop", "name": "W", "slug": "web", "oci": {"image": "nginx:1"}}
            await api.post("/v1/apps.createApp", json=app)
            env = {"project": "shop", "app": "web", "environment": "production"}
            await api.post("/v1/gateway.setPolicies", json={**env, "policies": [office_only]})
            created = await api.post(
                "/v1/deployments.createDeployment",
                json={**env, "image": {"dockerImage": "nginx:1"}},
            )
            await api.post("/_emulator/clock", json={"advanceMs": 60_000})
            body = {"deploymentId": created.json()["data"]["deploymentId"]}
            host = (await api.post("/v1/deployments.getDeployment", json=body)).json()["data"][
                "domains"
            ][0]
        statuses = {}
        for client_ip in ("203.0.113.9", "::ffff:203.0.113.9", "2001:db8::7", "192.0.2.1"):
            transport = httpx.ASGITransport(app=emulator.app, client=(client_ip, 4321))
            async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as gateway:
                answer = await gateway.get("/", headers={"X-Forwarded-For": "203.0.113.9"})
                statuses[client_ip] = answer.status_code
        return statuses

    assert asyncio.run(scenario()) == {
        "203.0.113.9": 200,
        "::ffff:203.0.113.9": 200,
        "2001:db8::7": 200,
        "192.0.2.1": 403,
    }


def test_the_gateway_compiles_a_deployments_patterns_once(
    web: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    regex = {"path": {"path": {"regex": "/admin/[0-9]+", "ignoreCase": True}}}
    set_policies(web, [{**DENY_ADMIN, "match": [regex]}])
    deployment = ready(web)
    compiled: list[str] = []
    original = re2.compile

    def counting(pattern: str, options: Any = None) -> Any:
        compiled.append(pattern)
        return original(pattern, options=options)

    monkeypatch.setattr(re2, "compile", counting)
    answers = [visit(web, own_host(deployment), f"/ADMIN/{n}").status_code for n in range(10)]
    assert answers == [403] * 10
    assert compiled == ["/admin/[0-9]+"]
