"""End to end, through the CLI, against an emulator behaving like a newer platform: live state
with a policy of an unknown kind, unknown members in settings, policies and a variable of an
unknown kind, and an extra environment. `plan` shows them, `apply` keeps them (and refuses
before any write what would remove them, unless --allow-unknown-removal), `export` round-trips
them, `reconciler test` says which tests it cannot decide, and the extra environment is
reported and never touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.cli import CliResult, platform_env, run_cli, write_manifest
from tests.fixtures.emulator import EmulatorServer

TARGET = {"project": "shop", "app": "web", "environment": "production"}
WRITES = ("environments.updateSettings", "gateway.setPolicies", "environments.setEnvironmentVariables",
          "environments.removeEnvironmentVariables", "apps.updateApp", "projects.updateProject")  # fmt: skip

MANIFEST = """\
version: 1
projects:
  shop:
    name: Shop
    apps:
      web:
        name: Web
        oci: {image: ghcr.io/acme/web:1.0}
        environments:
          production:
            runtime: {port: 8080, healthcheck: {method: GET, path: /healthz}}
            regions: [{name: fra, replicas: {min: 1, max: 3}}, {name: iad, replicas: {min: 1, max: 2}}]
            variables: {MODE: live}
            policies:
              - name: block-admin
                enabled: true
                match: [{path: {path: {prefix: /admin}}}]
                firewall: {action: ACTION_DENY}
