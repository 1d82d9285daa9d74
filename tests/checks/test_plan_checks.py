"""`reconciler plan` with the guardrails, against the emulator: capacity ceilings checked against
hand-computed figures, limits, when each change goes live, and the plan-time rules."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from reconciler.checks.capacity import Figures
from tests.checks.test_sarif import _validator
from tests.fixtures.cli import Seed, write_manifest

WEB = {"oci": {"image": "ghcr.io/acme/web:1.0"}}
LIVE_RUNTIME = {"vCpus": 0.5, "memoryMib": 512, "storageMib": 1024}
LIVE_REGIONS = [
    {"name": "fra", "replicas": {"min": 1, "max": 3}},
    {"name": "iad", "replicas": {"min": 1, "max": 2}},
]


def seed_web(seed: Seed, **settings: Any) -> None:
    seed.project("shop")
    seed.app("shop", "web", oci=WEB["oci"])
    seed.settings("shop", "web", "production", **LIVE_RUNTIME, regions=LIVE_REGIONS, **settings)


def manifest(production: str, *, header: str = "", more_apps: str = "") -> str:
    return (
        f"version: 1\n{header}projects:\n  shop:\n    apps:\n"
        "      web:\n        oci: {image: ghcr.io/acme/web:1.0}\n"
        f"        environments:\n          production:\n            {production}\n{more_apps}"
    )


def plan_json(cli: Any, path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("plan", "-f", str(path), "--format", "json", *args)
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def findings(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan-time findings: the manifests here leave production without a health check, which
    the static rule production-healthcheck warns about in every plan."""
    return [f for f in plan["findings"] if f["rule"] != "production-healthcheck"]


def figures(data: dict[str, Any]) -> Figures:
    return Figures(data["vCpus"], data["memoryMib"], data["storageMib"], data["complete"])


def test_capacity_before_and_after_by_hand(cli: Any, seed: Seed, tmp_path: Path) -> None:
    """Live: 0.5 vCPU, 512 MiB, 1024 MiB per instance x (3 + 2) = 2.5 vCPUs, 2560, 5120.
    The manifest sets vCpus 1 and one region of max 4 (memory and storage unmanaged, so
    live): 4 vCPUs, 2048, 4096. A new app: 0.25 x 2 = 0.5 vCPU, 256 x 2 = 512, 0."""
    seed_web(seed)
    new_app = (
        "      api:\n        oci: {image: ghcr.io/acme/api:2}\n        environments:\n"
        "          production:\n            runtime: {vCpus: 0.25, memoryMib: 256, storageMib: 0}\n"
        "            regions: [{name: fra, replicas: {min: 2, max: 2}}]\n"
    )
    path = write_manifest(
        tmp_path,
        manifest(
            "{runtime: {vCpus: 1}, regions: [{name: fra, replicas: {min: 2, max: 4}}]}",
            more_apps=new_app,
        ),
    )
    _, plan = plan_json(cli, path)
    capacity = plan["capacity"]
    by_scope = {c["scope"]: c for c in capacity["environments"] + capacity["projects"]}
    web, api = by_scope["shop/web/production"], by_scope["shop/api/production"]
    assert figures(web["before"]) == Figures(2.5, 2560, 5120)
    assert figures(web["after"]) == Figures(4, 2048, 4096)
    assert figures(api["before"]) == Figures(0, 0, 0)
    assert figures(api["after"]) == Figures(0.5, 512, 0)
    assert figures(by_scope["shop"]["after"]) == Figures(4.5, 2560, 4096)
    assert figures(capacity["workspace"]["before"]) == Figures(2.5, 2560, 5120)
    text = cli("plan", "-f", str(path)).stdout
    assert (
        "  shop/web/production  2.5 -> 4 vCPUs, 2560 -> 2048 MiB memory, 5120 -> 4096 MiB storage"
        in text
    )
    assert (
        "  workspace            2.5 -> 4.5 vCPUs, 2560 MiB memory, 5120 -> 4096 MiB storage" in text
    )


