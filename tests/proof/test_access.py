"""Proof: a key with only read permissions can plan but never apply, and says what is missing.

Keys come from the emulator's key list (`EmulatorConfig(keys=...)`, the same as `--keys FILE`):
one with every `*.read_*` grant, and narrower ones with ID-specific grants. Plan must succeed
(exit 0 or 2); apply must stop with exit 1 before any write takes effect, and its error must
name the exact permission string the refused call needs, which `plan` also lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconciler.emulator.app import EmulatorConfig
from reconciler.emulator.auth import ACTIONS, ApiKey
from reconciler.plan.permissions import compact
from tests.fixtures.cli import CliResult, Seed, run_cli
from tests.fixtures.emulator import STEP_MS, EmulatorServer
from tests.proof.strategies import Scenario, scenarios
from tests.proof.test_convergence import FINGERPRINT_KEY, build_live_state

ADMIN_KEY = "access-admin-key"
READ_KEY = "access-read-only-key"
READ_PERMISSIONS = [
    f"{scope}.*.{action}"
    for scope, actions in ACTIONS.items()
    for action in actions
    if action.startswith("read_")
]

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
            runtime: {port: 8080}
            variables: {NODE_ENV: production}
            domains: [shop.example.com]
"""


@pytest.fixture
def server(start_emulator: Callable[[EmulatorConfig], EmulatorServer]) -> EmulatorServer:
    return start_emulator(
        EmulatorConfig(
            keys=[ApiKey(READ_KEY, READ_PERMISSIONS)], dev_key=ADMIN_KEY, step_ms=STEP_MS
        )
    )


def _run(
    server: EmulatorServer, key: str, *args: str, env: Mapping[str, str] | None = None
) -> CliResult:
    full_env = {
        "RECONCILER_BASE_URL": server.base_url,
        "RECONCILER_API_KEY": key,
        "RECONCILER_FINGERPRINT_KEY": None,
        "RECONCILER_DEBUG": None,
        "NO_COLOR": "1",
        **(env or {}),
    }
    return run_cli(args, env=full_env)


def _writes(server: EmulatorServer, since: int = 0) -> list[dict[str, Any]]:
    """Write calls in the request log after its first `since` entries (the seeding)."""
    return [
        r
        for r in server.requests()[since:]
        if not r["operation"].split(".")[-1].startswith(("get", "list"))
    ]


def _needed(plan_output: str) -> set[str]:
    """The permission strings `plan` lists as needed by apply."""
    return set(re.findall(r"\b(?:project|app|environment)\.[\w*]+\.[a-z_]+\b", plan_output))


def _printed_permissions(plan_output: str) -> list[str]:
    """The strings under `Permissions needed by apply` in a text plan, as a user copies them."""
    lines = plan_output.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.startswith("Permissions needed by apply")),
        len(lines),
    )
    return [line.strip() for line in lines[start + 1 :] if line.startswith("  ")]


def _assert_refused(
    server: EmulatorServer, result: CliResult, permission: str, *, since: int = 0
) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f'"{permission}"' in result.output, result.output
    assert "403" in result.output
    # Found by this suite: the platform's own wording of the same permission (the wildcard,
    # where the ID-specific string was named) was appended, so every line said it twice.
    failed = [line for line in result.output.splitlines() if "(403)" in line]
    assert failed and all(line.count("lacks") == 1 for line in failed), failed
    assert READ_KEY not in result.output
    # Nothing was written: every write the platform saw was refused.
    assert _writes(server, since), "apply should have reached the first write"
    assert {r["status"] for r in _writes(server, since)} == {403}


def test_read_only_key_plans_a_new_workspace_but_cannot_create_it(
    server: EmulatorServer, tmp_path: Path
) -> None:
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    plan = _run(server, READ_KEY, "plan", "-f", str(manifest), "--detailed-exitcode")
    assert plan.exit_code == 2, plan.output
    assert "project.*.create_project" in _needed(plan.output)

    before = server.state()
    result = _run(server, READ_KEY, "apply", "-f", str(manifest), "--auto-approve")
    _assert_refused(server, result, "project.*.create_project")
    assert server.state()["projects"] == before["projects"]


def test_read_only_key_names_the_id_specific_permission_of_an_existing_object(
    server: EmulatorServer, tmp_path: Path
) -> None:
    seed = Seed(server)
    project_id = seed.project("shop", "Shop")
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    plan = _run(server, READ_KEY, "plan", "-f", str(manifest), "--detailed-exitcode")
    assert plan.exit_code == 2, plan.output
    needed = f"project.{project_id}.create_app"
    assert needed in _needed(plan.output) or "project.*.create_app" in _needed(plan.output)

    seeded = len(server.requests())
    result = _run(server, READ_KEY, "apply", "-f", str(manifest), "--auto-approve")
    _assert_refused(server, result, needed, since=seeded)
    assert "project.*.create_app" in result.output  # the hint offers the wildcard too
    assert [a["slug"] for a in server.state()["apps"].values()] == []


def test_read_only_key_cannot_change_settings_of_an_existing_environment(
    server: EmulatorServer, tmp_path: Path
) -> None:
    seed = Seed(server)
    seed.project("shop", "Shop")
    seed.app("shop", "web", name="Web", oci={"image": "ghcr.io/acme/web:1.0"})
    seed.variables("shop", "web", "production", [{"key": "NODE_ENV", "value": "production",
                                                 "kind": "recoverable"}])  # fmt: skip
    seed.domain("shop", "web", "production", "shop.example.com")
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    plan = _run(server, READ_KEY, "plan", "-f", str(manifest), "--detailed-exitcode")
    assert plan.exit_code == 2, plan.output  # only the port differs
    environment = server.call(
        "environments.getEnvironment",
        {"project": "shop", "app": "web", "environment": "production"},
    ).json()["data"]
    seeded = len(server.requests())
    result = _run(server, READ_KEY, "apply", "-f", str(manifest), "--auto-approve")
    ids = {
        f"environment.{environment['id']}.update_environment",
        "environment.*.update_environment",
    }
    assert result.exit_code == 1, result.output
    assert any(f'"{p}"' in result.output for p in ids), result.output
    assert {r["status"] for r in _writes(server, seeded)} == {403}


