"""Apply when a change of several calls fails half-way, over the emulator.

A replace is `deleteApp` then `createApp` (then `updateApp` for delete protection); a
protected app is created by `createApp` then `updateApp`. When a later call fails, the
earlier ones took effect: the report says so, counts them, and a rerun converges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.test_apply_e2e import apply, assert_converged, is_write, write_manifest

INVALID = 'invalid request for app "web" in project "shop" (400): injected fault'


def shop(source: str, *, protected: bool = False) -> str:
    """One app with production settings and a variable; `source` is its `git:`/`oci:` line."""
    return (
        "version: 1\nprojects:\n  shop:\n    name: Shop\n    apps:\n      web:\n"
        "        name: Web\n"
        + ("        deleteProtection: true\n" if protected else "")
        + f"        {source}\n"
        + "        environments:\n          production:\n"
        + "            runtime: {port: 8080}\n"
        + "            variables: {LOG_LEVEL: info}\n"
    )


GIT = "git: {repository: acme/web}"
IMAGE = "oci: {image: ghcr.io/acme/web:1}"


def written(emulator: Any, since: int) -> list[tuple[str, int]]:
    """(operation, status) of the write calls after the first `since` requests."""
    return [
        (r["operation"], r["status"])
        for r in emulator.requests()[since:]
        if is_write(r["operation"])
    ]


def apps(emulator: Any) -> list[dict[str, Any]]:
    return list(emulator.state()["apps"].values())


def fail_once(emulator: Any, operation: str) -> None:
    emulator.set_faults([{"operation": operation, "times": 1, "status": 400}])


def test_a_replace_whose_create_failed_reports_the_app_as_destroyed(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, shop(GIT))
    assert apply(emulator, "-f", manifest, "--auto-approve").exit_code == 0
    write_manifest(tmp_path, shop(IMAGE))
    fail_once(emulator, "apps.createApp")
    before = len(emulator.requests())

    first = apply(emulator, "-f", manifest, "--auto-approve", "--allow-replace")

    assert first.exit_code == 1
    partly = f"partly applied: deleted, then apps.createApp failed: {INVALID}"
    assert f"\napp.shop/web: {partly}\n" in first.output
    # the old app is gone: the summary lists that under "Applied" as well as the failure
    assert "Applied (1):\n  app.shop/web (partly applied: deleted)\n" in first.output
    assert f"Failed (1):\n  app.shop/web: {partly}\n" in first.output
    assert (
        "Skipped because a change they need did not apply (2):\n"
        "  settings.shop/web/production: needs app.shop/web\n"
        "  variable.shop/web/production/LOG_LEVEL: needs app.shop/web\n"
    ) in first.output
    assert (
        "\nApply incomplete! Resources: 0 added, 0 changed, 1 destroyed; "
        "1 failed, 2 skipped, 0 blocked.\n"
    ) in first.output
    assert written(emulator, before) == [("apps.deleteApp", 202), ("apps.createApp", 400)]
    assert apps(emulator) == []  # the old app is gone and the new one does not exist

    before = len(emulator.requests())
    second = apply(emulator, "-f", manifest, "--auto-approve", "--allow-replace")

    assert second.exit_code == 0, second.output
    assert "app.shop/web: created (apps.createApp 200)" in second.output
    assert "\nApply complete! Resources: 3 added, 0 changed, 0 destroyed.\n" in second.output
    assert written(emulator, before) == [
        ("apps.createApp", 200),
        ("environments.updateSettings", 200),
        ("environments.setEnvironmentVariables", 200),
    ]
    [app] = apps(emulator)
    assert app["sourceType"] == "oci"
    assert_converged(emulator, [manifest])


def test_a_protected_app_whose_protection_update_failed_is_added_with_its_children(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, shop(IMAGE, protected=True))
    fail_once(emulator, "apps.updateApp")

    first = apply(emulator, "-f", manifest, "--auto-approve")

    assert first.exit_code == 1
    partly = (
        "partly applied: created, then apps.updateApp failed to turn delete protection on: "
        + INVALID
    )
    assert f"\napp.shop/web: {partly}\n" in first.output
    assert "Applied (4):\n" in first.output
    for line in (
        "  project.shop (created)\n",
        "  app.shop/web (partly applied: created)\n",
        "  settings.shop/web/production (created)\n",
        "  variable.shop/web/production/LOG_LEVEL (created)\n",
    ):
        assert line in first.output, line
    assert f"Failed (1):\n  app.shop/web: {partly}\n" in first.output
    assert "Skipped because" not in first.output
    assert (
        "\nApply incomplete! Resources: 4 added, 0 changed, 0 destroyed; "
        "1 failed, 0 skipped, 0 blocked.\n"
    ) in first.output
    assert written(emulator, 0) == [
        ("projects.createProject", 200),
        ("apps.createApp", 200),
        ("apps.updateApp", 400),
        ("environments.updateSettings", 200),
        ("environments.setEnvironmentVariables", 200),
    ]
    [app] = apps(emulator)
    assert app["deleteProtection"] is False

    before = len(emulator.requests())
    second = apply(emulator, "-f", manifest, "--auto-approve")

    assert second.exit_code == 0, second.output
    assert "app.shop/web: updated (apps.updateApp 200)" in second.output
    assert "\nApply complete! Resources: 0 added, 1 changed, 0 destroyed.\n" in second.output
    assert written(emulator, before) == [("apps.updateApp", 200)]
    [app] = apps(emulator)
    assert app["deleteProtection"] is True
    assert_converged(emulator, [manifest])


def test_a_replace_whose_protection_update_failed_still_applies_its_children(
    emulator: Any, tmp_path: Path
) -> None:
    manifest = write_manifest(tmp_path, shop(GIT))
    assert apply(emulator, "-f", manifest, "--auto-approve").exit_code == 0
    write_manifest(tmp_path, shop(IMAGE, protected=True))
    fail_once(emulator, "apps.updateApp")
    before = len(emulator.requests())

    first = apply(emulator, "-f", manifest, "--auto-approve", "--allow-replace")

    assert first.exit_code == 1
    partly = (
        "partly applied: deleted, created, then apps.updateApp failed to turn delete "
        f"protection on: {INVALID}"
    )
    assert f"\napp.shop/web: {partly}\n" in first.output
    assert f"Failed (1):\n  app.shop/web: {partly}\n" in first.output
    assert "  app.shop/web (partly applied: deleted, created)\n" in first.output
    assert (
        "\nApply incomplete! Resources: 3 added, 0 changed, 1 destroyed; "
        "1 failed, 0 skipped, 0 blocked.\n"
    ) in first.output
    assert written(emulator, before) == [
        ("apps.deleteApp", 202),
        ("apps.createApp", 200),
        ("apps.updateApp", 400),
        ("environments.updateSettings", 200),
        ("environments.setEnvironmentVariables", 200),
    ]

    before = len(emulator.requests())
    second = apply(emulator, "-f", manifest, "--auto-approve", "--allow-replace")

    assert second.exit_code == 0, second.output
    assert "\nApply complete! Resources: 0 added, 1 changed, 0 destroyed.\n" in second.output
    assert written(emulator, before) == [("apps.updateApp", 200)]
    [app] = apps(emulator)
    assert (app["sourceType"], app["deleteProtection"]) == ("oci", True)
    assert_converged(emulator, [manifest])
