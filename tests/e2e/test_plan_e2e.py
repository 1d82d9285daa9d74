"""`reconciler plan` end to end over the HTTP emulator: every resource kind and action.

Live state is seeded through the platform API (tests/fixtures/cli.py `seed`), the
manifest written to a temporary file, and the plan read back from `--format json`.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import write_manifest

# Match members that read the same in the design's manifest shape and the emulator's.
HEADER_MATCH = [{"header": {"name": "X-Admin", "present": True}}]


def policy(name: str, *, ip: str = "203.0.113.0/24") -> dict[str, Any]:
    return {
        "name": name,
        "enabled": True,
        "match": [{"remoteIp": {"notIn": [ip]}}],
        "firewall": {"action": "ACTION_DENY"},
    }


def policy_yaml(name: str, *, ip: str = "203.0.113.0/24", indent: int = 14) -> str:
    pad = " " * indent
    return (
        f"{pad}- name: {name}\n"
        f"{pad}  enabled: true\n"
        f'{pad}  match: [{{remoteIp: {{notIn: ["{ip}"]}}}}]\n'
        f"{pad}  firewall: {{action: ACTION_DENY}}\n"
    )


def plan_json(cli: Any, manifest: Path, *args: str, env: dict | None = None) -> dict[str, Any]:
    result = cli("plan", "-f", str(manifest), "--format", "json", *args, env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_address(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {change["address"]: change for change in plan["changes"]}


def operations(change: dict[str, Any]) -> list[str]:
    return [call["operation"] for call in change["calls"]]


def reads(emulator: Any) -> list[str]:
    return [r["operation"] for r in emulator.requests()]


# --- creating from nothing ----------------------------------------------------------------


def test_a_new_project_is_created_with_everything_under_it_and_nothing_under_it_is_read(
    cli, emulator, tmp_path
):
    manifest = write_manifest(
        tmp_path,
        textwrap.dedent(
            """
        version: 1
        projects:
          shop:
            name: Shop
            deleteProtection: true
            apps:
              web:
                git: {repository: acme/web}
                deleteProtection: true
                environments:
                  production:
                    runtime: {port: 3000, vCpus: 0.5}
                    variables: {NODE_ENV: production}
                    domains: [shop.example.com]
                    policies:
        """
        ).lstrip()
        + policy_yaml("office", indent=12),
    )
    plan = plan_json(cli, manifest)
    changes = by_address(plan)
    assert list(changes) == [
        "project.shop",
        "app.shop/web",
        "settings.shop/web/production",
        "variable.shop/web/production/NODE_ENV",
        "policies.shop/web/production",
        "domain.shop/web/production/shop.example.com",
    ]
    assert all(c["actions"] == ["create"] for c in changes.values())
    # protection cannot be set by the create calls: an update follows each
    assert operations(changes["project.shop"]) == [
        "projects.createProject",
        "projects.updateProject",
    ]
    assert operations(changes["app.shop/web"]) == ["apps.createApp", "apps.updateApp"]
    assert changes["app.shop/web"]["depends_on"] == ["project.shop"]
    for address in list(changes)[2:]:
        assert changes[address]["depends_on"] == ["app.shop/web"]
    # nothing that does not exist yet is read: one getProject, one getDomain for the new host,
    # and once per run the listProjects (limit 1) that shows a 404 comes from the platform
    assert sorted(reads(emulator)) == [
        "domains.getDomain",
        "projects.getProject",
        "projects.listProjects",
    ]
    assert plan["summary"]["add"] == 6
    assert "project.*.create_project" in plan["permissions"]


# --- no perpetual diffs -------------------------------------------------------------------


def test_every_manageable_field_set_through_the_api_plans_no_changes(cli, seed, tmp_path):
    project_id = seed.project("shop", "Shop", delete_protection=True)
    seed.app("shop", "web", name="Web", git={"repository": "acme/web"}, delete_protection=True)
    seed.app("shop", "img", name="Img", oci={"image": "ghcr.io/acme/img:1.2.3"})
    seed.settings(
        "shop", "web", "production",
        dockerfile="Dockerfile", rootDirectory=".", buildCommand="npm run build",
        watchPaths=["src/**", "package.json"], autoDeploy=True, port=3000, vCpus=1,
        memoryMib=512, storageMib=0, command=["node", "server.js"],
        healthcheck={"method": "GET", "path": "/healthz"}, shutdownSignal="SIGTERM",
        upstreamProtocol="http1", openapiSpecPath="/openapi.json",
        regions=[{"name": "fra", "replicas": {"min": 2, "max": 6}},
                 {"name": "iad", "replicas": {"min": 1, "max": 1}}],
    )  # fmt: skip
    seed.settings("shop", "web", "preview", vCpus=0.25, buildCommand="make", watchPaths=[])
    seed.variables(
        "shop", "web", "production",
        [{"key": "NODE_ENV", "value": "production", "kind": "recoverable"},
         {"key": "API_URL", "value": "https://api.example.com", "kind": "recoverable",
          "description": "backend"},
         {"key": "STRIPE_KEY", "value": "sk_live_x", "kind": "writeonly"}],
    )  # fmt: skip
    seed.policies(
        "shop", "web", "production",
        [policy("office"),
         {"name": "debug-log", "enabled": False,
          "match": [{"queryParam": {"name": "debug", "value": {"exact": "1", "ignoreCase": False}}}],
          "logging": {"requestHeaders": True, "responseBody": False}},
         {"name": "admin", "enabled": True, "match": HEADER_MATCH,
          "firewall": {"action": "ACTION_DENY"}}],
    )  # fmt: skip
    seed.domain("shop", "web", "production", "Shop.Example.com")
    seed.domain("shop", "web", "production", "www.shop.example.com")
    manifest = write_manifest(
        tmp_path,
        textwrap.dedent(
            f"""
        version: 1
        projects:
          shop:
            id: {project_id}
            name: Shop
            deleteProtection: true
            apps:
              img:
                name: Img
                oci: {{image: "ghcr.io/acme/img:1.2.3"}}
              web:
                name: Web
                deleteProtection: true
                git: {{repository: acme/web}}
                defaults:
                  runtime: {{vCpus: 1.0, memoryMib: 512}}
                environments:
                  production:
                    build:
                      dockerfile: Dockerfile
                      rootDirectory: .
                      buildCommand: npm run build
                      watchPaths: ["src/**", package.json]
                      autoDeploy: true
                    runtime:
                      port: 3000
                      storageMib: 0
                      command: [node, server.js]
                      healthcheck: {{method: GET, path: /healthz, intervalSeconds: 10}}
                      shutdownSignal: SIGTERM
                      upstreamProtocol: http1
                      openapiSpecPath: /openapi.json
                    regions:
                      - {{name: iad, replicas: {{min: 1, max: 1}}}}
                      - {{name: fra, replicas: {{min: 2, max: 6}}}}
                    variables:
                      NODE_ENV: production
                      API_URL: {{value: "https://api.example.com", description: backend}}
                      STRIPE_KEY: {{fromEnv: SHOP_STRIPE_KEY}}
                    domains: [shop.example.com, WWW.shop.example.com.]
                    policies:
        """
        ).lstrip()
        + policy_yaml("office", indent=14)
        + textwrap.indent(
            textwrap.dedent(
                """\
                      - name: debug-log
                        enabled: false
                        match: [{queryParam: {name: debug, value: {exact: "1", ignoreCase: false}}}]
                        logging: {requestHeaders: true, responseBody: false}
                      - name: admin
                        enabled: true
                        match: [{header: {name: X-Admin, present: true}}]
                        firewall: {action: ACTION_DENY}
                  preview:
                    runtime: {vCpus: 0.25, memoryMib: 512}
                    build: {buildCommand: make, dockerfile: null, watchPaths: []}
        """
            ),
            " " * 10,
        ),
    )
    result = cli("plan", "-f", str(manifest), "--detailed-exitcode")
    assert result.exit_code == 0, result.output
    assert "No changes. Live state matches the manifest." in result.stdout


# --- variables ----------------------------------------------------------------------------


def test_more_than_fifty_variable_changes_are_sent_in_batches_each_call_once(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.variables(
        "shop", "web", "production",
        [{"key": f"OLD_{i}", "value": "old", "kind": "recoverable"} for i in range(60)]
        + [{"key": f"GONE_{i}", "value": "x", "kind": "recoverable"} for i in range(55)],
    )  # fmt: skip
    lines = [f"OLD_{i}: new" for i in range(60)] + [f"NEW_{i}: v{i}" for i in range(60)]
    manifest = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            variables:\n"
        + "".join(f"              {line}\n" for line in lines),
    )
    plan = plan_json(cli, manifest)
    changes = plan["changes"]
    assert len(changes) == 120 + 55
    assert sum(c["actions"] == ["update"] for c in changes) == 60
    assert sum(c["actions"] == ["create"] for c in changes) == 60
    assert sum(c["actions"] == ["delete"] for c in changes) == 55
    calls = [call for c in changes for call in c["calls"]]
    sets = [c for c in calls if c["operation"] == "environments.setEnvironmentVariables"]
    removes = [c for c in calls if c["operation"] == "environments.removeEnvironmentVariables"]
    assert [len(c["body"]["variables"]) for c in sets] == [50, 50, 20]
    assert [len(c["body"]["variables"]) for c in removes] == [50, 5]
    assert all("prune" not in c["body"] for c in sets)
    sent = [v["key"] for c in sets for v in c["body"]["variables"]]
    assert sorted(sent) == sorted(line.split(":")[0] for line in lines)  # each exactly once
    carriers = {c["address"] for c in changes if c["calls"]}
    for change in changes:
        if not change["calls"]:
            assert len(change["depends_on"]) == 1 and change["depends_on"][0] in carriers


def test_a_plan_runs_without_its_secrets_and_shows_them_unknown(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    variables:
                      STRIPE_KEY: {fromEnv: SHOP_STRIPE_KEY_UNSET}
        """,
    )
    result = cli(
        "plan", "-f", str(manifest), "--detailed-exitcode", env={"SHOP_STRIPE_KEY_UNSET": None}
    )
    assert result.exit_code == 2, result.output
    assert "(known after apply)" in result.stdout
    assert (
        "fromEnv SHOP_STRIPE_KEY_UNSET (variable.shop/web/production/STRIPE_KEY)" in result.stdout
    )
    plan = plan_json(cli, manifest, env={"SHOP_STRIPE_KEY_UNSET": None})
    (change,) = plan["changes"]
    value = next(d for d in change["diffs"] if d["path"] == "value")
    assert value["known_after_apply"] is True
    item = change["calls"][0]["body"]["variables"][0]
    assert item["value"] == {
        "$secret": {"source": "fromEnv:SHOP_STRIPE_KEY_UNSET", "fingerprint": None}
    }


