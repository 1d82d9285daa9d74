"""apps.*: sources, environments created with the app, uniqueness, updates, cascades."""

from __future__ import annotations

import pytest

from tests.emulator.helpers import (
    deploy,
    get_app,
    list_all,
    make_app,
    make_project,
    ok,
    problem,
    target,
)
from tests.fixtures.emulator import EmulatorServer


@pytest.fixture
def shop(emulator: EmulatorServer) -> str:
    return make_project(emulator, "shop")


def test_git_app_shape_and_default_branch(emulator: EmulatorServer, shop: str) -> None:
    app_id = make_app(emulator, shop, "web", git={"repository": "acme/web"})
    assert app_id.startswith("app_") and len(app_id) >= 8
    app = get_app(emulator, "shop", app_id)
    assert app == {
        "id": app_id,
        "name": "Web",
        "slug": "web",
        "sourceType": "git",
        "git": {"repository": "acme/web", "defaultBranch": "main"},
        "isRolledBack": False,
        "deleteProtection": False,
        "createdAt": app["createdAt"],
    }


def test_git_connect_later_and_oci_app(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator, "shop", "later", git={})
    later = get_app(emulator, "shop", "later")
    assert later["sourceType"] == "git" and "git" not in later
    make_app(emulator, "shop", "img", oci={"image": "ghcr.io/acme/api:1.2"})
    image = get_app(emulator, "shop", "img")
    assert image["sourceType"] == "oci" and image["oci"] == {"image": "ghcr.io/acme/api:1.2"}
    assert "git" not in image and "currentDeploymentId" not in image


def test_both_environments_exist_with_each_app(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator)
    envs = ok(emulator.call("environments.listEnvironments", {"project": "shop", "app": "web"}))
    assert [(e["slug"], e["kind"], e["description"]) for e in envs["data"]] == [
        ("production", "production", ""),
        ("preview", "preview", ""),
    ]
    for env in envs["data"]:
        assert env["id"].startswith("env_")
        assert "runtime" not in env and "build" not in env and "updatedAt" not in env


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "git"),
        ({"git": {}, "oci": {"image": "a:1"}}, "git"),
        ({"git": {"repository": "no-slash"}}, "git.repository"),
        ({"git": {"repository": "a/" + "b" * 254}}, "git.repository"),
        ({"git": {"repository": "a/b", "defaultBranch": ""}}, "git.defaultBranch"),
        ({"git": {"defaultBranch": "dev"}}, "git.defaultBranch"),
        ({"git": {"token": "x"}}, "git.token"),
        ({"oci": {}}, "oci.image"),
        ({"oci": {"image": "nginx"}}, "oci.image"),
        ({"oci": {"image": "localhost:5000/nginx"}}, "oci.image"),
        ({"oci": {"image": "nginx:" + "1" * 251}}, "oci.image"),
        ({"git": None}, "git"),
    ],
)
def test_create_rejects_bad_sources(emulator: EmulatorServer, shop: str, body, field) -> None:
    request = {"project": "shop", "name": "Web", "slug": "web", **body}
    problem(emulator.call("apps.createApp", request), 400, field)


def test_image_with_digest_or_registry_port_and_tag(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator, "shop", "one", oci={"image": "localhost:5000/nginx:1"})
    make_app(emulator, "shop", "two", oci={"image": "nginx@sha256:" + "a" * 64})


def test_create_errors(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator)
    body = {"project": "shop", "name": "x", "slug": "web", "git": {}}
    problem(emulator.call("apps.createApp", body), 409, "slug")
    problem(emulator.call("apps.createApp", {**body, "project": "nope"}), 404)
    problem(emulator.call("apps.createApp", {**body, "slug": "ab"}), 400, "slug")
    make_project(emulator, "blog")
    ok(emulator.call("apps.createApp", {**body, "project": "blog"}))  # unique per project only


