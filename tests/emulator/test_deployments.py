"""deployments.*: the status machine, the production pointer, stop/start, failures, listing."""

from __future__ import annotations

import hashlib
import json

import pytest

from reconciler.emulator.app import EmulatorConfig
from tests.emulator.helpers import LONG_STEP_MS as STEP_MS
from tests.emulator.helpers import (
    deploy,
    get_app,
    get_deployment,
    list_all,
    make_app,
    make_project,
    ok,
    problem,
    target,
)
from tests.fixtures.emulator import EmulatorServer

DONE = 20 * STEP_MS  # enough clock for any deployment to finish
GIT_STATUSES = ["pending", "starting", "building", "deploying", "network", "finalizing", "ready"]


@pytest.fixture
def web(web_on_the_test_clock: EmulatorServer) -> EmulatorServer:
    return web_on_the_test_clock


def _settle(emulator: EmulatorServer) -> None:
    emulator.advance_clock(DONE)


def _act(emulator: EmulatorServer, action: str, deployment_id: str):
    return emulator.call(f"deployments.{action}Deployment", {"deploymentId": deployment_id})


def test_statuses_progress_step_by_step(start_emulator) -> None:
    # a long step so that wall-clock drift between calls never crosses a step boundary
    server = start_emulator(EmulatorConfig(dev_key="k", step_ms=60_000))
    make_project(server)
    make_app(server)
    make_app(server, "shop", "img", oci={"image": "nginx:1"})
    git_id = deploy(server)
    image_id = ok(
        server.call(
            "deployments.createDeployment",
            {**target(app="img"), "image": {"dockerImage": "nginx:2"}},
        ),
        201,
    )["data"]["deploymentId"]
    git_seen, image_seen = [], []
    for _ in range(7):
        git = get_deployment(server, git_id)
        git_seen.append(git["status"])
        image_seen.append(get_deployment(server, image_id)["status"])
        if git["status"] != "ready":
            assert git["availableActions"] == [] and git["isCurrent"] is False
        server.advance_clock(60_000)
    assert git_seen == GIT_STATUSES
    assert image_seen == [
        "pending",
        "starting",
        "deploying",
        "network",
        "finalizing",
        "ready",
        "ready",
    ]


def test_git_deployment_shape_and_becoming_current(start_emulator) -> None:
    # a long step: on a loaded machine 20 ms can pass between the create and the read
    web = start_emulator(EmulatorConfig(dev_key="k", step_ms=60_000))
    make_project(web)
    make_app(web)
    deployment_id = deploy(web)
    assert deployment_id.startswith("d_")
    fresh = get_deployment(web, deployment_id)
    assert fresh["status"] == "pending" and "updatedAt" not in fresh
    assert "currentDeploymentId" not in get_app(web)
    web.advance_clock(20 * 60_000)
    ready = get_deployment(web, deployment_id)
    assert ready["status"] == "ready" and ready["isCurrent"] is True
    assert (ready["project"], ready["app"], ready["environment"]) == ("shop", "web", "production")
    assert ready["git"]["branch"] == "main" and len(ready["git"]["commitSha"]) == 40
    assert "docker" not in ready and "error" not in ready
    assert ready["regions"] == ["iad"] and ready["runtime"]["vCpus"] == 0.25
    assert ready["availableActions"] == [] and ready["updatedAt"] > ready["createdAt"]
    assert get_app(web)["currentDeploymentId"] == deployment_id


def test_git_branch_and_commit_and_fork(web: EmulatorServer) -> None:
    by_branch = get_deployment(web, deploy(web, git={"branch": "feature"}))
    assert by_branch["git"]["branch"] == "feature"
    by_sha = get_deployment(web, deploy(web, git={"commitSha": "abc123", "branch": "dev"}))
    assert by_sha["git"] == {"commitSha": "abc123", "branch": "dev"}
    fork = get_deployment(
        web, deploy(web, "preview", git={"repository": "them/web", "commitSha": "f00d"})
    )
    assert fork["git"] == {"commitSha": "f00d"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"git": {}, "image": {"dockerImage": "a:1"}}, "body"),
        ({"git": {"repository": "them/web"}}, "git.repository"),
        ({"git": {"commitSha": "a" * 41}}, "git.commitSha"),
        ({"git": {"branch": "b" * 257}}, "git.branch"),
        ({"image": {}}, "image.dockerImage"),
        ({"deployment": {}}, "deployment.deploymentId"),
        ({"git": {}, "environment": "pr"}, "environment"),
    ],
)
def test_create_400s(web: EmulatorServer, body: dict, field: str) -> None:
    problem(web.call("deployments.createDeployment", {**target(), **body}), 400, field)


