"""Every one of the 31 operations: success, 400 on an unknown field, 401, 403 (or 404 where the
spec lists no 403) for a key without the permission, and 404 for unknown objects."""

from __future__ import annotations

import pytest

from reconciler.emulator.app import OPERATIONS
from tests.emulator.helpers import deploy, make_app, make_project, ok, problem, target
from tests.fixtures.emulator import NO_GRANTS_KEY, EmulatorServer

ENV = target()
MISSING_ENV = target(app="missing-app")

# operation -> (body for success, expected success status, body naming a missing object or None)
CASES: dict[str, tuple[dict, int, dict | None]] = {
    "projects.createProject": ({"name": "New", "slug": "new"}, 200, None),
    "projects.listProjects": ({}, 200, None),
    "projects.getProject": ({"project": "shop"}, 200, {"project": "nope"}),
    "projects.updateProject": ({"project": "shop", "name": "S"}, 200, {"project": "nope"}),
    "projects.deleteProject": ({"project": "blog"}, 202, {"project": "nope"}),
    "apps.createApp": (
        {"project": "shop", "name": "N", "slug": "new", "git": {}},
        200,
        {"project": "nope", "name": "N", "slug": "new", "git": {}},
    ),
    "apps.listApps": ({"project": "shop"}, 200, {"project": "nope"}),
    "apps.getApp": ({"project": "shop", "app": "web"}, 200, {"project": "shop", "app": "nope"}),
    "apps.updateApp": (
        {"project": "shop", "app": "web", "name": "W"},
        200,
        {"project": "shop", "app": "nope", "name": "W"},
    ),
    "apps.deleteApp": ({"project": "shop", "app": "api"}, 202, {"project": "shop", "app": "nope"}),
    "environments.listEnvironments": (
        {"project": "shop", "app": "web"},
        200,
        {"project": "shop", "app": "nope"},
    ),
    "environments.getEnvironment": (ENV, 200, MISSING_ENV),
    "environments.updateSettings": ({**ENV, "port": 3000}, 200, {**MISSING_ENV, "port": 3000}),
    "environments.listEnvironmentVariables": (ENV, 200, MISSING_ENV),
    "environments.setEnvironmentVariables": (
        {**ENV, "variables": [{"key": "A", "value": "1"}]},
        200,
        {**MISSING_ENV, "variables": []},
    ),
    "environments.removeEnvironmentVariables": (
        {**ENV, "variables": ["A"]},
        200,
        {**MISSING_ENV, "variables": ["A"]},
    ),
    "gateway.listPolicies": (ENV, 200, MISSING_ENV),
    "gateway.setPolicies": ({**ENV, "policies": []}, 200, {**MISSING_ENV, "policies": []}),
    "gateway.updatePolicy": (
        {**ENV, "policyId": "<policy>", "enabled": False},
        200,
        {**ENV, "policyId": "pol_missing", "enabled": False},
    ),
    "domains.createDomain": (
        {**ENV, "domain": "new.example.com"},
        200,
        {**MISSING_ENV, "domain": "new.example.com"},
    ),
    "domains.getDomain": ({"domain": "www.example.com"}, 200, {"domain": "no.example.com"}),
    "domains.listDomains": ({"project": "shop"}, 200, {"project": "nope"}),
    "domains.verifyDomain": ({"domain": "www.example.com"}, 202, {"domain": "no.example.com"}),
    "domains.deleteDomain": ({"domain": "www.example.com"}, 200, {"domain": "no.example.com"}),
    "deployments.createDeployment": ({**ENV, "git": {}}, 201, {**MISSING_ENV, "git": {}}),
    "deployments.getDeployment": ({"deploymentId": "<old>"}, 200, {"deploymentId": "d_missing"}),
    "deployments.listDeployments": ({"project": "shop"}, 200, {"project": "nope"}),
    "deployments.promoteDeployment": ({"deploymentId": "<new>"}, 202, {"deploymentId": "d_no"}),
    "deployments.rollbackDeployment": ({"deploymentId": "<old>"}, 202, {"deploymentId": "d_no"}),
    "deployments.stopDeployment": ({"deploymentId": "<preview>"}, 202, {"deploymentId": "d_no"}),
    "deployments.startDeployment": ({"deploymentId": "<stopped>"}, 202, {"deploymentId": "d_no"}),
}
# operations whose spec lists no 403: a key without the permission gets 404
WITHOUT_403 = {
    "deployments.getDeployment",
    "deployments.promoteDeployment",
    "deployments.rollbackDeployment",
    "deployments.stopDeployment",
    "deployments.startDeployment",
}


def test_the_table_covers_every_operation() -> None:
    assert set(CASES) == set(OPERATIONS) and len(OPERATIONS) == 31


@pytest.fixture
def server(emulator: EmulatorServer) -> EmulatorServer:
    """A world with every object the cases need."""
    make_project(emulator, "shop")
    make_project(emulator, "blog")
    make_app(emulator, "shop", "web")
    make_app(emulator, "shop", "api")
    policies = [{"name": "p", "enabled": True, "logging": {}}]
    ok(emulator.call("gateway.setPolicies", {**ENV, "policies": policies}))
    ok(emulator.call("domains.createDomain", {**ENV, "domain": "www.example.com"}))
    return emulator


def _fill(server: EmulatorServer, body: dict) -> dict:
    """Replace placeholders with IDs of objects in the right state for this test."""
    wanted = {value for value in body.values() if isinstance(value, str) and value.startswith("<")}
    if not wanted:
        return body
    ids: dict[str, str] = {}
    if "<policy>" in wanted:
        ids["<policy>"] = ok(server.call("gateway.listPolicies", ENV))["data"][0]["id"]
    if wanted & {"<old>", "<new>"}:
        ids["<old>"] = deploy(server)
        server.advance_clock(1000)
        ids["<new>"] = deploy(server)
        server.advance_clock(1000)
        ok(server.call("deployments.rollbackDeployment", {"deploymentId": ids["<old>"]}), 202)
    if wanted & {"<preview>", "<stopped>"}:
        ids["<preview>"] = ids["<stopped>"] = deploy(server, "preview")
        server.advance_clock(1000)
        if "<stopped>" in wanted:
            ok(server.call("deployments.stopDeployment", {"deploymentId": ids["<stopped>"]}), 202)
    if "<old>" in wanted and "<new>" in ids:  # rollback wants the rolled-back state undone
        ok(server.call("deployments.promoteDeployment", {"deploymentId": ids["<new>"]}), 202)
    return {
        key: ids.get(value, value) if isinstance(value, str) else value
        for key, value in body.items()
    }


@pytest.mark.parametrize("operation", sorted(CASES))
def test_every_operation(server: EmulatorServer, operation: str) -> None:
    body, status, missing = CASES[operation]
    body = _fill(server, body)
    # 401 without a key, 400 on an unknown field
    response = server.http.post(f"/v1/{operation}", json=body)
    problem(response, 401)
    problem(server.call(operation, {**body, "unexpected": 1}), 400, "unexpected")
    # a key without the permission
    denied = 404 if operation in WITHOUT_403 else 403
    problem(server.call(operation, body, key=NO_GRANTS_KEY), denied)
    # unknown objects
    if missing is not None:
        problem(server.call(operation, missing), 404)
    # and the success path, last because it may delete what it names
    response = server.call(operation, body)
    assert response.status_code == status, response.text
    assert "data" in response.json()