def test_write_only_values_compare_through_the_keyed_fingerprint(cli, seed, tmp_path):
    from reconciler.plan.secrets import fingerprint, with_fingerprint
    from reconciler.sensitive import Secret

    key = "fp-key-for-tests"
    address = "variable.shop/web/production/TOKEN"
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    fp = fingerprint(key.encode(), address, Secret("value-one"))
    seed.variables(
        "shop", "web", "production",
        [{"key": "TOKEN", "value": "value-one", "kind": "writeonly",
          "description": with_fingerprint("api token", fp)}],
    )  # fmt: skip
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    variables:
                      TOKEN: {fromEnv: TOKEN_SOURCE, description: api token}
        """,
    )
    keyed = {"RECONCILER_FINGERPRINT_KEY": key}
    same = cli(
        "plan",
        "-f",
        str(manifest),
        "--detailed-exitcode",
        env={**keyed, "TOKEN_SOURCE": "value-one"},
    )
    assert same.exit_code == 0, same.output
    changed = plan_json(cli, manifest, env={**keyed, "TOKEN_SOURCE": "value-two"})
    (change,) = changed["changes"]
    assert change["actions"] == ["update"]
    item = change["calls"][0]["body"]["variables"][0]
    new_fp = fingerprint(key.encode(), address, Secret("value-two"))
    assert item["description"] == with_fingerprint("api token", new_fp)
    assert item["value"]["$secret"]["fingerprint"] == new_fp
    assert changed["metadata"]["fingerprint_mode"] == "keyed"
    # without the key: compared by presence and kind only, and the plan says so once
    unkeyed = cli(
        "plan", "-f", str(manifest), "--detailed-exitcode", env={"TOKEN_SOURCE": "value-two"}
    )
    assert unkeyed.exit_code == 0, unkeyed.output
    assert unkeyed.stdout.count("compared by presence and kind only") == 1


# --- policies -----------------------------------------------------------------------------


def test_a_policy_inserted_mid_list_is_one_insertion(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    names = ["p0", "p1", "p2", "p3", "p4"]
    seed.policies(
        "shop", "web", "production", [policy(n, ip=f"10.0.{i}.0/24") for i, n in enumerate(names)]
    )
    wanted = [*names[:2], "inserted", *names[2:]]
    body = "".join(
        policy_yaml(n, ip=f"10.0.{names.index(n) if n in names else 99}.0/24", indent=14)
        for n in wanted
    )
    manifest = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            policies:\n" + body,
    )
    plan = plan_json(cli, manifest)
    (change,) = plan["changes"]
    assert change["address"] == "policies.shop/web/production"
    edits = change["policy_edits"]
    assert [e["op"] for e in edits].count("insert") == 1
    assert [e["op"] for e in edits].count("keep") == 5
    insert = next(e for e in edits if e["op"] == "insert")
    assert insert["after_index"] == 2 and insert["after"]["name"] == "inserted"
    (call,) = change["calls"]
    assert call["operation"] == "gateway.setPolicies"
    assert [p["name"] for p in call["body"]["policies"]] == wanted
    text = cli("plan", "-f", str(manifest)).stdout
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in text
    edited = [
        line.strip() for line in text.splitlines() if line.strip().startswith(("+ [", "- [", "~ ["))
    ]
    assert edited == ['+ [2] name = "inserted"']


def test_a_changed_policy_is_one_change_with_field_diffs(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.policies("shop", "web", "production", [policy("a"), policy("b"), policy("c")])
    body = policy_yaml("a") + policy_yaml("b", ip="198.51.100.0/24") + policy_yaml("c")
    manifest = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            policies:\n" + body,
    )
    (change,) = plan_json(cli, manifest)["changes"]
    ops = [e["op"] for e in change["policy_edits"]]
    assert ops == ["keep", "change", "keep"]
    (diff,) = change["policy_edits"][1]["diffs"]
    assert diff["path"] == "match[0].remoteIp.notIn"
    assert diff["after"] == ["198.51.100.0/24"]


# --- domains ------------------------------------------------------------------------------


def test_a_domain_moving_between_environments_is_delete_then_create(cli, seed, emulator, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.domain("shop", "web", "preview", "shop.example.com")
    seed.domain("shop", "web", "preview", "old.example.com")
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        prune: {domains: false}
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    domains: [shop.example.com]
                  preview:
                    domains: []
        """,
    )
    plan = plan_json(cli, manifest)
    changes = by_address(plan)
    # prune.domains is off, so old.example.com stays; the moving host is deleted anyway
    assert set(changes) == {
        "domain.shop/web/preview/shop.example.com",
        "domain.shop/web/production/shop.example.com",
    }
    delete = changes["domain.shop/web/preview/shop.example.com"]
    create = changes["domain.shop/web/production/shop.example.com"]
    assert delete["actions"] == ["delete"] and operations(delete) == ["domains.deleteDomain"]
    assert create["actions"] == ["create"] and create["depends_on"] == [delete["address"]]
    # the host was seen in the preview list, so it is not looked up again
    assert "domains.getDomain" not in reads(emulator)


