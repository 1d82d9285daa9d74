"""Templates change nothing downstream of the model: a generated 200-app workspace written with
templates and written out in full plans the same JSON, against the same live state. And
`plan --explain` says where each change comes from and how far each template reaches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.engine.template_workspaces import APPS, PROJECTS, with_templates, write, written_out
from tests.fixtures.cli import run_cli

SECRETLESS = {"RECONCILER_FINGERPRINT_KEY": None, "NO_COLOR": "1"}


def plan_json(manifests: Path, state: Path, *extra: str) -> dict[str, Any]:
    result = run_cli(
        ["plan", "-f", str(manifests), "--base-url", f"local:{state}", "--format", "json", *extra],
        env=SECRETLESS,
    )
    assert result.exit_code == 0, result.output
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


def without_places(plan: dict[str, Any]) -> str:
    """The plan without what names the manifest's own bytes: the files' digest, each change's
    and each finding's or override's file:line:column, and the time it was made."""
    plan = json.loads(json.dumps(plan))
    del plan["manifest_digest"], plan["metadata"]["created_at"]
    for change in plan["changes"]:
        del change["position"]
    for name in ("findings", "overrides"):
        for item in plan[name]:
            for place in ("file", "line", "column"):
                del item[place]
        plan[name].sort(key=lambda item: json.dumps(item, sort_keys=True))
    return json.dumps(plan, indent=1, sort_keys=True)


@pytest.mark.slow
def test_a_generated_workspace_with_and_without_templates_plans_the_same_json(
    tmp_path: Path,
) -> None:
    templated = write(tmp_path / "templated", with_templates())
    flat = write(tmp_path / "flat", written_out())
    lines = [
        sum(t.count("\n") for t in files.values()) for files in (with_templates(), written_out())
    ]
    assert lines[0] * 3 < lines[1]  # the point of it

    empty = tmp_path / "empty.json"
    first = plan_json(templated, empty)
    assert len({c["address"].split("/")[1] for c in first["changes"] if c["kind"] == "app"}) == APPS
    assert first["summary"]["add"] > PROJECTS * APPS * 8
    assert without_places(first) == without_places(plan_json(flat, empty))

    # against a live state that differs: the written-out one applied, then two changes made
    # in the templated one (a template's value and a parameter)
    live = tmp_path / "live.json"
    applied = run_cli(
        ["apply", "-f", str(flat), "--base-url", f"local:{live}", "--auto-approve"],
        env=SECRETLESS,
    )
    assert applied.exit_code == 0, applied.output
    assert plan_json(templated, live)["changes"] == []
    shutil.copy(live, tmp_path / "kept.json")
    for directory, files in ((templated, with_templates()), (flat, written_out())):
        for name, text in files.items():
            text = text.replace("memoryMib: 512", "memoryMib: 1024")
            text = text.replace("app-7.team-2.example.com", "app-7.team-2.example.org")
            (directory / name).write_text(text)
    changed = plan_json(templated, live)
    assert changed["summary"] == {
        "add": 2,
        "change": PROJECTS * APPS * 2 + 2,
        "destroy": 2,
        "blocked": 0,
    }
    assert without_places(changed) == without_places(plan_json(flat, live))


def test_explain_names_the_templates_and_their_reach(tmp_path: Path) -> None:
    files = with_templates()
    templated = write(tmp_path / "templated", files)
    live = tmp_path / "live.json"
    applied = run_cli(
        ["apply", "-f", str(templated), "--base-url", f"local:{live}", "--auto-approve"],
        env=SECRETLESS,
    )
    assert applied.exit_code == 0, applied.output
    shared = templated / "00-shared.yaml"
    shared.write_text(shared.read_text().replace("prefix: /internal", "prefix: /private"))

    plain = plan_json(templated, live)
    assert "template_reach" not in plain
    assert all("templates" not in change for change in plain["changes"])

    explained = plan_json(templated, live, "--explain")
    public_apps = PROJECTS * (APPS - APPS // 5)
    assert explained["template_reach"] == [
        {
            "source": "templates.public-web",
            "changes": public_apps,
            "apps": public_apps,
            "projects": PROJECTS,
        },
        {
            "source": "templates.firewall-baseline",
            "changes": public_apps,
            "apps": public_apps,
            "projects": PROJECTS,
        },
    ]
    change = next(
        c for c in explained["changes"] if c["address"] == "policies.team-0/app-1/production"
    )
    assert change["templates"] == ["templates.public-web", "templates.firewall-baseline"]
    assert change["position"].startswith(f"{shared}:")

    text = run_cli(
        ["plan", "-f", str(templated), "--base-url", f"local:{live}", "--explain"],
        env=SECRETLESS,
    ).stdout
    assert "    # from templates.public-web and templates.firewall-baseline\n" in text
    assert (
        f"Note: templates.firewall-baseline changes {public_apps} apps in {PROJECTS} projects "
        f"({public_apps} changes)\n" in text
    )


def test_a_saved_explained_plan_reads_back_with_its_templates() -> None:
    from reconciler.plan.changes import Action, Change, Plan
    from reconciler.plan.json_form import plan_from_dict, plan_to_dict

    change = Change(
        "variable.shop/web/production/A",
        "variable",
        Action.CREATE,
        None,
        {"value": "x"},
        templates=("appDefaults", "templates.web"),
    )
    written = plan_to_dict(Plan(changes=(change,)))
    assert written["changes"][0]["templates"] == ["appDefaults", "templates.web"]
    assert written["template_reach"][0] == {
        "source": "appDefaults",
        "changes": 1,
        "apps": 1,
        "projects": 1,
    }
    assert plan_from_dict(written).changes[0].templates == ("appDefaults", "templates.web")


COMPANY = Path(__file__).resolve().parents[2] / "examples" / "company"
COMPANY_BEFORE = Path(__file__).parent / "company_before_templates"
"""examples/company as it was written before templates (YAML anchors, `x-` blocks)."""


def test_the_company_example_plans_as_it_did_before_templates(tmp_path: Path) -> None:
    secrets = {**SECRETLESS, "SHOP_DATABASE_URL": "postgres://db", "SHOP_STRIPE_SECRET_KEY": "sk"}
    empty = tmp_path / "empty.json"
    assert without_places(plan_json(COMPANY, empty)) == without_places(
        plan_json(COMPANY_BEFORE, empty)
    )
    live = tmp_path / "live.json"
    drifted = write(
        tmp_path / "drifted",
        {
            p.name: p.read_text()
            .replace("memoryMib: 1024", "memoryMib: 512")
            .replace("10.0.0.0/8", "10.0.0.0/16")
            for p in COMPANY_BEFORE.glob("*.yaml")
        },
    )
    applied = run_cli(
        ["apply", "-f", str(drifted), "--base-url", f"local:{live}", "--auto-approve"], env=secrets
    )
    assert applied.exit_code == 0, applied.output
    before = plan_json(COMPANY_BEFORE, live)
    assert before["summary"]["change"] > 3
    assert without_places(plan_json(COMPANY, live)) == without_places(before)
