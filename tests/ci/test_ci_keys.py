"""The keys the CI examples describe really are enough: the read-only set runs validate, plan,
export and status; apply needs the permissions `reconciler plan` lists, and they suffice."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reconciler.emulator.app import EmulatorConfig
from reconciler.emulator.auth import ApiKey
from tests.ci.scripts import GITHUB
from tests.fixtures.cli import platform_env, run_cli, shop_manifest

ROOT = Path(__file__).resolve().parents[2]
READ_ONLY = "plan-key"
MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: "nginx:1.27"}
      environments:
        production:
          runtime: {vCpus: 0.5}
          variables: {NODE_ENV: production}
          domains: [shop.example.com]
          policies:
            - name: deny-admin
              enabled: true
              firewall: {action: ACTION_DENY}
    """
)


def read_set() -> list[str]:
    text = GITHUB.read_text()
    return sorted(set(re.findall(r"\b(?:project|app|environment)\.\*\.read_\w+", text)))


def test_read_only_key_plans_exports_and_reports_but_cannot_apply(start_emulator, tmp_path) -> None:
    server = start_emulator(EmulatorConfig(keys=[ApiKey(READ_ONLY, read_set())], step_ms=20))
    manifest = tmp_path / "platform.yaml"
    manifest.write_text(MANIFEST)
    env = platform_env(server, READ_ONLY)

    assert run_cli(["validate", "-f", str(manifest)], env=env).exit_code == 0
    plan = run_cli(["plan", "-f", str(manifest), "--format", "json"], env=env)
    assert plan.exit_code == 0, plan.output
    assert run_cli(["export"], env=env).exit_code == 0
    assert run_cli(["status", "-f", str(manifest)], env=env).exit_code == 0

    refused = run_cli(["apply", "-f", str(manifest), "--auto-approve"], env=env)
    assert refused.exit_code == 1
    assert "project.*.create_project" in refused.output  # names the permission it lacks

    # a key holding exactly what the plan lists applies it (wildcards: nothing exists yet)
    listed = json.loads(plan.stdout)["permissions"]
    assert "project.*.create_project" in listed
    writer = start_emulator(EmulatorConfig(keys=[ApiKey("w", listed)], step_ms=20))
    env = platform_env(writer, "w")
    applied = run_cli(["apply", "-f", str(manifest), "--auto-approve"], env=env)
    assert applied.exit_code == 0, applied.output