def test_a_targeted_move_still_deletes_the_host_where_the_manifest_no_longer_lists_it(
    cli, seed, tmp_path
):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.domain("shop", "web", "preview", "shop.example.com")
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production: {domains: [shop.example.com]}
                  preview: {domains: []}
        """,
    )
    plan = plan_json(cli, manifest, "--target", "domain.shop/web/production")
    changes = by_address(plan)
    delete = changes["domain.shop/web/preview/shop.example.com"]
    create = changes["domain.shop/web/production/shop.example.com"]
    assert delete["actions"] == ["delete"] and delete["action_reason"] == "moved"
    assert create["depends_on"] == [delete["address"]]
    assert any("outside the targets" in n["message"] for n in plan["notes"])
    assert not any("409" in n["message"] for n in plan["notes"])


def test_a_host_attached_outside_the_manifest_is_reported_with_where(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.project("blog")
    seed.app("blog", "site", git={"repository": "acme/blog"})
    seed.domain("blog", "site", "production", "shop.example.com")
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    domains: [shop.example.com]
        """,
    )
    plan = plan_json(cli, manifest)
    (change,) = plan["changes"]
    assert change["action_reason"] == "attached_elsewhere"
    assert any("409" in n and "blog/site/production" in n for n in change["notes"])
    assert any(
        n["severity"] == "warning" and "shop.example.com" in n["message"] for n in plan["notes"]
    )


