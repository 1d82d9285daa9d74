"""API errors name objects the way the manifest does (`app "web" in project "shop"`), not by ID.

Plans and applies send IDs once live state gave them (they survive a rename in the same
apply), so an error message built from the request alone would say `app "app_35ft…" in
project "proj_d3za…"`. The client remembers the slug of every project, app and environment
it has read or created, and the messages use it. Each case runs the real CLI against the
HTTP emulator and checks the line the user sees.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler.emulator.app import EmulatorConfig
from reconciler.emulator.auth import ApiKey
from tests.fixtures.cli import CliResult, Seed, platform_env, run_cli, write_manifest
from tests.fixtures.emulator import STEP_MS, EmulatorServer

ADMIN_KEY = "labels-admin-key"
# Reads projects and apps, but no environment: the plan's listEnvironments is refused.
NO_ENVIRONMENT_KEY = "labels-no-environment-key"

_ID = re.compile(r"\b(?:proj|app)_[0-9a-z]+\b")


def _run(server: EmulatorServer, *args: str, key: str | None = None) -> CliResult:
    return run_cli(args, env={**platform_env(server, key), "NO_COLOR": "1"})


def _error_lines(result: CliResult, status: int) -> list[str]:
    """The lines reporting an API error (not the plan's notes saying one would come)."""
    return [
        line
        for line in result.output.splitlines()
        if f"({status})" in line and not line.lstrip().startswith(("#", "Warning:"))
    ]


@pytest.fixture
def server(start_emulator: Callable[[EmulatorConfig], EmulatorServer]) -> EmulatorServer:
    keys = [ApiKey(NO_ENVIRONMENT_KEY, ["project.*.read_project", "app.*.read_app"])]
    return start_emulator(EmulatorConfig(keys=keys, dev_key=ADMIN_KEY, step_ms=STEP_MS))


def _seed_shop_web(server: EmulatorServer) -> tuple[str, str]:
    seed = Seed(server)
    project_id = seed.project("shop", "Shop")
    app_id = seed.app("shop", "web", name="Web", oci={"image": "ghcr.io/acme/web:1.0"})
    return project_id, app_id


def _shop_web_runtime(tmp_path: Path, runtime: str) -> Path:
    """A manifest managing only shop/web/production's runtime, set to `runtime`."""
    return write_manifest(
        tmp_path,
        f"""\
        version: 1
        projects:
          shop:
            apps:
              web:
                environments:
                  production:
                    runtime: {runtime}
        """,
    )


def test_a_403_names_the_app_and_project_by_slug(server: EmulatorServer, tmp_path: Path) -> None:
    _, app_id = _seed_shop_web(server)
    manifest = _shop_web_runtime(tmp_path, "{port: 8080}")
    result = _run(server, "plan", "-f", str(manifest), key=NO_ENVIRONMENT_KEY)
    assert result.exit_code == 1, result.output
    [line] = _error_lines(result, 403)
    assert line.startswith(
        'Error: environments.listEnvironments: permission denied for app "web" in project "shop" '
        "(403)"
    ), line
    # the permission string still names what to grant, and the grant has no ID to name
    assert '"environment.*.read_environment"' in line
    assert not _ID.search(line), line
    assert app_id not in result.output


def test_a_409_names_the_renamed_project_by_its_current_slug(
    server: EmulatorServer, tmp_path: Path
) -> None:
    seed = Seed(server)
    project_id = seed.project("shop", "Shop")
    seed.project("bookshelf", "Books")
    manifest = write_manifest(
        tmp_path,
        f"""\
        version: 1
        projects:
          bookshelf:
            id: {project_id}
            name: Shop
        """,
    )
    result = _run(server, "apply", "-f", str(manifest), "--auto-approve")
    assert result.exit_code == 1, result.output
    lines = _error_lines(result, 409)
    assert lines, result.output
    expected = (
        'projects.updateProject: project "shop" (new slug "bookshelf") conflicts with an '
        "existing one (409)"
    )
    assert all(expected in line for line in lines), lines
    assert not any(project_id in line for line in lines), lines


def test_a_400_names_the_environment_app_and_project_by_slug(
    server: EmulatorServer, tmp_path: Path
) -> None:
    project_id, app_id = _seed_shop_web(server)
    # valid in a manifest (no maximum is known offline), beyond the emulator's plan maximum
    manifest = _shop_web_runtime(tmp_path, "{vCpus: 64}")
    result = _run(server, "apply", "-f", str(manifest), "--auto-approve")
    assert result.exit_code == 1, result.output
    lines = _error_lines(result, 400)
    assert lines, result.output
    expected = (
        'environments.updateSettings: invalid request for environment "production" of app '
        '"web" in project "shop" (400)'
    )
    assert all(expected in line for line in lines), lines
    assert not any(project_id in line or app_id in line for line in lines), lines