def test_create_preconditions_and_404s(web: EmulatorServer) -> None:
    make_app(web, "shop", "img", oci={"image": "nginx:1"})
    make_app(web, "shop", "later", git={})
    create = lambda app, source: web.call(  # noqa: E731
        "deployments.createDeployment", {**target(app=app), **source}
    )
    problem(create("img", {"git": {}}), 412)
    problem(create("web", {"image": {"dockerImage": "nginx:1"}}), 412)
    problem(create("later", {"git": {}}), 412)
    img_deployment = ok(create("img", {"image": {"dockerImage": "nginx:1"}}), 201)["data"][
        "deploymentId"
    ]
    problem(create("web", {"deployment": {"deploymentId": img_deployment}}), 412)
    problem(create("web", {"deployment": {"deploymentId": "d_missing"}}), 404)
    problem(web.call("deployments.createDeployment", {**target("staging"), "git": {}}), 404)
    problem(web.call("deployments.createDeployment", {**target(app="nope"), "git": {}}), 404)


def test_rerun_reuses_source_with_current_settings(web: EmulatorServer) -> None:
    first = get_deployment(web, deploy(web, git={"commitSha": "1234abcd"}))
    ok(
        web.call(
            "environments.updateSettings",
            {
                **target(),
                "vCpus": 2,
                "regions": [{"name": "fra", "replicas": {"min": 1, "max": 2}}],
            },
        )
    )
    rerun = get_deployment(web, deploy(web, deployment={"deploymentId": first["id"]}))
    assert rerun["git"] == first["git"] and rerun["id"] != first["id"]
    assert rerun["runtime"]["vCpus"] == 2 and rerun["regions"] == ["fra"]
    assert get_deployment(web, first["id"])["runtime"]["vCpus"] == 0.25  # the snapshot stays
    make_app(web, "shop", "img", oci={"image": "nginx:1"})
    body = {**target(app="img"), "image": {"dockerImage": "nginx:1.25"}}
    image_first = ok(web.call("deployments.createDeployment", body), 201)["data"]["deploymentId"]
    body = {**target("preview", app="img"), "deployment": {"deploymentId": image_first}}
    rerun_id = ok(web.call("deployments.createDeployment", body), 201)["data"]["deploymentId"]
    assert get_deployment(web, rerun_id)["docker"] == {"image": "nginx:1.25"}


# the spec's Deployment fields, and "Runtime of a deployment" (healthcheck only if set)
DEPLOYMENT_FIELDS = {
    "id", "status", "isCurrent", "environment", "app", "project", "git", "docker",
    "availableActions", "regions", "error", "domains", "runtime", "createdAt", "updatedAt",
}  # fmt: skip
RUNTIME_FIELDS = {
    "vCpus", "memoryMib", "storageMib", "port", "command", "shutdownSignal", "upstreamProtocol",
}  # fmt: skip


def test_a_deployment_shows_only_the_spec_members(web: EmulatorServer) -> None:
    settings = {
        "openapiSpecPath": "/openapi.json",
        "healthcheck": {"method": "GET", "path": "/health"},
        "dockerfile": "Dockerfile",
    }
    ok(web.call("environments.updateSettings", {**target(), **settings}))
    deployment_id = deploy(web)
    _settle(web)
    shown = get_deployment(web, deployment_id)
    assert set(shown) <= DEPLOYMENT_FIELDS
    assert set(shown["runtime"]) == RUNTIME_FIELDS | {"healthcheck"}
    assert set(shown["git"]) <= {"commitSha", "branch"}
    listed = ok(web.call("deployments.listDeployments", target()))["data"]
    assert listed == [shown]
    # the environment keeps openapiSpecPath ("stored but unused"), and so does the snapshot
    env = ok(web.call("environments.getEnvironment", target()))["data"]
    assert env["runtime"]["openapiSpecPath"] == "/openapi.json"
    snapshot = web.state()["deployments"][deployment_id]["_snapshot"]
    assert snapshot["runtime"]["openapiSpecPath"] == "/openapi.json"
    # without settings the server defaults, with no healthcheck
    make_app(web, "shop", "img", oci={"image": "nginx:1"})
    body = {**target(app="img"), "image": {"dockerImage": "nginx:1"}}
    image = ok(web.call("deployments.createDeployment", body), 201)["data"]["deploymentId"]
    _settle(web)
    shown = get_deployment(web, image)
    assert set(shown) <= DEPLOYMENT_FIELDS and set(shown["docker"]) == {"image"}
    assert set(shown["runtime"]) == RUNTIME_FIELDS