def test_domains_not_listed_are_pruned_and_host_case_is_ignored(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.domain("shop", "web", "production", "keep.example.com")
    seed.domain("shop", "web", "production", "gone.example.com")
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    domains: [KEEP.example.com]
        """,
    )
    (change,) = plan_json(cli, manifest)["changes"]
    assert change["address"] == "domain.shop/web/production/gone.example.com"
    assert change["actions"] == ["delete"]


# --- apps: delete, blocked, replace, rename -----------------------------------------------


def test_apps_not_in_the_manifest_are_noted_or_pruned_and_protected_ones_blocked(
    cli, seed, tmp_path
):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.app("shop", "old", git={"repository": "acme/old"})
    seed.app("shop", "vault", git={"repository": "acme/vault"}, delete_protection=True)
    text = """
        version: 1
        {prune}
        projects:
          shop:
            apps:
              web: {{}}
        """
    unmanaged = plan_json(cli, write_manifest(tmp_path, text.format(prune="")))
    assert unmanaged["changes"] == []
    noted = [n for n in unmanaged["notes"] if "unmanaged" in n["message"]]
    assert {n["address"] for n in noted} == {"app.shop/old", "app.shop/vault"}

    pruned = plan_json(cli, write_manifest(tmp_path, text.format(prune="prune: {apps: true}")))
    changes = by_address(pruned)
    assert changes["app.shop/old"]["actions"] == ["delete"]
    assert operations(changes["app.shop/old"]) == ["apps.deleteApp"]
    blocked = changes["app.shop/vault"]
    assert blocked["actions"] == ["no-op"] and blocked["action_reason"] == "delete_protected"
    assert blocked["calls"] == []
    assert any("deleteProtection: false" in n for n in blocked["notes"])
    result = cli("plan", "-f", str(tmp_path / "platform.yaml"))
    assert "Plan: 0 to add, 0 to change, 1 to destroy." in result.stdout


def test_a_source_change_is_a_replace_and_nothing_under_the_app_is_read(
    cli, seed, emulator, tmp_path
):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.variables("shop", "web", "production", [{"key": "A", "value": "1", "kind": "recoverable"}])
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                oci: {image: "ghcr.io/acme/web:2.0.0"}
                environments:
                  production:
                    variables: {A: "1"}
        """,
    )
    before = len(emulator.requests())
    plan = plan_json(cli, manifest)
    changes = by_address(plan)
    replace = changes["app.shop/web"]
    assert replace["actions"] == ["delete", "create"]
    assert replace["action_reason"] == "source_type_changed"
    assert operations(replace) == ["apps.deleteApp", "apps.createApp"]
    assert any("--allow-replace" in n for n in replace["notes"])
    # the variables go with the old app: created again, depending on the replace
    variable = changes["variable.shop/web/production/A"]
    assert variable["actions"] == ["create"] and variable["depends_on"] == ["app.shop/web"]
    assert reads(emulator)[before:] == ["projects.getProject", "apps.listApps"]
    assert any("--allow-replace" in n["message"] for n in plan["notes"])


