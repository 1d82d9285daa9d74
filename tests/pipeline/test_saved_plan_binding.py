"""A saved plan is bound to the platform it was made against (its base URL, and the IDs of the
projects it read) and held to the limits of the command that applies it, never to limits read
back from the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import CliResult, Seed, run_cli, shop_manifest, write_manifest
from tests.fixtures.planfiles import reseal

KEY = "k" * 32
APPS = """\
web:
  oci: {image: ghcr.io/acme/web:1.0}
  environments:
    production:
      runtime: {port: 8080, healthcheck: {method: GET, path: /healthz}}
"""


def run(
    base_url: str | None, *args: str, key: str | None = None, api_key: str | None = None
) -> CliResult:
    env = {
        "RECONCILER_BASE_URL": base_url,
        "RECONCILER_API_KEY": api_key,
        "RECONCILER_FINGERPRINT_KEY": key,
    }
    result = run_cli(args, env=env)
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    return write_manifest(tmp_path, shop_manifest(APPS))


def saved(
    base_url: str,
    manifest: Path,
    tmp_path: Path,
    key: str | None = None,
    api_key: str | None = None,
) -> Path:
    planfile = tmp_path / "plan.json"
    made = run(
        base_url, "plan", "-f", str(manifest), "--out", str(planfile), key=key, api_key=api_key
    )
    assert made.exit_code == 0, made.output
    return planfile


def test_a_plan_made_on_one_local_platform_is_refused_by_another(
    tmp_path: Path, manifest: Path
) -> None:
    one, other = f"local:{tmp_path / 'one.json'}", f"local:{tmp_path / 'other.json'}"
    planfile = saved(one, manifest, tmp_path)
    refused = run(other, "apply", str(planfile))
    assert refused.exit_code == 1
    assert f"this plan was made against local:{tmp_path / 'one.json'}, not " in refused.stderr
    assert not (tmp_path / "other.json").exists()
    applied = run(None, "apply", str(planfile))  # the built-in emulator: the recorded one
    assert applied.exit_code == 0, applied.output
    assert (tmp_path / "one.json").exists()


def test_without_a_base_url_only_a_signed_plan_picks_its_own(
    emulator: Any, seed: Seed, tmp_path: Path, manifest: Path
) -> None:
    """The command sends the API key to the base URL: an unsigned file, which anyone who can
    edit it could point elsewhere, does not choose it."""
    api_key = emulator.api_key
    unsigned = saved(emulator.base_url, manifest, tmp_path, api_key=api_key)
    refused = run(None, "apply", str(unsigned), api_key=api_key)
    assert refused.exit_code == 1
    assert f"pass --base-url {emulator.base_url}" in refused.stderr
    assert seed.writes() == []
    signed = saved(emulator.base_url, manifest, tmp_path, key=KEY, api_key=api_key)
    assert json.loads(signed.read_text())["signature"].startswith("hmac-sha256:")
    applied = run(None, "apply", str(signed), key=KEY, api_key=api_key)
    assert applied.exit_code == 0, applied.output
    assert "projects.createProject" in seed.writes()


def test_an_edited_signed_plan_is_refused_whatever_its_checksum(
    tmp_path: Path, manifest: Path
) -> None:
    base_url = f"local:{tmp_path / 'state.json'}"
    planfile = saved(base_url, manifest, tmp_path, key=KEY)
    document = json.loads(planfile.read_text())
    document["platform"]["base_url"] = f"local:{tmp_path / 'elsewhere.json'}"
    signature = document["signature"]
    reseal(document)
    document["signature"] = signature  # kept: the edit cannot recompute it without the key
    planfile.write_text(json.dumps(document))
    refused = run(None, "apply", str(planfile), key=KEY)
    assert refused.exit_code == 1
    assert "the plan file's signature does not match RECONCILER_FINGERPRINT_KEY" in refused.stderr
    assert not (tmp_path / "elsewhere.json").exists()


def test_a_project_deleted_and_created_again_is_another_workspace(
    tmp_path: Path, manifest: Path
) -> None:
    base_url = f"local:{tmp_path / 'state.json'}"
    assert run(base_url, "apply", "-f", str(manifest), "--auto-approve").exit_code == 0
    edited = write_manifest(tmp_path, shop_manifest(APPS.replace("1.0", "2.0")), "edited.yaml")
    planfile = saved(base_url, edited, tmp_path)
    state = tmp_path / "state.json"
    text = state.read_text()
    document = json.loads(text)
    [old_id] = [p["id"] for p in _projects(document)]
    state.write_text(text.replace(old_id, "proj_another00"))
    refused = run(base_url, "apply", str(planfile))
    assert refused.exit_code == 1
    assert "this is not the workspace the plan was made against" in refused.stderr
    assert f"shop ({old_id} in the plan, proj_another00 now)" in refused.stderr


def _projects(state: Any) -> list[dict[str, Any]]:
    """The projects of the emulator's state file, wherever its layout keeps them."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if str(node.get("id", "")).startswith("proj_") and "slug" in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(state)
    return found


MANY = "\n".join(f"app{i:02d}:\n  oci: {{image: ghcr.io/acme/a:1}}" for i in range(11))


def test_max_deletes_comes_from_the_applying_command_never_from_the_file(
    tmp_path: Path,
) -> None:
    """A plan saved with --max-deletes 20 (or whose file was edited to say 100, the checksum
    recomputed) deleting 11 apps is refused by apply's own limit of 10."""
    base_url = f"local:{tmp_path / 'state.json'}"
    everything = write_manifest(tmp_path, shop_manifest(MANY), "all.yaml")
    assert run(base_url, "apply", "-f", str(everything), "--auto-approve").exit_code == 0
    pruned = write_manifest(
        tmp_path, "version: 1\nprune: {apps: true}\nprojects:\n  shop: {apps: {}}\n", "none.yaml"
    )
    planfile = tmp_path / "plan.json"
    made = run(base_url, "plan", "-f", str(pruned), "--out", str(planfile), "--max-deletes", "20")
    assert made.exit_code == 0, made.output
    document = json.loads(planfile.read_text())
    document["max_deletes"] = 100
    reseal(document)
    planfile.write_text(json.dumps(document))
    refused = run(base_url, "apply", str(planfile))
    assert refused.exit_code == 1
    assert "more than --max-deletes 10" in refused.stderr
    applied = run(base_url, "apply", str(planfile), "--max-deletes", "11")
    assert applied.exit_code == 0, applied.output