"""


class Newer:
    """A newer platform's emulator and the CLI pointed at it."""

    def __init__(self, server: EmulatorServer, directory: Path) -> None:
        self.server = server
        self.directory = directory

    def cli(self, *args: str) -> CliResult:
        return run_cli(args, env={**platform_env(self.server), "NO_COLOR": "1"})

    def call(self, operation: str, body: dict[str, Any]) -> Any:
        answer = self.server.call(operation, body)
        assert answer.status_code < 300, answer.text
        return answer.json().get("data")

    def writes(self) -> list[str]:
        return [r["operation"] for r in self.server.requests() if r["operation"] in WRITES]

    def environment(self, name: str = "production") -> dict[str, Any]:
        data: dict[str, Any] = self.call(
            "environments.getEnvironment", {**TARGET, "environment": name}
        )
        return {k: v for k, v in data.items() if k != "updatedAt"}

    def policies(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.call("gateway.listPolicies", TARGET)
        return [{k: v for k, v in p.items() if k != "id"} for p in listed]


@pytest.fixture
def newer(newer_emulator: EmulatorServer, tmp_path: Path) -> Newer:
    platform = Newer(newer_emulator, tmp_path)
    manifest = write_manifest(tmp_path, MANIFEST)
    applied = platform.cli("apply", "-f", str(manifest), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    # what the newer platform (its dashboard, another tool) adds
    platform.call(
        "environments.updateSettings",
        {
            **TARGET,
            "gpu": {"kind": "a100"},
            "cacheDir": ".cache",
            "tier": "gold",
            "healthcheck": {"method": "GET", "path": "/healthz", "grpcService": "health"},
            "regions": [
                {"name": "fra", "replicas": {"min": 1, "max": 3, "burst": 2}, "zone": "a"},
                {"name": "iad", "replicas": {"min": 1, "max": 2}},
            ],
        },
    )
    platform.call(
        "gateway.setPolicies",
        {
            **TARGET,
            "policies": [
                {
                    "name": "limit-api",
                    "enabled": True,
                    "match": [{"path": {"path": {"prefix": "/api"}}, "country": {"in": ["DE"]}}],
                    "rateLimit": {"requestsPerMinute": 100},
                },
                {
                    "name": "block-admin",
                    "enabled": True,
                    "match": [{"path": {"path": {"prefix": "/admin"}}}],
                    "firewall": {"action": "ACTION_DENY", "statusCode": 403},
                },
            ],
        },
    )
    platform.call(
        "environments.setEnvironmentVariables",
        {**TARGET, "variables": [{"key": "SEALED", "value": "s3cr3t-value", "kind": "sealed"}]},
    )
    platform.call("environments.updateSettings", {**TARGET, "environment": "staging", "port": 7000})
    return platform


def test_plan_shows_what_it_does_not_know_and_apply_refuses_to_remove_it(newer: Newer) -> None:
    manifest = newer.directory / "platform.yaml"
    staging, live_policies = newer.environment("staging"), newer.policies()

    planned = newer.cli("plan", "-f", str(manifest))
    assert planned.exit_code == 0, planned.output
    out = planned.stdout
    assert "9 unmanaged field(s)" in out and "runtime.gpu" in out and "and 4 more" in out
    assert "app shop/web has environment(s) staging" in out
    assert 'policies[0] "limit-api": match[].country, rateLimit' in out
    assert "variable.shop/web/production/SEALED" not in out.split("Note:")[0]  # never pruned
    assert "s3cr3t-value" not in planned.output

    as_json = json.loads(newer.cli("plan", "-f", str(manifest), "--format", "json").stdout)
    (change,) = [c for c in as_json["changes"] if c["kind"] == "policies"]
    assert change["unknown_removed"][0].startswith('policies[0] "limit-api"')

    before = len(newer.writes())
    refused = newer.cli("apply", "-f", str(manifest), "--auto-approve")
    assert refused.exit_code == 1
    assert "the plan would remove what this reconciler does not know" in refused.stderr
    assert "Traceback" not in refused.output
    assert len(newer.writes()) == before  # refused before any write
    assert newer.policies() == live_policies

    plan_file = newer.directory / "plan.json"
    assert newer.cli("plan", "-f", str(manifest), "--out", str(plan_file)).exit_code == 0
    assert newer.cli("apply", str(plan_file)).exit_code == 1
    assert len(newer.writes()) == before

    allowed = newer.cli("apply", "-f", str(manifest), "--auto-approve", "--allow-unknown-removal")
    assert allowed.exit_code == 0, allowed.output
    assert [p["name"] for p in newer.policies()] == ["block-admin"]
    assert newer.policies()[0]["firewall"] == {"action": "ACTION_DENY"}
    production = newer.environment()
    assert production["runtime"]["gpu"] == {"kind": "a100"}  # updateSettings left it alone
    assert production["runtime"]["healthcheck"]["grpcService"] == "health"
    assert newer.environment("staging") == staging  # never written


def test_export_round_trips_it_and_apply_keeps_it(newer: Newer) -> None:
    staging = newer.environment("staging")
    exported = newer.cli("export", "--project", "shop")
    assert exported.exit_code == 0, exported.output
    assert "environment 'staging'" in exported.stderr
    assert "SEALED is of kind 'sealed'" in exported.stderr
    document = yaml.safe_load(exported.stdout)
    production = document["projects"]["shop"]["apps"]["web"]["environments"]["production"]
    assert production["runtime"]["opaque"]["gpu"] == {"kind": "a100"}
    assert production["opaque"] == {"tier": "gold"}
    limit = production["policies"][0]
    assert limit["opaque"] == {"rateLimit": {"requestsPerMinute": 100}}
    assert limit["match"][0]["opaque"] == {"country": {"in": ["DE"]}}
    assert "staging" not in document["projects"]["shop"]["apps"]["web"]["environments"]

    path = newer.directory / "exported.yaml"
    path.write_text(exported.stdout, encoding="utf-8")
    assert newer.cli("validate", "-f", str(path)).exit_code == 0
    unchanged = newer.cli("plan", "-f", str(path), "--detailed-exitcode")
    assert unchanged.exit_code == 0, unchanged.output
    assert "No changes." in unchanged.stdout

    edited = (
        exported.stdout.replace("port: 8080", "port: 9090")
        .replace("prefix: /admin}", "prefix: /adm}")
        .replace("gpu: {kind: a100}", "gpu: {kind: h100}")
        .replace("min: 1, max: 3", "min: 2, max: 3")
    )
    path.write_text(edited, encoding="utf-8")
    applied = newer.cli("apply", "-f", str(path), "--auto-approve")
    assert applied.exit_code == 0, applied.output
    production_now = newer.environment()
    assert production_now["runtime"]["port"] == 9090
    assert production_now["runtime"]["gpu"] == {"kind": "h100"}
    assert production_now["runtime"]["healthcheck"]["grpcService"] == "health"
    assert production_now["build"]["cacheDir"] == ".cache"
    assert production_now["tier"] == "gold"
    fra = production_now["regions"][0]
    assert fra["zone"] == "a" and fra["replicas"] == {"min": 2, "max": 3, "burst": 2}
    limit_now, admin_now = newer.policies()
    assert limit_now["rateLimit"] == {"requestsPerMinute": 100}
    assert limit_now["match"][0]["country"] == {"in": ["DE"]}
    assert admin_now["firewall"] == {"action": "ACTION_DENY", "statusCode": 403}
    assert admin_now["match"] == [{"path": {"path": {"prefix": "/adm"}}}]
    variables = newer.call("environments.listEnvironmentVariables", TARGET)
    assert "SEALED" in {v["key"] for v in variables}  # prune.variables leaves it alone
    assert newer.environment("staging") == staging
    again = newer.cli("plan", "-f", str(path), "--detailed-exitcode")
    assert again.exit_code == 0, again.output


def test_policy_tests_the_evaluator_cannot_decide_are_skipped_with_the_reason(
    newer: Newer,
) -> None:
    manifest = write_manifest(
        newer.directory,
        MANIFEST.replace(
            "            policies:\n",
            "            policies:\n"
            "              - name: limit-api\n"
            "                enabled: true\n"
            "                match: [{path: {path: {prefix: /api}}}]\n"
            "                opaque: {rateLimit: {requestsPerMinute: 100}}\n",
        )
        + "            policyTests:\n"
        "              - {name: api, request: {method: GET, path: /api/x, clientIp: 192.0.2.1}, "
        "expect: allow}\n"
        "              - {name: admin, request: {method: GET, path: /admin, clientIp: 192.0.2.1}, "
        "expect: allow}\n",
        name="tests.yaml",
    )
    result = run_cli(["test", "-f", str(manifest)], env={"NO_COLOR": "1"})
    assert result.exit_code == 1  # `admin` fails: decided before any unknown policy
    assert "SKIP" in result.stdout and "not decidable offline" in result.stdout
    assert "'limit-api'" in result.stdout and "rateLimit" in result.stdout
