"""Lookups by slug and by parent stay right through renames, deletes, cascades, reset and reload
(the store indexes them instead of scanning), and domain verification re-checks on DNS changes
and deadlines only (it no longer scans every domain on every request)."""

from __future__ import annotations

from pathlib import Path

from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.emulator.store import Store
from tests.emulator.helpers import (
    call_in_process,
    get_app,
    make_app,
    make_project,
    ok,
    problem,
    target,
)
from tests.fixtures.emulator import STEP_MS, EmulatorServer

DAY_MS = 24 * 60 * 60 * 1000


def _domain(emulator: EmulatorServer, host: str, **where: str) -> dict:
    body = {**target(**where), "domain": host}
    return ok(emulator.call("domains.createDomain", body))["data"]


def _domain_hosts(emulator: EmulatorServer, **filters: str) -> list[str]:
    return [d["domain"] for d in ok(emulator.call("domains.listDomains", filters))["data"]]


def test_renamed_app_is_found_by_its_new_slug_only(emulator: EmulatorServer) -> None:
    make_project(emulator)
    app_id = make_app(emulator, slug="web")
    _domain(emulator, "www.example.com")
    ok(emulator.call("apps.updateApp", {"project": "shop", "app": "web", "slug": "site"}))
    assert get_app(emulator, app="site")["id"] == app_id
    problem(emulator.call("apps.getApp", {"project": "shop", "app": "web"}), 404)
    assert _domain_hosts(emulator, app="site") == ["www.example.com"]
    problem(emulator.call("domains.listDomains", {"app": "web"}), 404)
    env = ok(emulator.call("environments.getEnvironment", target(app="site")))["data"]
    assert env["slug"] == "production"
    # the old slug is free again, the new one is taken
    assert make_app(emulator, slug="web") != app_id
    body = {"project": "shop", "app": "web", "slug": "site"}
    problem(emulator.call("apps.updateApp", body), 409, "slug")


def test_an_app_slug_that_is_another_apps_id_still_conflicts(emulator: EmulatorServer) -> None:
    make_project(emulator)
    first = make_app(emulator, slug="web")
    make_app(emulator, slug=first)  # a slug may look like an ID: only its length is checked
    body = {"project": "shop", "name": "X", "slug": first, "oci": {"image": "nginx:1"}}
    problem(emulator.call("apps.createApp", body), 409, "slug")
    assert get_app(emulator, app=first)["id"] == first  # an ID wins over a slug


def test_renamed_project_is_found_by_its_new_slug_only(emulator: EmulatorServer) -> None:
    project_id = make_project(emulator, "shop")
    make_app(emulator)
    ok(emulator.call("projects.updateProject", {"project": "shop", "slug": "store"}))
    got = ok(emulator.call("projects.getProject", {"project": "store"}))["data"]
    assert got["id"] == project_id
    problem(emulator.call("projects.getProject", {"project": "shop"}), 404)
    assert get_app(emulator, project="store")["slug"] == "web"
    assert make_project(emulator, "shop") != project_id
    problem(emulator.call("projects.updateProject", {"project": "shop", "slug": "store"}), 409)


def test_deleted_app_frees_its_slug_environments_and_domains(emulator: EmulatorServer) -> None:
    make_project(emulator)
    make_app(emulator, slug="web")
    make_app(emulator, slug="api")
    _domain(emulator, "www.example.com")
    env_id = ok(emulator.call("environments.getEnvironment", target()))["data"]["id"]
    ok(emulator.call("apps.deleteApp", {"project": "shop", "app": "web"}), 202)
    problem(emulator.call("apps.getApp", {"project": "shop", "app": "web"}), 404)
    problem(emulator.call("domains.getDomain", {"domain": "www.example.com"}), 404)
    assert env_id not in emulator.state()["environments"]
    listed = ok(emulator.call("apps.listApps", {"project": "shop"}))["data"]
    assert [a["slug"] for a in listed] == ["api"]
    make_app(emulator, slug="web")
    _domain(emulator, "www.example.com")  # the host name is free again
    assert _domain_hosts(emulator, app="web") == ["www.example.com"]


def test_deleted_project_cascades_through_every_index(emulator: EmulatorServer) -> None:
    make_project(emulator, "shop")
    make_project(emulator, "blog")
    make_app(emulator, project="shop", slug="web")
    _domain(emulator, "www.example.com")
    ok(emulator.call("projects.deleteProject", {"project": "shop"}), 202)
    problem(emulator.call("projects.getProject", {"project": "shop"}), 404)
    problem(emulator.call("domains.listDomains", {"app": "web"}), 404)
    make_project(emulator, "shop")
    make_app(emulator, project="shop", slug="web")
    _domain(emulator, "www.example.com")
    assert _domain_hosts(emulator, project="shop") == ["www.example.com"]
    assert ok(emulator.call("apps.listApps", {"project": "blog"}))["data"] == []