def test_a_replace_of_a_protected_app_is_blocked(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", oci={"image": "ghcr.io/acme/web:1"}, delete_protection=True)
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                git: {repository: acme/web}
        """,
    )
    (change,) = plan_json(cli, manifest)["changes"]
    assert change["actions"] == ["no-op"] and change["action_reason"] == "delete_protected"
    assert change["calls"] == []


def test_a_pinned_id_with_a_new_slug_is_a_rename(cli, seed, emulator, tmp_path):
    project_id = seed.project("shop-old", "Shop")
    app_id = seed.app("shop-old", "web-old", name="Web", git={"repository": "acme/web"})
    seed.settings("shop-old", "web-old", "production", port=3000)
    manifest = write_manifest(
        tmp_path,
        f"""
        version: 1
        projects:
          shop:
            id: {project_id}
            apps:
              web:
                id: {app_id}
                environments:
                  production:
                    runtime: {{port: 8080}}
        """,
    )
    changes = by_address(plan_json(cli, manifest))
    project = changes["project.shop"]
    assert project["actions"] == ["update"] and project["action_reason"] == "renamed"
    assert project["calls"][0]["body"] == {"project": project_id, "slug": "shop"}
    app = changes["app.shop/web"]
    assert app["action_reason"] == "renamed" and app["depends_on"] == ["project.shop"]
    assert app["calls"][0]["body"] == {"project": project_id, "app": app_id, "slug": "web"}
    settings = changes["settings.shop/web/production"]
    # environment calls go by id, so they work before and after the renames
    assert settings["calls"][0]["body"]["project"] == project_id
    assert settings["calls"][0]["body"]["app"] == app_id
    assert settings["depends_on"] == ["app.shop/web"]
    assert (
        settings["calls"][0]["permission"].startswith("environment.")
        and "*" not in settings["calls"][0]["permission"]
    )


# --- settings -----------------------------------------------------------------------------


def test_settings_update_sends_only_what_differs_and_nulls_what_is_cleared(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.settings(
        "shop", "web", "production", port=3000, vCpus=0.5, buildCommand="make",
        healthcheck={"method": "GET", "path": "/healthz"},
    )  # fmt: skip
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    runtime:
                      port: 3000
                      vCpus: 1
                      healthcheck: {method: GET, path: /ready}
                    build: {buildCommand: null}
        """,
    )
    (change,) = plan_json(cli, manifest)["changes"]
    body = change["calls"][0]["body"]
    assert set(body) == {"project", "app", "environment", "vCpus", "healthcheck", "buildCommand"}
    assert body["buildCommand"] is None
    assert body["healthcheck"]["path"] == "/ready"
    paths = {d["path"] for d in change["diffs"]}
    assert paths == {"runtime.vCpus", "runtime.healthcheck.path", "build.buildCommand"}