def test_an_unknown_value_makes_totals_lower_bounds(cli: Any, seed: Seed, tmp_path: Path) -> None:
    seed_web(seed)
    new_app = (
        "      api:\n        oci: {image: ghcr.io/acme/api:2}\n        environments:\n"
        "          production:\n            regions: [{name: fra, replicas: {min: 1, max: 1}}]\n"
    )
    path = write_manifest(tmp_path, manifest("{runtime: {vCpus: 1}}", more_apps=new_app))
    _, plan = plan_json(cli, path)
    api = next(c for c in plan["capacity"]["environments"] if c["scope"] == "shop/api/production")
    assert api["after"]["vCpus"] is None  # the platform's default is not shown
    workspace = plan["capacity"]["workspace"]["after"]
    assert workspace["complete"] is False and workspace["vCpus"] == 5  # 1 x (3 + 2), at least
    assert ">=5 vCPUs" in cli("plan", "-f", str(path)).stdout


def test_limits_turn_an_overrun_into_an_error_finding(cli: Any, seed: Seed, tmp_path: Path) -> None:
    seed_web(seed)
    production = "{runtime: {vCpus: 1}}"  # 1 x 5 instances
    over = write_manifest(
        tmp_path, manifest(production, header="limits: {vCpus: 4, memoryMib: 4096}\n")
    )
    code, plan = plan_json(cli, over, "--detailed-exitcode")
    assert code == 1  # not 2: the finding fails the plan
    [finding] = findings(plan)
    assert finding["rule"] == "capacity-limits" and finding["severity"] == "error"
    assert (finding["file"], finding["line"], finding["path"]) == (str(over), 2, "limits.vCpus")
    assert "may run 5 vCPUs, more than limits.vCpus (4)" in finding["message"]
    assert "cpu_quota_exceeded" in finding["message"]
    text = cli("plan", "-f", str(over))
    assert text.exit_code == 1
    assert f"Error: {over}:2:{finding['column']}: limits.vCpus: after this plan" in text.stdout
    under = write_manifest(
        tmp_path, manifest(production, header="limits: {vCpus: 5}\n"), "under.yaml"
    )
    code, plan = plan_json(cli, under, "--detailed-exitcode")
    assert (code, findings(plan)) == (2, [])


def test_a_plan_says_what_needs_a_deployment(cli: Any, seed: Seed, tmp_path: Path) -> None:
    seed_web(seed, autoDeploy=True)
    path = write_manifest(
        # runtime as live: the settings are read (autoDeploy with them) and unchanged
        tmp_path,
        manifest(
            "{runtime: {vCpus: 0.5}, variables: {LOG_LEVEL: debug}, domains: [web.example.com]}"
        ),
    )
    _, plan = plan_json(cli, path)
    live = {c["address"]: c["goes_live"] for c in plan["changes"]}
    assert live == {
        "variable.shop/web/production/LOG_LEVEL": "next_deployment",
        "domain.shop/web/production/web.example.com": "at_apply",
    }
    text = cli("plan", "-f", str(path)).stdout
    notes = text.split("\nPlan: ")[0].strip().splitlines()
    assert notes[-2] == (
        "Note: settings, variables, policies, project slugs and app sources reach traffic only "
        "from the next deployment; to take effect, this plan needs one in: shop/web/production "
        "(`reconciler apply --deploy` applies and deploys them)"
    )
    assert notes[-1].startswith("Note: shop/web/production deploys on every push (autoDeploy)")
    # said once for the plan, in the note above, not under each change
    assert "# reaches traffic only from the next deployment of this environment" not in text