def test_a_failed_deployment_shows_only_the_spec_members(web: EmulatorServer) -> None:
    shown = get_deployment(web, deploy(web, git={"commitSha": "fail0"}))
    _settle(web)
    shown = get_deployment(web, shown["id"])
    assert shown["status"] == "failed" and set(shown) <= DEPLOYMENT_FIELDS
    assert set(shown["error"]) == {"code", "step", "message"}


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _set_variables(emulator: EmulatorServer, variables: list[dict], prune: bool = False) -> None:
    body = {**target(), "variables": variables, "prune": prune}
    ok(emulator.call("environments.setEnvironmentVariables", body))


def test_snapshot_of_variables_and_policies(web: EmulatorServer) -> None:
    _set_variables(
        web,
        [{"key": "A", "value": "first-secret"}, {"key": "R", "value": "r1", "kind": "recoverable"}],
    )
    policy = {"name": "p", "enabled": True, "logging": {}}
    ok(web.call("gateway.setPolicies", {**target(), "policies": [policy]}))
    first = deploy(web)
    _set_variables(
        web, [{"key": "A", "value": "second-secret"}, {"key": "B", "value": "y"}], prune=True
    )
    ok(web.call("gateway.setPolicies", {**target(), "policies": []}))
    second = deploy(web)
    state = web.state()
    # a running deployment keeps the values it was created with until the next deployment
    snapshot = state["deployments"][first]["_snapshot"]
    assert snapshot["variables"] == {"A": _sha256("first-secret"), "R": _sha256("r1")}
    assert [p["name"] for p in snapshot["policies"]] == ["p"]
    assert state["deployments"][second]["_snapshot"]["variables"] == {
        "A": _sha256("second-secret"),
        "B": _sha256("y"),
    }
    assert state["deployments"][second]["_snapshot"]["policies"] == []
    # digests only (the state file never holds a write-only value), never in the public API
    assert "second-secret" not in json.dumps(state["deployments"])
    _settle(web)
    digests = [_sha256("first-secret"), _sha256("second-secret")]
    answers = [web.call("deployments.getDeployment", {"deploymentId": d}) for d in (first, second)]
    answers.append(web.call("deployments.listDeployments", target()))
    for answer in answers:
        ok(answer)
        assert "variables" not in answer.text and not any(d in answer.text for d in digests)


def test_newer_production_takes_over_until_rolled_back(web: EmulatorServer) -> None:
    first = deploy(web)
    _settle(web)
    second = deploy(web)
    _settle(web)
    assert get_app(web)["currentDeploymentId"] == second
    assert get_deployment(web, first)["isCurrent"] is False
    assert get_deployment(web, first)["availableActions"] == ["promote", "rollback"]
    assert get_deployment(web, second)["availableActions"] == []

    assert ok(_act(web, "rollback", first), 202) == {"data": {}}
    app = get_app(web)
    assert app["currentDeploymentId"] == first and app["isRolledBack"] is True
    assert get_deployment(web, first)["isCurrent"] is True
    assert get_deployment(web, first)["availableActions"] == ["promote"]
    assert get_deployment(web, second)["availableActions"] == ["promote"]

    third = deploy(web)
    _settle(web)
    assert get_deployment(web, third)["status"] == "ready"
    assert get_app(web)["currentDeploymentId"] == first  # pushes do not take over

    ok(_act(web, "promote", third), 202)
    app = get_app(web)
    assert app["currentDeploymentId"] == third and app["isRolledBack"] is False
    fourth = deploy(web)
    _settle(web)
    assert get_app(web)["currentDeploymentId"] == fourth  # pushes take over again
    current = [d for d in ok(web.call("deployments.listDeployments", {}))["data"] if d["isCurrent"]]
    assert [d["id"] for d in current] == [fourth]


