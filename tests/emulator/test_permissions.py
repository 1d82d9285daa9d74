"""Permission strings: wildcard and ID-specific grants, slugs resolved to IDs, 403 versus 404."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.emulator.app import EmulatorConfig
from reconciler.emulator.auth import ACTIONS, ApiKey
from tests.emulator.helpers import deploy, make_app, make_project, ok, problem, target
from tests.emulator.test_every_operation import CASES
from tests.fixtures.emulator import EmulatorServer

DEV = "dev-key"


@pytest.fixture
def world(start_emulator, tmp_path: Path) -> dict:
    """Two projects with apps and deployments, built with a full key, then served again."""
    state = tmp_path / "state.json"
    builder = start_emulator(EmulatorConfig(dev_key=DEV, state_file=state, step_ms=20))
    ids = {"shop": make_project(builder, "shop"), "blog": make_project(builder, "blog")}
    ids["web"] = make_app(builder, "shop", "web")
    ids["api"] = make_app(builder, "shop", "api")
    envs = ok(builder.call("environments.listEnvironments", {"project": "shop", "app": "web"}))
    ids.update({f"web-{e['slug']}": e["id"] for e in envs["data"]})
    ids["d-prod"] = deploy(builder, "production")
    ids["d-preview"] = deploy(builder, "preview")
    builder.advance_clock(1000)
    ok(builder.call("domains.createDomain", {**target(), "domain": "www.example.com"}))
    builder.stop()
    return {"ids": ids, "state": state}


def _serve(start_emulator, world: dict, *permissions: str) -> EmulatorServer:
    keys = [ApiKey("limited", list(permissions))]
    config = EmulatorConfig(keys=keys, state_file=world["state"], step_ms=20)
    server = start_emulator(config)
    server.api_key = "limited"
    return server


def test_wildcard_grants_cover_every_object_of_the_scope(start_emulator, world: dict) -> None:
    server = _serve(start_emulator, world, "project.*.read_project", "app.*.read_app")
    assert len(ok(server.call("projects.listProjects"))["data"]) == 2
    ok(server.call("projects.getProject", {"project": "blog"}))
    assert len(ok(server.call("apps.listApps", {"project": "shop"}))["data"]) == 2
    ok(server.call("apps.getApp", {"project": "shop", "app": "api"}))
    problem(server.call("projects.createProject", {"name": "X", "slug": "xyz"}), 403)
    problem(server.call("projects.updateProject", {"project": "shop", "name": "X"}), 403)
    problem(server.call("apps.deleteApp", {"project": "shop", "app": "web"}), 403)
    problem(server.call("environments.getEnvironment", target()), 403)


def test_project_grants_by_id_also_match_the_slug(start_emulator, world: dict) -> None:
    shop = world["ids"]["shop"]
    server = _serve(
        start_emulator,
        world,
        f"project.{shop}.read_project",
        f"project.{shop}.update_project",
        f"project.{shop}.create_app",
    )
    assert ok(server.call("projects.getProject", {"project": "shop"}))["data"]["id"] == shop
    ok(server.call("projects.getProject", {"project": shop}))
    problem(server.call("projects.getProject", {"project": "blog"}), 403)
    problem(server.call("projects.listProjects"), 403)  # the list needs the wildcard
    ok(server.call("projects.updateProject", {"project": "shop", "name": "Shop 2"}))
    problem(server.call("projects.updateProject", {"project": "blog", "name": "B"}), 403)
    ok(server.call("apps.createApp", {"project": "shop", "name": "N", "slug": "new", "git": {}}))
    body = {"project": "blog", "name": "N", "slug": "new", "git": {}}
    problem(server.call("apps.createApp", body), 403)
    problem(server.call("projects.deleteProject", {"project": "shop"}), 403)


def test_app_grants_by_id(start_emulator, world: dict) -> None:
    web = world["ids"]["web"]
    server = _serve(start_emulator, world, f"app.{web}.read_app", f"app.{web}.update_app")
    ok(server.call("apps.getApp", {"project": "shop", "app": "web"}))
    problem(server.call("apps.getApp", {"project": "shop", "app": "api"}), 403)
    problem(server.call("apps.listApps", {"project": "shop"}), 403)
    ok(server.call("apps.updateApp", {"project": "shop", "app": "web", "name": "W"}))
    problem(server.call("apps.updateApp", {"project": "shop", "app": "api", "name": "A"}), 403)


def test_environment_grants_use_the_environment_id(start_emulator, world: dict) -> None:
    ids = world["ids"]
    production = ids["web-production"]
    server = _serve(
        start_emulator,
        world,
        f"environment.{production}.read_environment",
        f"environment.{production}.set_environment_variables",
        f"environment.{production}.create_deployment",
        f"environment.{production}.read_deployment",
        f"environment.{production}.read_domain",
        f"environment.{production}.read_policies",
    )
    ok(server.call("environments.getEnvironment", target()))
    ok(server.call("environments.getEnvironment", target(production)))
    problem(server.call("environments.getEnvironment", target("preview")), 403)
    problem(server.call("environments.listEnvironments", {"project": "shop", "app": "web"}), 403)
    variables = {"variables": [{"key": "A", "value": "1"}]}
    ok(server.call("environments.setEnvironmentVariables", {**target(), **variables}))
    problem(
        server.call("environments.setEnvironmentVariables", {**target("preview"), **variables}), 403
    )
    problem(server.call("environments.updateSettings", {**target(), "port": 1}), 403)
    ok(server.call("deployments.createDeployment", {**target(), "git": {}}), 201)
    problem(server.call("deployments.createDeployment", {**target("preview"), "git": {}}), 403)
    ok(server.call("deployments.getDeployment", {"deploymentId": ids["d-prod"]}))
    ok(server.call("domains.getDomain", {"domain": "www.example.com"}))
    ok(server.call("gateway.listPolicies", target()))
    problem(server.call("gateway.listPolicies", target("preview")), 403)
    problem(server.call("deployments.listDeployments", {}), 403)
    problem(server.call("domains.listDomains", {}), 403)


def test_operations_without_403_answer_404(start_emulator, world: dict) -> None:
    ids = world["ids"]
    production = ids["web-production"]
    server = _serve(start_emulator, world, f"environment.{production}.read_deployment")
    ok(server.call("deployments.getDeployment", {"deploymentId": ids["d-prod"]}))
    # the preview deployment exists, but this key may not see it
    problem(server.call("deployments.getDeployment", {"deploymentId": ids["d-preview"]}), 404)
    for action in ("promote", "rollback", "stop", "start"):
        body = {"deploymentId": ids["d-prod"]}
        problem(server.call(f"deployments.{action}Deployment", body), 404)


def test_a_key_without_the_action_is_refused_before_lookups(start_emulator, world: dict) -> None:
    server = _serve(start_emulator, world, "project.*.read_project")
    problem(server.call("apps.getApp", {"project": "nope", "app": "nope"}), 403)
    problem(server.call("domains.getDomain", {"domain": "none.example.com"}), 403)
    problem(server.call("projects.getProject", {"project": "nope"}), 404)
    problem(server.call("projects.getProject", {"project": "shop"}, key="other"), 401)


def test_a_refusal_never_names_the_id_behind_a_slug(start_emulator, world: dict) -> None:
    """A key holding every action, but only for objects other than those of the world, is
    refused on every operation that names `shop`, `web`, `production` or a domain by slug or
    host: the refusal must not tell it the IDs it may not read."""
    others = {"project": "proj_other", "app": "app_other", "environment": "env_other"}
    grants = [f"{scope}.{others[scope]}.{act}" for scope, acts in ACTIONS.items() for act in acts]
    server = _serve(start_emulator, world, *grants)
    refused = 0
    for operation, (body, _, _) in sorted(CASES.items()):
        if any(isinstance(v, str) and v.startswith("<") for v in body.values()):
            continue  # names a deployment or policy by its ID: nothing hidden behind a slug
        response = server.call(operation, body)
        assert response.status_code in (403, 404), (operation, response.text)
        refused += response.status_code == 403
        leaked = [name for name, value in world["ids"].items() if value in response.text]
        assert leaked == [], f"{operation} told a key that may not read them the IDs of {leaked}"
    assert refused >= 20
