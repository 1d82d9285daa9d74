"""plan, apply -f and apply PLANFILE assemble their plan in one pipeline: an error finding of the
built-in checks stops every path that writes before its first write, and plan --out saves no
plan that apply would take."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.plan.json_form import plan_from_dict
from reconciler.plan.planfile import PlatformBinding
from tests.fixtures.cli import CliResult, Seed, write_manifest
from tests.fixtures.planfiles import write_plan

WEB = "oci: {image: ghcr.io/acme/web:1.0}"
HEALTHCHECK = "healthcheck: {method: GET, path: /healthz}"


def manifest(production: str, header: str = "") -> str:
    return (
        f"version: 1\n{header}projects:\n  shop:\n    apps:\n      web:\n        {WEB}\n"
        f"        environments:\n          production:\n            {production}\n"
    )


def seed_shop(seed: Seed) -> None:
    seed.project("shop")
    seed.app("shop", "web", oci={"image": "ghcr.io/acme/web:1.0"})
    seed.settings(
        "shop",
        "web",
        "production",
        vCpus=0.5,
        memoryMib=512,
        regions=[{"name": "fra", "replicas": {"min": 1, "max": 5}}],
    )
    seed.variables(
        "shop", "web", "production", [{"key": "TOKEN", "value": "s3cret", "kind": "writeonly"}]
    )


def writes_after(seed: Seed, count: int) -> list[str]:
    return seed.writes()[count:]


def refused(result: CliResult) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.stderr


MADE_RECOVERABLE = "{variables: {TOKEN: visible}}"
OVER_CAPACITY = "{runtime: {vCpus: 1}}"  # 1 vCPU x 5 instances, over limits.vCpus 4
CAPACITY_HEADER = "limits: {vCpus: 4}\n"


def test_apply_refuses_a_plan_the_writeonly_rule_fails_before_any_write(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_shop(seed)
    before = len(seed.writes())
    path = write_manifest(tmp_path, manifest(MADE_RECOVERABLE))
    result = cli("apply", "-f", str(path), "--auto-approve")
    stderr = refused(result)
    assert "[writeonly-stays-writeonly]" in result.stdout  # the plan apply shows lists it
    assert "the built-in checks found 1 error(s) in this plan, nothing was applied" in stderr
    assert "writeonly-stays-writeonly" in stderr
    assert writes_after(seed, before) == []


def test_apply_refuses_a_capacity_overrun_before_any_write(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    seed_shop(seed)
    before = len(seed.writes())
    path = write_manifest(tmp_path, manifest(OVER_CAPACITY, CAPACITY_HEADER))
    stderr = refused(cli("apply", "-f", str(path), "--auto-approve"))
    assert "[capacity-limits]" in stderr and "limits.vCpus" in stderr
    assert writes_after(seed, before) == []


def test_plan_out_saves_no_plan_that_its_checks_fail(cli: Any, seed: Seed, tmp_path: Path) -> None:
    seed_shop(seed)
    path = write_manifest(tmp_path, manifest(MADE_RECOVERABLE))
    out = tmp_path / "plan.json"
    result = cli("plan", "-f", str(path), "--out", str(out))
    assert refused(result).startswith(f"Not saved to {out}: the built-in checks fail this plan.")
    assert "[writeonly-stays-writeonly]" in result.stdout
    assert not out.exists()


def test_apply_planfile_runs_the_checks_of_now_on_a_saved_plan(
    cli: Any, seed: Seed, emulator: Any, tmp_path: Path
) -> None:
    """A plan file an older reconciler saved although its checks failed (plan --out exited 1
    and wrote it anyway) is refused by apply, which runs the checks again."""
    seed_shop(seed)
    before = len(seed.writes())
    path = write_manifest(tmp_path, manifest(MADE_RECOVERABLE))
    shown = cli("plan", "-f", str(path), "--format", "json")
    assert shown.exit_code == 1
    plan = plan_from_dict(json.loads(shown.stdout))
    planfile = tmp_path / "old.json"
    write_plan(
        plan,
        planfile,
        manifest_files=[str(path)],
        platform=PlatformBinding(emulator.base_url, {"shop": _project_id(emulator)}),
    )
    stderr = refused(cli("apply", str(planfile)))
    assert "the built-in checks found 1 error(s) in this plan, nothing was applied" in stderr
    assert writes_after(seed, before) == []


def test_a_waived_finding_does_not_stop_apply(cli: Any, seed: Seed, tmp_path: Path) -> None:
    seed_shop(seed)
    waiver = 'checks: {writeonly-stays-writeonly: {"off": true, reason: "a public id"}}'
    path = write_manifest(tmp_path, manifest(f"{{variables: {{TOKEN: visible}}, {waiver}}}"))
    result = cli("apply", "-f", str(path), "--auto-approve")
    assert result.exit_code == 0, result.output
    assert "[writeonly-stays-writeonly waived: a public id]" in result.stdout


def test_a_warning_finding_is_shown_by_apply_and_fails_nothing(
    cli: Any, seed: Seed, tmp_path: Path
) -> None:
    """production-healthcheck warns by default: in the plan apply shows, and apply goes on."""
    seed_shop(seed)
    path = write_manifest(tmp_path, manifest("{runtime: {port: 8080}}"))
    result = cli("apply", "-f", str(path), "--auto-approve")
    assert result.exit_code == 0, result.output
    assert "production has no health check [production-healthcheck]" in result.stdout
    with_check = write_manifest(tmp_path, manifest(f"{{runtime: {{port: 8080, {HEALTHCHECK}}}}}"))
    assert "production-healthcheck" not in cli("plan", "-f", str(with_check)).stdout


def _project_id(emulator: Any) -> str:
    response = emulator.call("projects.getProject", {"project": "shop"})
    return str(response.json()["data"]["id"])