def test_changes_that_go_live_at_apply_need_no_deployment(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_web(seed)
    path = write_manifest(tmp_path, manifest("{domains: [web.example.com]}"))
    text = cli("plan", "-f", str(path)).stdout
    assert "Plan: 1 to add" in text and "next deployment" not in text


def test_an_app_rolled_back_in_production_is_warned_about(
    cli: Any, emulator: Any, tmp_path: Path
) -> None:
    deploy = ("--auto-approve", "--deploy", "--poll-interval", "0.02s", "--wait-timeout", "30s")
    path = write_manifest(tmp_path, manifest("{variables: {LOG_LEVEL: info}}"))
    assert cli("apply", "-f", str(path), *deploy).exit_code == 0
    write_manifest(tmp_path, manifest("{variables: {LOG_LEVEL: debug}}"))
    assert cli("apply", "-f", str(path), *deploy).exit_code == 0
    listed = emulator.call(
        "deployments.listDeployments",
        {"project": "shop", "app": "web", "environment": "production"},
    ).json()["data"]
    assert (
        emulator.call(
            "deployments.rollbackDeployment", {"deploymentId": listed[-1]["id"]}
        ).status_code
        == 202
    )
    write_manifest(tmp_path, manifest("{variables: {LOG_LEVEL: warn}}"))
    text = cli("plan", "-f", str(path)).stdout
    assert (
        "Warning: app shop/web is rolled back (isRolledBack): a new production deployment will "
        "not take over production until a deployment is promoted (app.shop/web)"
    ) in text


def test_a_write_only_variable_turned_recoverable_is_an_error(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_web(seed)
    seed.variables(
        "shop", "web", "production", [{"key": "TOKEN", "value": "s3cret", "kind": "writeonly"}]
    )
    path = write_manifest(tmp_path, manifest("{variables: {TOKEN: visible}}"))
    code, plan = plan_json(cli, path)
    assert code == 1
    [finding] = findings(plan)
    assert finding["rule"] == "writeonly-stays-writeonly" and finding["line"] == 9
    assert finding["path"] == "projects.shop.apps.web.environments.production.variables.TOKEN"
    assert "s3cret" not in json.dumps(plan)
    sarif = cli("plan", "-f", str(path), "--format", "sarif")
    assert sarif.exit_code == 1
    log = json.loads(sarif.stdout)
    assert not list(_validator().iter_errors(log))
    rules = [r["ruleId"] for r in log["runs"][0]["results"]]
    assert rules == ["production-healthcheck", "writeonly-stays-writeonly"]


def test_a_waived_plan_time_finding_is_shown_and_fails_nothing(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_web(seed)
    seed.variables(
        "shop", "web", "production", [{"key": "TOKEN", "value": "s3cret", "kind": "writeonly"}]
    )
    waiver = 'checks: {writeonly-stays-writeonly: {"off": true, reason: "a public id, rotated"}}'
    path = write_manifest(tmp_path, manifest(f"{{variables: {{TOKEN: visible}}, {waiver}}}"))
    result = cli("plan", "-f", str(path), "--detailed-exitcode")
    assert result.exit_code == 2
    assert "[writeonly-stays-writeonly waived: a public id, rotated]" in result.stdout
    assert result.stdout.count("Waived: ") == 1


def test_a_recoverable_variable_staying_recoverable_is_no_finding(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_web(seed)
    seed.variables(
        "shop", "web", "production", [{"key": "MODE", "value": "a", "kind": "recoverable"}]
    )
    path = write_manifest(tmp_path, manifest("{variables: {MODE: b}}"))
    code, plan = plan_json(cli, path, "--detailed-exitcode")
    assert (code, findings(plan)) == (2, [])


def test_a_project_rename_needs_a_deployment_of_each_app(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    project_id = seed.project("shop")
    seed.app("shop", "web", oci=WEB["oci"])
    path = write_manifest(
        tmp_path,
        f"version: 1\nprojects:\n  store:\n    id: {project_id}\n    apps:\n"
        "      web: {oci: {image: ghcr.io/acme/web:1.0}}\n",
    )
    _, plan = plan_json(cli, path)
    [change] = plan["changes"]
    assert (change["address"], change["goes_live"]) == ("project.store", "next_deployment")
    # as `apply --deploy` decides: a preview that never had a deployment is left alone
    assert "needs one in: store/web/production (" in plan["notes"][-1]["message"]

    image = {"dockerImage": "ghcr.io/acme/web:1.0"}
    seed.call(
        "deployments.createDeployment",
        {"project": "shop", "app": "web", "environment": "preview", "image": image},
    )
    _, plan = plan_json(cli, path)
    message = plan["notes"][-1]["message"]
    assert "needs one in: store/web/production, store/web/preview (" in message
    assert "environment.*.read_deployment" in plan["permissions"]


def test_the_markdown_comment_shows_findings_and_ceilings(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_web(seed)
    path = write_manifest(
        tmp_path, manifest("{runtime: {vCpus: 1}}", header="limits: {vCpus: 4}\n")
    )
    result = cli("plan", "-f", str(path), "--format", "markdown")
    assert result.exit_code == 1
    caution = result.stdout.split("> [!CAUTION]\n")[1].split("\n\n")[0]
    assert "limits.vCpus" in caution and "[capacity-limits]" in html.unescape(caution)
    # the ceilings the plan moves are values it changes: shown, not folded
    ceilings = result.stdout.split("**Capacity ceilings")[1].split("\n```\n")[0]
    assert "shop/web/production  2.5 -> 5 vCPUs" in ceilings