def test_update_app_fields_and_rename_conflict(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator, "shop", "web")
    make_app(emulator, "shop", "api")
    problem(emulator.call("apps.updateApp", {"project": "shop", "app": "api", "slug": "web"}), 409)
    emulator.advance_clock(3)
    body = {"project": "shop", "app": "api", "slug": "backend", "name": "Backend"}
    updated = ok(emulator.call("apps.updateApp", {**body, "deleteProtection": True}))["data"]
    assert (updated["slug"], updated["name"], updated["deleteProtection"]) == (
        "backend",
        "Backend",
        True,
    )
    assert updated["updatedAt"] > updated["createdAt"]
    problem(emulator.call("apps.getApp", {"project": "shop", "app": "api"}), 404)
    problem(emulator.call("apps.updateApp", {"project": "shop", "app": "nope", "name": "x"}), 404)


def test_update_git_members_and_disconnect(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator)
    call = lambda git: ok(  # noqa: E731
        emulator.call("apps.updateApp", {"project": "shop", "app": "web", "git": git})
    )["data"]
    assert call({"defaultBranch": "dev"})["git"] == {
        "repository": "acme/web",
        "defaultBranch": "dev",
    }
    assert call({"repository": "acme/site"})["git"] == {
        "repository": "acme/site",
        "defaultBranch": "dev",
    }
    disconnected = call(None)
    assert "git" not in disconnected and disconnected["sourceType"] == "git"
    body = {"project": "shop", "app": "web", "git": {"defaultBranch": "x"}}
    problem(emulator.call("apps.updateApp", body), 400, "git.defaultBranch")
    assert call({"repository": "acme/web"})["git"]["defaultBranch"] == "main"


def test_source_type_cannot_change(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator, "shop", "web")
    make_app(emulator, "shop", "img", oci={"image": "nginx:1"})
    body = {"project": "shop", "app": "web", "oci": {"image": "nginx:1"}}
    problem(emulator.call("apps.updateApp", body), 400, "oci")
    body = {"project": "shop", "app": "img", "git": {"repository": "a/b"}}
    problem(emulator.call("apps.updateApp", body), 400, "git")
    body = {"project": "shop", "app": "img", "oci": {"image": "nginx:2"}}
    assert ok(emulator.call("apps.updateApp", body))["data"]["oci"] == {"image": "nginx:2"}
    assert ok(emulator.call("deployments.listDeployments", {}))["data"] == []  # deploys nothing


def test_list_apps_search_pages_and_404(emulator: EmulatorServer, shop: str) -> None:
    for slug in ("web", "api", "worker", "cron"):
        make_app(emulator, "shop", slug)
    make_project(emulator, "blog")
    make_app(emulator, "blog", "web")
    apps = list_all(emulator, "apps.listApps", {"project": shop}, limit=3)
    assert [a["slug"] for a in apps] == ["web", "api", "worker", "cron"]
    found = ok(emulator.call("apps.listApps", {"project": "shop", "search": "WOR"}))["data"]
    assert [a["slug"] for a in found] == ["worker"]
    problem(emulator.call("apps.listApps", {"project": "nope"}), 404)
    problem(emulator.call("apps.listApps", {}), 400, "project")


def test_delete_app_cascades_and_honours_protection(emulator: EmulatorServer, shop: str) -> None:
    make_app(emulator)
    ok(
        emulator.call(
            "environments.setEnvironmentVariables",
            {**target(), "variables": [{"key": "A", "value": "1"}]},
        )
    )
    ok(emulator.call("domains.createDomain", {**target(), "domain": "www.example.com"}))
    deploy(emulator)
    ok(emulator.call("apps.updateApp", {"project": "shop", "app": "web", "deleteProtection": True}))
    problem(emulator.call("apps.deleteApp", {"project": "shop", "app": "web"}), 412)
    ok(
        emulator.call(
            "apps.updateApp", {"project": "shop", "app": "web", "deleteProtection": False}
        )
    )
    assert ok(emulator.call("apps.deleteApp", {"project": "shop", "app": "web"}), 202) == {
        "data": {}
    }
    state = emulator.state()
    for table in ("apps", "environments", "variables", "policies", "domains", "deployments"):
        assert state[table] == {}, table
    problem(emulator.call("apps.deleteApp", {"project": "shop", "app": "web"}), 404)
    # the domain name is free again
    make_app(emulator)
    ok(emulator.call("domains.createDomain", {**target(), "domain": "www.example.com"}))
