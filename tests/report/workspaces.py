"""Generated workspaces a reviewer reads plans of: the company workspace of
tests/engine/template_workspaces.py (written out in full), applied to a local emulator, then
edited with changes of every kind, so that `plan` has something of each to show
(tests/report/test_plan_reading.py reads its plans as a reviewer would).

`review_workspace(tmp_path, projects, apps_each, units)` applies the workspace and returns the
edited manifest's directory and its state file. Each unit edits one project and makes
`CHANGES_PER_UNIT` changes: a setting raised (a capacity ceiling moves), a variable changed, one
added from the environment (a secret), one removed, a domain moved (one removed, one created),
a policy disabled so that a policy test's verdict turns, a policy inserted, an app renamed (its
ID pinned), an app left out (pruned), an app's source moved from git to an image (replaced),
and an app created; and a check is waived. 50 apps with one unit is the small workspace (14 changes), 200 apps in 10
projects with four units the large one (56 changes).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.engine.template_workspaces import OWN_POLICY, written_out
from tests.fixtures.cli import run_cli

CHANGES_PER_UNIT = 14
SECRET_ENV = "REVIEW_STRIPE_KEY"
SECRET_VALUE = "sk_test_review_workspace"
VERDICT_TEST = "admin is closed to the internet"

BLOCK_BOTS = {
    "name": "block-bots",
    "enabled": True,
    "match": [{"header": {"name": "User-Agent", "value": {"regex": ".*bot.*"}}}],
    "firewall": {"action": "ACTION_DENY"},
}
ADMIN_TEST = {
    "name": VERDICT_TEST,
    "request": {"method": "GET", "path": "/admin/users", "clientIp": "198.51.100.7"},
    "expect": "deny",
}


@dataclass(frozen=True)
class ReviewWorkspace:
    directory: Path
    """The edited manifests, one file per project."""
    base_url: str
    """`local:PATH` of the emulator state the unedited workspace was applied to."""
    apps: int
    changes: int

    def env(self) -> dict[str, str | None]:
        return {
            "RECONCILER_BASE_URL": self.base_url,
            "RECONCILER_API_KEY": None,
            "RECONCILER_FINGERPRINT_KEY": None,
            "RECONCILER_DEBUG": None,
            "NO_COLOR": "1",
            SECRET_ENV: SECRET_VALUE,
        }


def base_documents(projects: int, apps_each: int) -> dict[str, dict[str, Any]]:
    """The workspace as applied: the company workspace written out, apps pruned when left out,
    and a policy test beside each app's own admin policy."""
    documents = {
        name: yaml.safe_load(text) for name, text in written_out(projects, apps_each).items()
    }
    for name, document in documents.items():
        if name == min(documents):
            document["prune"] = {"apps": True}
        for project in document["projects"].values():
            for app in project["apps"].values():
                production = app["environments"]["production"]
                if any(p["name"] == OWN_POLICY["name"] for p in production["policies"]):
                    production["policyTests"] = [ADMIN_TEST]
    return documents


def review_workspace(
    directory: Path, *, projects: int, apps_each: int, units: int
) -> ReviewWorkspace:
    """Apply the workspace to a local emulator in `directory`, then edit it (`units` units)."""
    state = directory / "platform.json"
    base_url = f"local:{state}"
    documents = base_documents(projects, apps_each)
    applied = _write(directory / "applied", documents)
    result = run_cli(
        ["apply", "-f", str(applied), "--auto-approve"],
        env={"RECONCILER_BASE_URL": base_url, "RECONCILER_API_KEY": None, "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output[-3000:]
    live = json.loads(state.read_text(encoding="utf-8"))
    app_ids = {(app["_projectId"], app["slug"]): app_id for app_id, app in live["apps"].items()}
    project_ids = {project["slug"]: project_id for project_id, project in live["projects"].items()}
    edited = copy.deepcopy(documents)
    files = sorted(edited)
    step = max(1, len(files) // max(units, 1))
    for unit in range(units):
        name = files[(unit * step) % len(files)]
        ((slug, project),) = edited[name]["projects"].items()
        ids = {app: app_ids[(project_ids[slug], app)] for app in project["apps"]}
        _edit(slug, project, ids.__getitem__)
    target = _write(directory / "platform", edited)
    return ReviewWorkspace(target, base_url, projects * apps_each, units * CHANGES_PER_UNIT)


def _edit(project_slug: str, project: dict[str, Any], app_id: Any) -> None:
    """One unit of edits, on the apps 1 to 9 of a project (14 changes)."""
    apps = project["apps"]
    production = {a: apps[f"app-{a}"]["environments"]["production"] for a in range(1, 10)}
    production[1]["runtime"]["vCpus"] = 2  # settings: capacity moves
    apps["app-1"]["environments"]["preview"]["runtime"]["vCpus"] = 0.5  # and in preview
    production[2]["variables"]["LOG_FORMAT"] = "text"  # variable changed
    production[3]["policies"] = [  # the admin policy disabled: its test's verdict turns
        {**p, "enabled": False} if p["name"] == OWN_POLICY["name"] else p
        for p in production[3]["policies"]
    ]
    production[4]["variables"]["STRIPE_KEY"] = {"fromEnv": SECRET_ENV}  # a secret added
    del production[5]["variables"]["LOG_FORMAT"]  # variable removed
    apps["app-5"]["checks"] = {  # a check waived: no change, an override the review must see
        "production-healthcheck": {"off": True, "reason": "a queue worker: no HTTP to check"}
    }
    preview = apps["app-6"]["environments"]["preview"]
    preview["domains"] = [f"next.{preview['domains'][0]}"]  # domain moved: two changes
    production[6]["policies"].insert(1, BLOCK_BOTS)  # a policy inserted
    renamed = apps.pop("app-7")  # renamed, its ID pinned
    apps["app-7-web"] = {"id": app_id("app-7"), **renamed}
    del apps["app-8"]  # pruned
    apps["app-9"].pop("git")  # git -> image: replaced
    apps["app-9"] = {"oci": {"image": "ghcr.io/acme/app-9:1.0"}, **apps["app-9"]}
    apps["app-9"]["environments"] = {}  # nothing else, so the replace is one change
    apps[f"{project_slug}-new"] = {  # created with its production settings: two changes
        "oci": {"image": f"ghcr.io/acme/{project_slug}-new:1.0"},
        "environments": {"production": {"runtime": {"port": 8080, "vCpus": 0.5}}},
    }


def _write(directory: Path, documents: dict[str, dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        (directory / name).write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return directory
