"""An absent block is unmanaged at every level: leaving a block out never destroys anything.

For any live state and any manifest (tests/proof/strategies.py), and any block of that
manifest (a project, a project's or app's field, `apps`, `git`/`oci`, `defaults`,
`environments` or one environment, `build`/`runtime` and their members, `regions`,
`variables`, a variable's `kind`/`description`, `domains`, `policies`), the plan of the
manifest without that block holds no destructive change the plan of the whole manifest does
not hold. Destructive: a delete, a replace, a variable or domain removed, a policy removed
from a list, a region removed from a list.

Left out on purpose, because the README says they do remove things: dropping an item of a
present collection (an app under `apps`, a key under `variables`: the collection stays
authoritative), and `prune` itself. A block removed while another layer of the same
environment still holds that collection (`variables` under both `defaults` and
`environments.production`) does not make it absent: the collection shrinks to what the other
layer lists, which is authoritative by design, so such removals are not checked.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconciler.emulator.app import EmulatorConfig, create_app
from reconciler.manifest.validate import load_manifest
from reconciler.plan.changes import ABSENT, Action, Plan, PolicyListDetail
from reconciler.plan.kinds.policies import normalise_policy
from reconciler.plan.planner import PlanOptions, build_plan
from reconciler.platform.client import PlatformClient
from tests.proof.strategies import ENVIRONMENTS, Scenario, SeedCall, scenarios
from tests.proof.test_convergence import effective_environments

KEY = "absent-blocks-key-0001"
COLLECTIONS = ("regions", "variables", "domains", "policies")
SETTINGS_BLOCKS = ("build", "runtime", *COLLECTIONS)

BlockPath = tuple[str, ...]


# --- which blocks a manifest has, by kind ---------------------------------------------------


def _settings_blocks(app_path: BlockPath, app: Mapping[str, Any]) -> Iterator[BlockPath]:
    """`defaults` and each environment of an app, as paths."""
    if isinstance(app.get("defaults"), Mapping):
        yield (*app_path, "defaults")
    for name, block in (app.get("environments") or {}).items():
        if isinstance(block, Mapping):
            yield (*app_path, "environments", name)


def blocks(document: Mapping[str, Any]) -> dict[str, list[BlockPath]]:
    """Every removable block of the manifest, grouped by the kind of thing it manages."""
    found: dict[str, list[BlockPath]] = {}

    def add(kind: str, path: BlockPath) -> None:
        found.setdefault(kind, []).append(path)

    for slug, project in document["projects"].items():
        project_path: BlockPath = ("projects", slug)
        add("project", project_path)
        for field in ("name", "deleteProtection"):
            if field in project:
                add("project", (*project_path, field))
        if "apps" in project:
            add("apps", (*project_path, "apps"))
        for app_slug, app in (project.get("apps") or {}).items():
            app_path: BlockPath = (*project_path, "apps", app_slug)
            for field in ("name", "deleteProtection", "git", "oci"):
                if field in app:
                    add("app", (*app_path, field))
            for member in app.get("git") or {}:
                add("app", (*app_path, "git", member))
            if "defaults" in app:
                add("environments", (*app_path, "defaults"))
            if "environments" in app:
                add("environments", (*app_path, "environments"))
                for name in app["environments"]:
                    add("environments", (*app_path, "environments", name))
            for block_path in _settings_blocks(app_path, app):
                block = _at(document, block_path)
                for key in SETTINGS_BLOCKS:
                    if key in block:
                        add(key, (*block_path, key))
                for key in ("build", "runtime"):
                    for member in block.get(key) or {}:
                        add(key, (*block_path, key, member))
                for name, variable in (block.get("variables") or {}).items():
                    for member in ("kind", "description"):
                        if isinstance(variable, Mapping) and member in variable:
                            add("variables", (*block_path, "variables", name, member))
    return found


def _at(document: Mapping[str, Any], path: BlockPath) -> Any:
    node: Any = document
    for part in path:
        node = node[part]
    return node


def without(document: Mapping[str, Any], path: BlockPath) -> dict[str, Any]:
    removed = copy.deepcopy(dict(document))
    del _at(removed, path[:-1])[path[-1]]
    return removed


def shrinks_a_collection(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether some environment's collection is still present after the removal but holds
    less or other than before (another layer of `defaults` merging still lists it)."""
    for slug, project in after["projects"].items():
        for app_slug, app in (project.get("apps") or {}).items():
            old_app = before["projects"][slug]["apps"][app_slug]
            old, new = effective_environments(old_app), effective_environments(app)
            for name, block in new.items():
                for key in COLLECTIONS:
                    if key in block and block[key] != old.get(name, {}).get(key):
                        return True
    return False


# --- planning against a live state -----------------------------------------------------------