def test_promote_and_rollback_preconditions(web: EmulatorServer) -> None:
    preview = deploy(web, "preview")
    first = deploy(web)
    _settle(web)
    second = deploy(web)
    problem(_act(web, "rollback", second), 412)  # still in progress
    problem(_act(web, "promote", second), 412)
    _settle(web)
    problem(_act(web, "rollback", second), 412)  # it is the current one
    problem(_act(web, "promote", preview), 412)
    problem(_act(web, "rollback", preview), 412)
    failed = deploy(web, git={"commitSha": "fail-1"})
    _settle(web)
    problem(_act(web, "promote", failed), 412)
    problem(_act(web, "rollback", failed), 412)
    ok(_act(web, "rollback", first), 202)
    problem(_act(web, "rollback", second), 412)  # not earlier than the current one
    ok(_act(web, "promote", second), 202)
    ok(_act(web, "promote", second), 202)  # already live: nothing to do
    for action in ("promote", "rollback", "stop", "start"):
        problem(_act(web, action, "d_missing"), 404)
        problem(web.call(f"deployments.{action}Deployment", {}), 400, "deploymentId")


def test_stop_and_start_previews_only(web: EmulatorServer) -> None:
    production = deploy(web)
    preview = deploy(web, "preview")
    problem(_act(web, "stop", preview), 412)  # in progress
    _settle(web)
    assert get_deployment(web, preview)["availableActions"] == ["stop"]
    problem(_act(web, "stop", production), 412)
    problem(_act(web, "start", preview), 412)  # not stopped
    ok(_act(web, "stop", preview), 202)
    stopped = get_deployment(web, preview)
    assert stopped["status"] == "stopped" and stopped["availableActions"] == ["start"]
    problem(_act(web, "stop", preview), 412)
    ok(_act(web, "start", preview), 202)
    assert get_deployment(web, preview)["status"] == "starting"
    _settle(web)
    restarted = get_deployment(web, preview)
    assert restarted["status"] == "ready" and restarted["isCurrent"] is False
    problem(_act(web, "start", production), 412)


def test_pending_deployment_is_superseded_by_a_newer_one(web: EmulatorServer) -> None:
    older = deploy(web, "preview")
    newer = deploy(web, "preview")
    assert get_deployment(web, older)["status"] == "superseded"
    _settle(web)
    assert get_deployment(web, older)["status"] == "superseded"
    assert get_deployment(web, newer)["status"] == "ready"


def _failed(emulator: EmulatorServer, deployment_id: str) -> dict:
    _settle(emulator)
    deployment = get_deployment(emulator, deployment_id)
    assert deployment["status"] == "failed", deployment
    assert deployment["availableActions"] == [] and deployment["isCurrent"] is False
    assert deployment["error"]["message"]
    return deployment["error"]


def test_build_failures_on_purpose(web: EmulatorServer) -> None:
    error = _failed(web, deploy(web, git={"commitSha": "failing"}))
    assert (error["code"], error["step"]) == ("build_failed", "building")
    assert "currentDeploymentId" not in get_app(web)
    make_app(web, "shop", "img", oci={"image": "nginx:1"})
    body = {**target(app="img"), "image": {"dockerImage": "registry.io:5000/app:fail-1"}}
    image = ok(web.call("deployments.createDeployment", body), 201)["data"]["deploymentId"]
    error = _failed(web, image)
    assert (error["code"], error["step"]) == ("build_failed", "deploying")


def test_unknown_region_is_not_schedulable(web: EmulatorServer) -> None:
    regions = [
        {"name": "iad", "replicas": {"min": 1, "max": 1}},
        {"name": "mars1", "replicas": {"min": 1, "max": 1}},
    ]
    ok(web.call("environments.updateSettings", {**target(), "regions": regions}))
    error = _failed(web, deploy(web))
    assert error["code"] == "no_schedulable_regions" and "mars1" in error["message"]


@pytest.mark.parametrize(
    "settings",
    [
        {"regions": [{"name": "iad", "replicas": {"min": 3, "max": 2}}]},
        {"healthcheck": {"method": "GET", "path": "/", "intervalSeconds": 5, "timeoutSeconds": 6}},
    ],
)
def test_invalid_runtime_settings(web: EmulatorServer, settings: dict) -> None:
    ok(web.call("environments.updateSettings", {**target(), **settings}))
    assert _failed(web, deploy(web))["code"] == "invalid_runtime_settings"