def test_a_key_scoped_to_another_project_is_refused_with_this_projects_permission(
    server: EmulatorServer, tmp_path: Path
) -> None:
    seed = Seed(server)
    shop = seed.project("shop", "Shop")
    other = seed.project("other", "Other")
    scoped_key = "access-scoped-key"
    # Keys are fixed at start (`--keys FILE`); this one needs an ID known only after seeding.
    server.emulator.keys[scoped_key] = ApiKey(
        scoped_key, [*READ_PERMISSIONS, f"project.{other}.create_app"]
    )
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    plan = _run(server, scoped_key, "plan", "-f", str(manifest), "--detailed-exitcode")
    assert plan.exit_code == 2, plan.output
    seeded = len(server.requests())
    result = _run(server, scoped_key, "apply", "-f", str(manifest), "--auto-approve")
    _assert_refused(server, result, f"project.{shop}.create_app", since=seeded)
    assert scoped_key not in result.output


def test_read_only_key_exports_and_reports_status(server: EmulatorServer, tmp_path: Path) -> None:
    seed = Seed(server)
    seed.project("shop", "Shop")
    seed.app("shop", "web", name="Web", oci={"image": "ghcr.io/acme/web:1.0"})
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    seeded = len(server.requests())
    exported = _run(server, READ_KEY, "export", "--project", "shop")
    assert exported.exit_code == 0, exported.output
    assert "web:" in exported.stdout
    status = _run(server, READ_KEY, "status", "-f", str(manifest))
    assert status.exit_code == 0, status.output
    assert _writes(server, seeded) == []


def test_a_key_without_read_grants_cannot_plan_and_is_told_which(
    server: EmulatorServer, tmp_path: Path
) -> None:
    Seed(server).project("shop", "Shop")
    no_reads = "access-no-reads-key"
    server.emulator.keys[no_reads] = ApiKey(no_reads, ["project.*.create_project"])
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST, encoding="utf-8")
    result = _run(server, no_reads, "plan", "-f", str(manifest))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert re.search(r'lacks "project\.(\*|proj_\w+)\.read_project"', result.output), result.output
    assert no_reads not in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["plan", "-f", "{manifest}"],
        ["apply", "-f", "{manifest}", "--auto-approve"],
        ["status", "-f", "{manifest}"],
        ["export"],
    ],
    ids=lambda argv: argv[0],
)
def test_no_key_fails_before_any_call(
    command: list[str], server: EmulatorServer, tmp_path: Path
) -> None:
    """Every operation needs a key: without one nothing is sent, and the message says which
    variable to set instead of quoting a 401."""
    manifest = tmp_path / "shop.yaml"
    manifest.write_text(MANIFEST)
    argv = [arg.format(manifest=manifest) for arg in command]
    env = {"RECONCILER_BASE_URL": server.base_url, "RECONCILER_API_KEY": None, "NO_COLOR": "1"}
    result = run_cli(argv, env=env)
    assert result.exit_code == 1, result.output
    assert "no API key: RECONCILER_API_KEY is not set" in result.stderr
    assert server.base_url in result.stderr
    assert "(401)" not in result.output
    assert server.requests() == []


# ---- the permission list of a plan is enough to apply it ----------------------------------------

SCOPED_KEY = "access-exactly-listed-key"


# A scenario seeds a whole workspace, so shrinking one takes minutes; the message names the
# permissions listed and the refusal, which is what a failure needs.
@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(scenario=scenarios(), listing=st.sampled_from(["printed", "every"]))
def test_a_key_holding_exactly_the_listed_permissions_applies_the_saved_plan(
    server: EmulatorServer, tmp_path: Path, scenario: Scenario, listing: str
) -> None:
    """Whatever the manifest and the live state, `plan` lists every permission its apply
    needs: a key holding exactly those applies the saved plan (which re-reads live state,
    checks the base URL before believing a 404, and writes). Either list: the one `plan`
    prints (the fewest strings that cover them, reconciler/plan/permissions.py) or every
    string, as `--show-permissions` and the JSON list them."""
    text = yaml.safe_dump(scenario.manifest, sort_keys=False)
    server.reset()
    build_live_state(Seed(server), scenario.seed)
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(text, encoding="utf-8")
    saved = tmp_path / "plan.json"
    env = {**scenario.env, "RECONCILER_FINGERPRINT_KEY": FINGERPRINT_KEY}
    planned = _run(server, ADMIN_KEY, "plan", "-f", str(manifest), "--out", str(saved), env=env)
    assert planned.exit_code == 0, planned.output
    listed = json.loads(saved.read_text(encoding="utf-8"))["permissions"]
    if listing == "printed":
        listed = list(compact(listed))
        if "Permissions needed by apply" in planned.stdout:  # printed when it has changes
            assert sorted(_printed_permissions(planned.stdout)) == listed
    server.emulator.keys[SCOPED_KEY] = ApiKey(SCOPED_KEY, listed)
    try:
        applied = _run(server, SCOPED_KEY, "apply", str(saved), env=env)
    finally:
        del server.emulator.keys[SCOPED_KEY]
    assert applied.exit_code == 0, f"permissions listed: {listed}\n{applied.output}"