def destructive(plan: Plan) -> set[tuple[str, ...]]:
    """What the plan destroys: deletes, replaces, and items removed from lists."""
    found: set[tuple[str, ...]] = set()
    for change in plan.changes:
        if change.action in (Action.DELETE, Action.REPLACE):
            found.add((change.address, change.action.value))
        for edit in change.detail.edits if isinstance(change.detail, PolicyListDetail) else ():
            if edit.op == "remove" and edit.before is not None:
                found.add((change.address, "policy removed", repr(normalise_policy(edit.before))))
        for diff in change.diffs:
            if diff.path == "regions":
                for region in _names(diff.before) - _names(diff.after):
                    found.add((change.address, "region removed", region))
    return found


def _names(regions: Any) -> set[str]:
    if regions in (None, ABSENT):
        return set()
    return {str(region["name"]) for region in regions}


async def plan_all(scenario: Scenario, documents: list[dict[str, Any]]) -> list[Plan]:
    """The plans of `documents`, each against the live state the scenario seeds."""
    app = create_app(EmulatorConfig(dev_key=KEY))
    transport = httpx.ASGITransport(app=app)
    async with PlatformClient("http://local", KEY, transport=transport, parallelism=4) as client:
        for call in scenario.seed:
            await client.call(call.operation, call.body)
        plans = []
        with tempfile.TemporaryDirectory() as directory:
            for index, document in enumerate(documents):
                path = Path(directory) / f"manifest-{index}.yaml"
                path.write_text(yaml.dump(document, Dumper=yaml.CSafeDumper), encoding="utf-8")
                manifest = load_manifest([path])
                plans.append(await build_plan(manifest, client, PlanOptions()))
        return plans


@st.composite
def scenarios_with_prune(draw: Any) -> Scenario:
    """Scenarios whose prune settings are drawn anew: each flag on half of the time, so
    `prune.apps: true` (off by default) meets live apps the manifest does not list often."""
    scenario = draw(scenarios())
    scenario.manifest["prune"] = {
        kind: draw(st.booleans()) for kind in ("variables", "domains", "apps")
    }
    return scenario


KINDS = ("project", "apps", "app", "environments", "build", "runtime", *COLLECTIONS)


# A scenario seeds a whole workspace, so shrinking one takes minutes; the message names the
# removed block and what it adds, which is what a failure needs.
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(scenario=scenarios_with_prune(), data=st.data())
def test_removing_a_block_never_adds_a_destructive_change(
    scenario: Scenario, data: st.DataObject
) -> None:
    """One removal of each kind the manifest holds, all planned against one live state."""
    removals: list[tuple[BlockPath, dict[str, Any]]] = []
    for kind, candidates in sorted(blocks(scenario.manifest).items()):
        path = data.draw(st.sampled_from(candidates), label=f"removed {kind} block")
        smaller = without(scenario.manifest, path)
        if not shrinks_a_collection(scenario.manifest, smaller):
            removals.append((path, smaller))
    whole, *plans = asyncio.run(plan_all(scenario, [scenario.manifest, *(m for _, m in removals)]))
    for (path, _), removed in zip(removals, plans, strict=True):
        added = destructive(removed) - destructive(whole)
        assert not added, f"removing {'.'.join(path)} adds {sorted(added)}"


def test_every_kind_of_block_is_drawn() -> None:
    """The kinds above cover every block a generated manifest can hold."""
    manifest = {
        "version": 1,
        "projects": {
            "shop": {
                "name": "Shop",
                "deleteProtection": False,
                "apps": {
                    "web": {
                        "name": "Web",
                        "deleteProtection": False,
                        "git": {"repository": "acme/web", "defaultBranch": "main"},
                        "defaults": {"runtime": {"port": 80}},
                        "environments": {
                            environment: {
                                "build": {"rootDirectory": "."},
                                "runtime": {"vCpus": 1},
                                "regions": [{"name": "fra", "replicas": {"min": 1, "max": 1}}],
                                "variables": {"A": {"value": "1", "kind": "recoverable"}},
                                "domains": [f"{environment}.example.com"],
                                "policies": [],
                            }
                            for environment in ENVIRONMENTS
                        },
                    }
                },
            }
        },
    }
    assert set(blocks(manifest)) == set(KINDS)


def test_an_absent_apps_block_deletes_no_app_even_with_prune_apps() -> None:
    """The data loss this module guards against, as one example: a project written without
    `apps:` under `prune: {apps: true}` planned the deletion of every app it has."""
    seed = [
        SeedCall("projects.createProject", {"name": "Shop", "slug": "shop"}),
        SeedCall("apps.createApp", {"project": "shop", "name": "Web", "slug": "web", "git": {}}),
    ]
    document = {"version": 1, "prune": {"apps": True}, "projects": {"shop": {"name": "Shop"}}}
    emptied = {**document, "projects": {"shop": {"name": "Shop", "apps": {}}}}
    absent, empty = asyncio.run(
        plan_all(Scenario(manifest=document, seed=seed), [document, emptied])
    )
    assert destructive(absent) == set()
    # `apps: {}` is a present, empty collection: authoritative, so prune.apps deletes
    assert destructive(empty) == {("app.shop/web", "delete")}