@pytest.mark.parametrize(
    ("quota", "code"),
    [
        ({"vCpus": 0.75}, "cpu_quota_exceeded"),
        ({"memoryMib": 1536}, "memory_quota_exceeded"),
        ({"storageMib": 768}, "storage_quota_exceeded"),
    ],
)
def test_workspace_quotas(web: EmulatorServer, quota: dict, code: str) -> None:
    settings = {"vCpus": 0.5, "memoryMib": 1024, "storageMib": 512}
    ok(web.call("environments.updateSettings", {**target(), **settings}))
    web.set_quotas(**quota)
    first = deploy(web)  # fits alone
    _settle(web)
    assert get_deployment(web, first)["status"] == "ready"
    ok(web.call("environments.updateSettings", {**target("preview"), **settings}))
    preview = deploy(web, "preview")
    assert _failed(web, preview)["code"] == code
    # the current production deployment keeps running while a new one rolls out
    assert _failed(web, deploy(web))["code"] == code
    web.set_quotas(**{name: None for name in quota})
    last = deploy(web)
    _settle(web)
    assert get_deployment(web, last)["status"] == "ready"


def test_list_newest_first_filters_and_pages(web: EmulatorServer) -> None:
    make_app(web, "shop", "api")
    make_project(web, "blog")
    make_app(web, "blog", "site")
    ids = [
        deploy(web),
        deploy(web, "preview"),
        ok(web.call("deployments.createDeployment", {**target(app="api"), "git": {}}), 201)["data"][
            "deploymentId"
        ],
        ok(
            web.call(
                "deployments.createDeployment",
                {**target(project="blog", app="site"), "git": {"commitSha": "fail"}},
            ),
            201,
        )["data"]["deploymentId"],
    ]
    listed = lambda body: [  # noqa: E731
        d["id"] for d in ok(web.call("deployments.listDeployments", body))["data"]
    ]
    assert listed({}) == ids[::-1]
    assert [d["id"] for d in list_all(web, "deployments.listDeployments", {}, limit=3)] == ids[::-1]
    assert listed({"project": "shop"}) == ids[2::-1]
    assert listed({"project": "shop", "app": "web"}) == ids[1::-1]
    assert listed({"project": "shop", "app": "web", "environment": "preview"}) == [ids[1]]
    _settle(web)
    assert listed({"status": ["failed"]}) == [ids[3]]
    assert listed({"status": ["ready", "failed"], "project": "blog"}) == [ids[3]]
    problem(web.call("deployments.listDeployments", {"app": "web"}), 400, "app")
    problem(
        web.call("deployments.listDeployments", {"project": "shop", "environment": "preview"}),
        400,
        "environment",
    )
    problem(web.call("deployments.listDeployments", {"status": ["done"]}), 400, "status[0]")
    problem(web.call("deployments.listDeployments", {"status": ["ready"] * 14}), 400, "status")
    problem(web.call("deployments.listDeployments", {"project": "nope"}), 404)
    problem(web.call("deployments.listDeployments", {"project": "shop", "app": "nope"}), 404)
    page = ok(web.call("deployments.listDeployments", {"limit": 1}))
    body = {"status": ["ready"], "cursor": page["pagination"]["cursor"]}
    problem(web.call("deployments.listDeployments", body), 400, "cursor")


def test_deployment_domains(web: EmulatorServer) -> None:
    records = ok(web.call("domains.createDomain", {**target(), "domain": "www.example.com"}))[
        "data"
    ]["dnsRecords"]
    web.set_dns([{k: r[k] for k in ("type", "name", "value")} for r in records])
    deployment_id = deploy(web)
    _settle(web)
    domains = get_deployment(web, deployment_id)["domains"]
    assert "www.example.com" in domains and "web-shop.platform-emulator.test" in domains
    newer = deploy(web)
    _settle(web)
    assert "www.example.com" not in get_deployment(web, deployment_id)["domains"]
    assert "www.example.com" in get_deployment(web, newer)["domains"]


def test_get_deployment_404_and_400(web: EmulatorServer) -> None:
    problem(web.call("deployments.getDeployment", {"deploymentId": "d_nothing"}), 404)
    problem(web.call("deployments.getDeployment", {"deploymentId": "d_"}), 400, "deploymentId")
