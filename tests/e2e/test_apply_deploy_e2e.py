"""`apply --deploy` end to end: roll out what changed and wait for a final status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.emulator.app import EmulatorConfig
from tests.e2e.processes import CliProcess
from tests.e2e.test_apply_e2e import apply, plan, run_cli, write_manifest
from tests.fixtures.cli import platform_env, shop_manifest
from tests.fixtures.emulator import API_KEY

FAST = ("--auto-approve", "--deploy", "--poll-interval", "0.02s", "--wait-timeout", "30s")


def image_app(image: str, *, level: str = "info", git: bool = False) -> str:
    source = "git: {repository: acme/web}" if git else f"oci: {{image: {image}}}"
    return shop_manifest(
        f"""\
        web:
          name: Web
          {source}
          environments:
            production:
              runtime: {{port: 8080, vCpus: 0.5, memoryMib: 512}}
              variables: {{LOG_LEVEL: {level}}}
        """
    )


def deployments(emulator: Any, environment: str = "production") -> list[dict[str, Any]]:
    response = emulator.call(
        "deployments.listDeployments",
        {"project": "shop", "app": "web", "environment": environment},
    )
    return response.json()["data"]


def test_a_successful_rollout(emulator: Any, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))

    result = apply(emulator, "-f", manifest, *FAST)

    assert result.exit_code == 0, result.output
    assert "Apply complete!" in result.output
    [deployment] = deployments(emulator)
    assert deployment["status"] == "ready"
    assert deployment["docker"]["image"] == "ghcr.io/acme/web:1.0"
    assert (
        f"shop/web/production: deployment {deployment['id']} created "
        "(image ghcr.io/acme/web:1.0; image, settings, variables changed)"
    ) in result.output
    line = next(r for r in result.output.splitlines() if r.startswith("  shop/web/production ("))
    assert line.startswith(f"  shop/web/production ({deployment['id']}): ready; domains: ")
    assert all(domain in line for domain in deployment["domains"])
    assert "Deploy complete! 1 of 1 deployment(s) went live." in result.output

    unchanged = apply(emulator, "-f", manifest, *FAST)
    assert unchanged.exit_code == 0
    assert len(deployments(emulator)) == 1  # nothing changed, nothing deployed


def test_a_failed_build_is_reported_with_its_code_step_and_message(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:fail-1"))

    result = apply(emulator, "-f", manifest, *FAST)

    assert result.exit_code == 1
    assert "Apply complete!" in result.output  # the configuration itself applied
    [deployment] = deployments(emulator)
    error = deployment["error"]
    assert error["code"] == "build_failed"
    assert (
        f"shop/web/production ({deployment['id']}): failed: build_failed at step "
        f"{error['step']}: {error['message']}"
    ) in result.output
    assert "Deploy failed! 1 of 1 deployment(s) did not go live." in result.output


def test_a_repository_app_reruns_the_latest_deployment(emulator: Any, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, image_app("", git=True))
    first = apply(emulator, "-f", manifest, *FAST)
    assert first.exit_code == 0, first.output
    assert "(default branch; settings, variables changed)" in first.output
    [built] = deployments(emulator)

    write_manifest(tmp_path, image_app("", git=True, level="debug"))
    second = apply(emulator, "-f", manifest, *FAST)

    assert second.exit_code == 0, second.output
    assert f"(rerun of {built['id']}; variables changed)" in second.output
    newest, previous = deployments(emulator)
    assert previous["id"] == built["id"]
    assert newest["git"]["commitSha"] == built["git"]["commitSha"]
    assert newest["status"] == "ready"


def test_an_image_change_names_and_deploys_preview_only_once_it_ran_a_deployment(
    emulator: Any, tmp_path: Path
) -> None:
    """The plan's note and `apply --deploy` decide from one rule: an app-level change (a new
    image) deploys production, and preview only if preview already has a deployment."""
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    assert apply(emulator, "-f", manifest, *FAST).exit_code == 0  # production only

    write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.1"))
    planned = plan(emulator, "-f", manifest)
    assert planned.exit_code == 0, planned.output
    assert "this plan needs one in: shop/web/production (`reconciler apply --deploy`" in (
        planned.output
    )
    result = apply(emulator, "-f", manifest, *FAST)
    assert result.exit_code == 0, result.output
    assert "Deploying 1 environment(s)" in result.output
    assert "shop/web/preview" not in result.output
    assert deployments(emulator, "preview") == []

    # once preview runs a deployment, the next image change names it and deploys it
    created = emulator.call(
        "deployments.createDeployment",
        {
            "project": "shop",
            "app": "web",
            "environment": "preview",
            "image": {"dockerImage": "ghcr.io/acme/web:1.1"},
        },
    )
    assert created.status_code == 201, created.text
    write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.2"))
    planned = plan(emulator, "-f", manifest)
    assert "this plan needs one in: shop/web/production, shop/web/preview (" in planned.output
    result = apply(emulator, "-f", manifest, *FAST)
    assert result.exit_code == 0, result.output
    assert "Deploying 2 environment(s)" in result.output
    [newest, _] = deployments(emulator, "preview")
    assert newest["docker"]["image"] == "ghcr.io/acme/web:1.2"


def test_a_rolled_back_app_is_warned_about_and_the_deploy_fails(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    assert apply(emulator, "-f", manifest, *FAST).exit_code == 0
    write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0", level="debug"))
    assert apply(emulator, "-f", manifest, *FAST).exit_code == 0
    _, first = deployments(emulator)
    rollback = emulator.call("deployments.rollbackDeployment", {"deploymentId": first["id"]})
    assert rollback.status_code == 202, rollback.text

    write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0", level="warn"))
    result = apply(emulator, "-f", manifest, *FAST)

    # What was asked for (the change serving production) did not happen: CI must see it.
    assert result.exit_code == 1, result.output
    assert "Apply complete!" in result.output  # the configuration itself applied
    assert (
        "Warning: app.shop/web is rolled back: its new production deployment will not take over "
        "production until a deployment is promoted (deployments.promoteDeployment)"
    ) in result.output
    app = emulator.call("apps.getApp", {"project": "shop", "app": "web"}).json()["data"]
    assert app["isRolledBack"] is True
    assert app["currentDeploymentId"] == first["id"]
    # The new deployment is ready but does not serve: the summary must not call it live.
    assert "ready, not serving production: the app is rolled back" in result.output
    assert (
        "Deploy incomplete! 0 of 1 deployment(s) went live, 1 ready but not serving production "
        "(rolled back until a deployment is promoted)."
    ) in result.output

    # promoted, it serves; a later change then goes live and apply exits 0 again
    [newest, *_] = deployments(emulator)
    promoted = emulator.call("deployments.promoteDeployment", {"deploymentId": newest["id"]})
    assert promoted.status_code == 202, promoted.text
    write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0", level="error"))
    again = apply(emulator, "-f", manifest, *FAST)
    assert again.exit_code == 0, again.output
    assert "Deploy complete! 1 of 1 deployment(s) went live." in again.output


def test_an_environment_whose_changes_all_failed_is_named_as_not_deployed(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    assert apply(emulator, "-f", manifest, *FAST).exit_code == 0
    before = deployments(emulator)
    write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0", level="debug"))
    emulator.set_faults(
        [{"operation": "environments.setEnvironmentVariables", "status": 400, "times": 1}]
    )

    result = apply(emulator, "-f", manifest, *FAST)

    assert result.exit_code == 1, result.output
    assert "Nothing to deploy" not in result.output
    assert "Not deployed" in result.output
    assert "shop/web/production: its changes did not apply" in result.output
    assert deployments(emulator) == before


def test_waiting_is_bounded_by_wait_timeout(start_emulator: Any, tmp_path: Path) -> None:
    # Deployment steps of a minute: the rollout cannot finish however slow the machine is.
    slow = start_emulator(EmulatorConfig(dev_key=API_KEY, step_ms=60_000))
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    result = apply(
        slow,
        "-f",
        manifest,
        "--auto-approve",
        "--deploy",
        "--poll-interval",
        "50ms",
        "--wait-timeout",
        "300ms",
    )
    assert result.exit_code == 1
    assert "timed out: still " in result.output
    assert "when --wait-timeout ran out" in result.output


def test_a_rerun_after_a_failed_rollout_warns_that_the_change_may_not_be_live(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    assert apply(emulator, "-f", manifest, *FAST).exit_code == 0
    write_manifest(tmp_path, image_app("ghcr.io/acme/web:fail-1"))
    failed = apply(emulator, "-f", manifest, *FAST)
    assert failed.exit_code == 1, failed.output
    newest = deployments(emulator)[0]
    assert newest["status"] == "failed"

    rerun = apply(emulator, "-f", manifest, *FAST)

    # Nothing changed, so nothing is deployed; but CI must not pass in silence.
    assert rerun.exit_code == 0, rerun.output
    assert "Apply complete! Resources: 0 added, 0 changed, 0 destroyed." in rerun.output
    assert (
        f"Warning: nothing changed, so nothing was deployed, but the newest deployment of "
        f"shop/web/production ({newest['id']}) is failed (build_failed)"
    ) in rerun.output
    assert deployments(emulator)[0]["id"] == newest["id"]


# --- deploying without a change, and waiting for rollouts in flight ---------------------


def two_apps() -> str:
    return shop_manifest(
        """\
        web:
          name: Web
          oci: {image: ghcr.io/acme/web:1.0}
          environments:
            production: {runtime: {port: 8080}}
            preview: {runtime: {port: 8080}}
        api:
          name: Api
          oci: {image: ghcr.io/acme/api:1.0}
          environments:
            production: {runtime: {port: 8080}}
        """
    )


def all_deployments(emulator: Any) -> dict[str, list[dict[str, Any]]]:
    """Deployments per `app/environment`, newest first."""
    found = {}
    for app, environment in (("web", "production"), ("web", "preview"), ("api", "production")):
        body = {"project": "shop", "app": app, "environment": environment}
        found[f"{app}/{environment}"] = emulator.call("deployments.listDeployments", body).json()[
            "data"
        ]
    return found


def test_deploy_with_nothing_changed_says_so_and_how_to_deploy_anyway(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    assert apply(emulator, "-f", manifest, *FAST).exit_code == 0

    unchanged = apply(emulator, "-f", manifest, *FAST)

    assert unchanged.exit_code == 0, unchanged.output
    assert (
        "Nothing to deploy: no environment's configuration changed "
        "(apply --redeploy deploys them anyway)."
    ) in unchanged.output
    assert len(deployments(emulator)) == 1


def test_redeploy_deploys_every_environment_of_the_manifest_without_a_change(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, two_apps())
    assert apply(emulator, "-f", manifest, "--auto-approve").exit_code == 0
    assert not any(all_deployments(emulator).values())  # applied, never deployed

    result = apply(emulator, "-f", manifest, *FAST, "--redeploy")

    assert result.exit_code == 0, result.output
    assert "Apply complete! Resources: 0 added, 0 changed, 0 destroyed." in result.output
    found = all_deployments(emulator)
    assert {where: len(listed) for where, listed in found.items()} == {
        "web/production": 1,
        "web/preview": 1,
        "api/production": 1,
    }
    web = found["web/production"][0]
    assert (
        f"shop/web/production: deployment {web['id']} created "
        "(image ghcr.io/acme/web:1.0; --redeploy)"
    ) in result.output
    assert "Deploy complete! 3 of 3 deployment(s) went live." in result.output


def test_redeploy_with_a_target_deploys_only_the_environments_it_reaches(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, two_apps())
    assert apply(emulator, "-f", manifest, "--auto-approve").exit_code == 0

    result = apply(
        emulator, "-f", manifest, *FAST, "--redeploy", "--target", "settings.shop/web/preview"
    )

    assert result.exit_code == 0, result.output
    found = all_deployments(emulator)
    assert {where: len(listed) for where, listed in found.items()} == {
        "web/production": 0,
        "web/preview": 1,
        "api/production": 0,
    }


def test_status_wait_waits_for_the_deployments_in_flight(
    start_emulator: Any, tmp_path: Path
) -> None:
    # Deployment steps of a minute: they finish when the test moves the clock, not before.
    slow = start_emulator(EmulatorConfig(dev_key=API_KEY, step_ms=60_000))
    manifest = write_manifest(tmp_path, two_apps())
    assert apply(slow, "-f", manifest, "--auto-approve").exit_code == 0
    nothing = run_cli(slow, "status", "-f", manifest, "--wait")
    assert nothing.exit_code == 0, nothing.output
    assert "No deployment in flight: nothing to wait for." in nothing.stderr
    target = {"project": "shop", "app": "web", "environment": "production"}
    good = slow.call(
        "deployments.createDeployment", {**target, "image": {"dockerImage": "nginx:1"}}
    )
    bad = slow.call(
        "deployments.createDeployment",
        {**target, "environment": "preview", "image": {"dockerImage": "nginx:fail-1"}},
    )
    good_id = good.json()["data"]["deploymentId"]
    bad_id = bad.json()["data"]["deploymentId"]

    with CliProcess(
        ["status", "-f", manifest, "--wait", "--poll-interval", "50ms", "--format", "json"],
        env=platform_env(slow),
    ) as waiting:
        waiting.wait_for_stderr("Waiting for 2 deployment(s) in flight to finish.")
        slow.advance_clock(10 * 60_000)  # every step of both has passed
        waited = waiting.finish()

    assert waited.exit_code == 1, waited.output  # one of them did not go live
    assert f"shop/web/production ({good_id}): ready" in waited.stderr
    assert f"shop/web/preview ({bad_id}): failed: build_failed" in waited.stderr
    report = json.loads(waited.stdout)  # stdout stays the report, read after the wait
    statuses = {
        f"{e['app']}/{e['environment']}": (e["deployment"] or {}).get("status")
        for e in report["environments"]
    }
    assert statuses == {"web/production": "ready", "web/preview": "failed", "api/production": None}


def test_a_rerun_with_a_rollout_in_flight_names_the_command_that_waits(
    start_emulator: Any, tmp_path: Path
) -> None:
    slow = start_emulator(EmulatorConfig(dev_key=API_KEY, step_ms=60_000))
    manifest = write_manifest(tmp_path, image_app("ghcr.io/acme/web:1.0"))
    timed_out = apply(slow, "-f", manifest, *FAST[:-1], "200ms")
    assert timed_out.exit_code == 1, timed_out.output
    [deployment] = deployments(slow)

    rerun = apply(slow, "-f", manifest, *FAST)

    assert rerun.exit_code == 0, rerun.output
    assert (
        "Note: 1 deployment(s) are still rolling out: "
        f"shop/web/production ({deployment['id']}, {deployment['status']}). "
        f"To wait for them: reconciler status -f {manifest} --wait"
    ) in rerun.stderr