def test_reset_empties_the_indexes(emulator: EmulatorServer) -> None:
    make_project(emulator)
    make_app(emulator)
    _domain(emulator, "www.example.com")
    emulator.reset()
    problem(emulator.call("projects.getProject", {"project": "shop"}), 404)
    make_project(emulator)
    make_app(emulator)
    _domain(emulator, "www.example.com")
    listed = ok(emulator.call("environments.listEnvironments", {"project": "shop", "app": "web"}))
    assert [e["slug"] for e in listed["data"]] == ["production", "preview"]


def test_a_reloaded_state_file_is_indexed(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    emulator = create_app(EmulatorConfig(state_file=path, dev_key="k")).state.emulator
    store = emulator.store
    store.add_project({"id": "proj_1", "slug": "shop", "_seq": 1})
    store.add_app({"id": "app_1", "slug": "web", "_projectId": "proj_1", "_seq": 2})
    for seq, slug in ((4, "preview"), (3, "production")):
        env = {"id": f"env_{slug}", "slug": slug, "_appId": "app_1", "_seq": seq}
        store.environments[env["id"]] = env  # out of creation order on purpose
    owners = {"projectId": "proj_1", "appId": "app_1", "environmentId": "env_production"}
    store.add_domain({"id": "dom_1", "domain": "www.example.com", "_appId": "app_1", **owners})
    store.save()
    reloaded = Store(path)
    project = reloaded.project("shop")
    app = reloaded.app(project, "web")
    assert app["id"] == "app_1"
    assert [e["slug"] for e in reloaded.app_environments("app_1")] == ["production", "preview"]
    assert reloaded.environment(app, "preview")["id"] == "env_preview"
    assert reloaded.domain("WWW.example.com.")["id"] == "dom_1"
    assert [a["id"] for a in reloaded.project_apps("proj_1")] == ["app_1"]
    for owner, owner_id in owners.items():
        assert [d["id"] for d in reloaded.domains_of(owner, owner_id)] == ["dom_1"]


def test_a_dns_change_verifies_a_domain_already_checked(emulator: EmulatorServer) -> None:
    make_project(emulator)
    make_app(emulator)
    records = _domain(emulator, "www.example.com")["dnsRecords"]
    emulator.advance_clock(STEP_MS)
    get = {"domain": "www.example.com"}
    # read several times: the domain was evaluated and has nothing due for 24 hours
    for _ in range(3):
        assert ok(emulator.call("domains.getDomain", get))["data"]["status"] == "verifying"
    emulator.set_dns([{k: r[k] for k in ("type", "name", "value")} for r in records])
    assert ok(emulator.call("domains.getDomain", get))["data"]["status"] == "verified"


def test_each_domain_fails_at_its_own_deadline(emulator: EmulatorServer) -> None:
    make_project(emulator)
    make_app(emulator)
    _domain(emulator, "a.example.com")
    emulator.advance_clock(DAY_MS // 2)
    _domain(emulator, "b.example.com")
    emulator.advance_clock(STEP_MS)

    def status(host: str) -> str:
        return ok(emulator.call("domains.getDomain", {"domain": host}))["data"]["status"]

    assert (status("a.example.com"), status("b.example.com")) == ("verifying", "verifying")
    emulator.advance_clock(DAY_MS // 2)
    assert (status("a.example.com"), status("b.example.com")) == ("failed", "verifying")
    ok(emulator.call("domains.verifyDomain", {"domain": "a.example.com"}), 202)  # a new period
    emulator.advance_clock(DAY_MS // 2)
    assert (status("a.example.com"), status("b.example.com")) == ("verifying", "failed")


def test_deployments_started_before_a_reload_or_restarted_still_progress(tmp_path: Path) -> None:
    """Only deployments still in progress are advanced on each request: the set of them must
    include those found in a reloaded state file and previews started again."""
    path = tmp_path / "state.json"
    where = {"project": "shop", "app": "web", "environment": "preview"}

    def app():
        return create_app(EmulatorConfig(state_file=path, dev_key="k", step_ms=60_000))

    def status(emulator, deployment_id: str) -> str:
        got = call_in_process(
            emulator, "deployments.getDeployment", {"deploymentId": deployment_id}
        )
        return got["data"]["status"]

    first = app()
    call_in_process(first, "projects.createProject", {"name": "S", "slug": "shop"})
    body = {"project": "shop", "name": "W", "slug": "web", "oci": {"image": "nginx:1"}}
    call_in_process(first, "apps.createApp", body)
    created = call_in_process(
        first, "deployments.createDeployment", {**where, "image": {"dockerImage": "nginx:2"}}
    )
    deployment_id = created["data"]["deploymentId"]
    assert status(first, deployment_id) == "pending"

    second = app()  # a reload: the deployment is still in progress
    call_in_process(second, "/_emulator/clock", {"advanceMs": 10 * 60_000})
    assert status(second, deployment_id) == "ready"
    call_in_process(second, "deployments.stopDeployment", {"deploymentId": deployment_id})
    call_in_process(second, "deployments.startDeployment", {"deploymentId": deployment_id})
    assert status(second, deployment_id) == "starting"
    call_in_process(second, "/_emulator/clock", {"advanceMs": 60_000})
    assert status(second, deployment_id) == "ready"
