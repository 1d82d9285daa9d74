"""What a plan imports: the policy engine (and re2's compiled patterns of it) only when a
policy list changes, jsonschema only for a manifest the quick check cannot accept. Each is
a noticeable part of the start-up every `reconciler plan` pays before its first call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLAN_AND_LIST_MODULES = """
import json, sys
from reconciler.cli import main
try:
    main(["plan", "-f", sys.argv[1], "--base-url", "local:" + sys.argv[2]])
except SystemExit:
    pass
names = [m for m, module in sys.modules.items() if module is not None]
sys.stderr.write(json.dumps(sorted(names)))
"""


def modules_after(args: list[str], tmp_path: Path, state: str) -> set[str]:
    state_file = tmp_path / state
    done = subprocess.run(
        [sys.executable, "-c", PLAN_AND_LIST_MODULES, *args[:1], str(state_file)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert "Plan:" in done.stdout or "No changes" in done.stdout, done.stdout
    return set(json.loads(done.stderr.splitlines()[-1]))


def write(tmp_path: Path, policies: str) -> Path:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n"
        "        oci: {image: ghcr.io/acme/web:1}\n"
        f"        environments:\n          production:{policies}\n",
        encoding="utf-8",
    )
    return manifest


def test_a_plan_without_policy_changes_does_not_import_the_policy_engine(
    tmp_path: Path,
) -> None:
    manifest = write(tmp_path, " {}")
    loaded = modules_after([str(manifest)], tmp_path, "state.json")
    assert "reconciler.policy_tests.engine" not in loaded
    assert "jsonschema" not in loaded


def test_a_plan_that_changes_a_policy_list_evaluates_it(tmp_path: Path) -> None:
    policies = (
        "\n            policies:\n              - name: deny\n                enabled: true\n"
        "                match: [{path: {path: {prefix: /admin}}}]\n"
        "                firewall: {action: ACTION_DENY}"
    )
    manifest = write(tmp_path, policies)
    loaded = modules_after([str(manifest)], tmp_path, "state.json")
    assert "reconciler.policy_tests.engine" in loaded


def test_a_plan_that_posts_no_notification_does_not_import_what_builds_one(
    tmp_path: Path,
) -> None:
    manifest = write(tmp_path, " {}")
    loaded = modules_after([str(manifest)], tmp_path, "state.json")
    assert "reconciler.report.notify.delivery" in loaded  # the URLs are read (and registered)
    assert not {"reconciler.report.notify.events", "reconciler.report.notify.bodies"} & loaded