# --- targets, exit codes, errors ----------------------------------------------------------


def test_target_limits_the_plan_and_what_is_read(cli, seed, emulator, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.app("shop", "api", git={"repository": "acme/api"})
    seed.project("blog")
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production: {runtime: {port: 1}, variables: {A: "1"}}
              api:
                environments:
                  production: {runtime: {port: 2}}
          blog:
            name: Blog renamed
        """,
    )
    before = len(emulator.requests())
    plan = plan_json(cli, manifest, "--target", "variable.shop/web")
    assert [c["address"] for c in plan["changes"]] == ["variable.shop/web/production/A"]
    assert plan["targets"] == ["variable.shop/web"]
    assert sorted(reads(emulator)[before:]) == sorted(
        ["projects.getProject", "apps.listApps", "environments.listEnvironmentVariables"]
    )
    everything = plan_json(cli, manifest, "--target", "project.shop", "--target", "project.blog")
    assert len(everything["changes"]) == 4


def test_detailed_exitcode_and_errors(cli, seed, tmp_path):
    seed.project("shop", "Shop")
    same = write_manifest(tmp_path, "version: 1\nprojects:\n  shop: {name: Shop}\n", "same.yaml")
    other = write_manifest(tmp_path, "version: 1\nprojects:\n  shop: {name: Other}\n", "other.yaml")
    assert cli("plan", "-f", str(same), "--detailed-exitcode").exit_code == 0
    assert cli("plan", "-f", str(other), "--detailed-exitcode").exit_code == 2
    assert cli("plan", "-f", str(other)).exit_code == 0
    bad_target = cli("plan", "-f", str(same), "--target", "nonsense")
    assert bad_target.exit_code == 1 and "invalid address" in bad_target.stderr
    no_url = cli("plan", "-f", str(same), env={"RECONCILER_BASE_URL": None})
    assert no_url.exit_code == 1 and "base URL" in no_url.stderr
    bad_key = cli("plan", "-f", str(same), env={"RECONCILER_API_KEY": "wrong-key-123"})
    assert bad_key.exit_code == 1 and "Traceback" not in bad_key.output
    invalid = write_manifest(tmp_path, "version: 1\nprojects:\n  S!: {}\n", "invalid.yaml")
    assert cli("plan", "-f", str(invalid), "--detailed-exitcode").exit_code == 1


def test_max_deletes_is_flagged_in_the_plan(cli, seed, tmp_path):
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.variables(
        "shop", "web", "production",
        [{"key": f"V{i}", "value": "x", "kind": "recoverable"} for i in range(3)],
    )  # fmt: skip
    manifest = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production: {variables: {}}\n",
    )
    plan = plan_json(cli, manifest, "--max-deletes", "2")
    assert plan["max_deletes"] == 2
    assert any("--max-deletes" in n["message"] for n in plan["notes"])
    assert not any("--max-deletes" in n["message"] for n in plan_json(cli, manifest)["notes"])


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_a_sentinel_secret_appears_nowhere(cli, seed, tmp_path, fmt):
    sentinel = "SENTINEL-s3cr3t-VALUE-91x"
    seed.project("shop")
    seed.app("shop", "web", git={"repository": "acme/web"})
    seed.variables(
        "shop", "web", "production", [{"key": "OLD", "value": sentinel, "kind": "writeonly"}]
    )
    secret_file = tmp_path / "tls.key"
    secret_file.write_text(sentinel + "-file")
    manifest = write_manifest(
        tmp_path,
        """
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    variables:
                      OLD: {fromEnv: SECRET_SOURCE_ENV}
                      FROM_FILE: {fromFile: tls.key}
                      LITERAL: {value: "SENTINEL-s3cr3t-VALUE-91x-literal", kind: writeonly}
                      NEW: {fromEnv: SECRET_SOURCE_ENV}
        """,
    )
    out = tmp_path / "plan.json"
    env = {
        "SECRET_SOURCE_ENV": sentinel + "-changed",
        "RECONCILER_FINGERPRINT_KEY": "k-1234567890abcdef",
    }
    result = cli("plan", "-f", str(manifest), "--format", fmt, "-v", "--out", str(out), env=env)
    assert result.exit_code == 0, result.output
    assert "environments.listEnvironmentVariables" in result.stderr  # -v logged the calls
    for text in (result.stdout, result.stderr, out.read_text()):
        assert "SENTINEL" not in text
    assert "known after apply" not in result.stdout  # every source was available
