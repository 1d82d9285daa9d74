"""The plan issue's scenarios, applied: each converges (plan empty, second apply writes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.test_apply_e2e import apply, assert_converged, write_manifest


def app_manifest(
    environments: str, *, project: str = "shop", app: str = "web", ids: str = ""
) -> str:
    project_id, _, app_id = ids.partition(",")
    return (
        f"version: 1\nprojects:\n  {project}:\n"
        + (f"    id: {project_id}\n" if project_id else "")
        + f"    name: Shop\n    apps:\n      {app}:\n"
        + (f"        id: {app_id}\n" if app_id else "")
        + "        name: Web\n        oci: {image: ghcr.io/acme/web:1}\n"
        + "        environments:\n"
        + environments
    )


def apply_ok(emulator: Any, manifest: str, *extra: str) -> str:
    result = apply(emulator, "-f", manifest, "--auto-approve", *extra)
    assert result.exit_code == 0, result.output
    assert "Apply complete!" in result.output
    return result.output


def test_more_than_fifty_variables_are_sent_in_batches(emulator: Any, tmp_path: Path) -> None:
    def variables(count: int, value: str) -> str:
        items = "".join(f"              V{i:03}: {value}{i}\n" for i in range(count))
        return f"          production:\n            variables:\n{items}"

    manifest = write_manifest(tmp_path, app_manifest(variables(120, "a")))
    apply_ok(emulator, manifest)
    sets = [r for r in emulator.requests() if r["operation"].endswith("setEnvironmentVariables")]
    assert len(sets) == 3
    assert_converged(emulator, [manifest])

    write_manifest(tmp_path, app_manifest(variables(110, "b")))
    output = apply_ok(emulator, manifest)
    assert "Resources: 0 added, 110 changed, 10 destroyed." in output
    assert_converged(emulator, [manifest])


def test_a_policy_inserted_mid_list(emulator: Any, tmp_path: Path) -> None:
    def policies(*names: str) -> str:
        items = "".join(
            f"              - {{name: {n}, enabled: true, logging: {{query: true}}}}\n"
            for n in names
        )
        return f"          production:\n            policies:\n{items}"

    manifest = write_manifest(tmp_path, app_manifest(policies("a", "c")))
    apply_ok(emulator, manifest)
    write_manifest(tmp_path, app_manifest(policies("a", "b", "c")))
    apply_ok(emulator, manifest)
    live = emulator.call(
        "gateway.listPolicies", {"project": "shop", "app": "web", "environment": "production"}
    ).json()["data"]
    assert [p["name"] for p in live] == ["a", "b", "c"]
    assert_converged(emulator, [manifest])


def test_a_domain_moves_between_environments(emulator: Any, tmp_path: Path) -> None:
    host = "shop.example.com"
    before = f"          production:\n            domains: [{host}]\n          preview:\n            domains: []\n"
    after = f"          production:\n            domains: []\n          preview:\n            domains: [{host}]\n"
    manifest = write_manifest(tmp_path, app_manifest(before))
    apply_ok(emulator, manifest)
    write_manifest(tmp_path, app_manifest(after))

    output = apply_ok(emulator, manifest)

    assert "Resources: 1 added, 0 changed, 1 destroyed." in output
    log = [r["operation"] for r in emulator.requests()]
    assert log.index("domains.deleteDomain") < len(log) - 1 - log[::-1].index(
        "domains.createDomain"
    )
    domain = emulator.call("domains.getDomain", {"domain": host}).json()["data"]
    preview = emulator.call(
        "environments.getEnvironment", {"project": "shop", "app": "web", "environment": "preview"}
    ).json()["data"]
    assert domain["environmentId"] == preview["id"]
    assert_converged(emulator, [manifest])


def test_renames_through_pinned_ids(emulator: Any, tmp_path: Path) -> None:
    settings = "          production:\n            runtime: {port: 8080}\n"
    manifest = write_manifest(tmp_path, app_manifest(settings))
    apply_ok(emulator, manifest)
    project = emulator.call("projects.getProject", {"project": "shop"}).json()["data"]
    app = emulator.call("apps.getApp", {"project": "shop", "app": "web"}).json()["data"]

    renamed = app_manifest(
        "          production:\n            runtime: {port: 9090}\n",
        project="store",
        app="site",
        ids=f"{project['id']},{app['id']}",
    )
    write_manifest(tmp_path, renamed)
    output = apply_ok(emulator, manifest)

    assert "Resources: 0 added, 3 changed, 0 destroyed." in output
    moved = emulator.call("apps.getApp", {"project": "store", "app": "site"}).json()["data"]
    assert moved["id"] == app["id"]
    assert_converged(emulator, [manifest])
