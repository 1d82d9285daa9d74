"""Slug renames, property-based, for projects and for apps, against the in-process emulator.

For any set of live slugs and any mapping of the manifest onto them (objects pinned by `id:`
under another slug, so chains, swaps and rotations; objects kept under their slug; new objects
in the slugs others leave; apps `prune.apps` deletes, whose slug a rename may take), in any key
order:

- every address appears once in the plan, and its summary counts its changes;
- applying it (as a saved plan would be: through its JSON) never meets a 409 and completes;
- when one write of the apply is refused half-way, the next apply still meets no 409 and
  completes (a cycle may stop with an object parked on its temporary slug);
- the next plan is empty, and every object has the slug the manifest gives it.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.apply import ApplyOptions, ApplyResult, execute
from reconciler.emulator.app import Emulator, create_app
from reconciler.manifest.validate import load_manifest
from reconciler.plan.changes import Plan
from reconciler.plan.json_form import plan_from_dict, plan_to_dict
from reconciler.plan.planner import PlanOptions, build_plan
from reconciler.platform.client import PlatformClient
from tests.fixtures.emulator import API_KEY, default_config

# temporary slugs are `<slug>-renaming`: live ones among them make the plan pick others
POOL = ("api", "web", "job", "api-renaming", "web-renaming")
KINDS = ("project", "app")
WRITES = {
    "project": ("projects.updateProject", "projects.createProject"),
    "app": ("apps.updateApp", "apps.createApp", "apps.deleteApp"),
}


@dataclass
class Scenario:
    kind: str
    live: list[str]  # the slugs of the objects that exist, one object each
    pinned: dict[str, str] = field(default_factory=dict)  # live slug -> manifest key
    kept: list[str] = field(default_factory=list)  # live slugs listed as they are (unpinned)
    created: list[str] = field(default_factory=list)  # manifest keys of new objects
    order: list[str] = field(default_factory=list)  # the manifest's keys, in its order
    prune: bool = False
    fault: dict[str, Any] | None = None  # one write refused during the first apply

    def unlisted(self) -> list[str]:
        return [s for s in self.live if s not in self.pinned and s not in self.kept]


@st.composite
def scenarios(draw: Any, kind: str) -> Scenario:
    live = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=len(POOL), unique=True))
    roles = {slug: draw(st.sampled_from(["pinned", "kept", "unlisted"])) for slug in live}
    # a pruned app's slug may be taken; projects (never deleted) and apps without prune keep theirs
    prune = kind == "app" and draw(st.booleans())
    staying = [s for s in live if roles[s] == "kept" or (roles[s] == "unlisted" and not prune)]
    pinned_slugs = [s for s in live if roles[s] == "pinned"]
    free = [s for s in POOL if s not in staying]
    keys = draw(st.permutations(free))[: len(pinned_slugs)]
    pinned = dict(zip(pinned_slugs, keys, strict=True))
    open_slugs = [s for s in free if s not in keys and (s not in live or s in pinned)]
    created = draw(st.lists(st.sampled_from(open_slugs), unique=True)) if open_slugs else []
    kept = [s for s in live if roles[s] == "kept"]
    order = draw(st.permutations([*pinned.values(), *kept, *created]))
    fault = None
    if draw(st.booleans()):
        operation = draw(st.sampled_from(WRITES[kind]))
        fault = {
            "operation": operation,
            "after": draw(st.integers(0, 3)),
            "times": 1,
            "status": 403,
        }
    return Scenario(kind, live, pinned, kept, created, list(order), prune, fault)


class Workspace:
    """The emulator in-process, reached through the reconciler's own client."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        app = create_app(default_config())
        self.emulator: Emulator = app.state.emulator
        transport = httpx.ASGITransport(app=app)
        self.client = PlatformClient("http://local", API_KEY, transport=transport)

    async def create(self, slug: str) -> str:
        if self.kind == "project":
            return str(
                (await self.client.call("projects.createProject", {"name": slug, "slug": slug}))[
                    "id"
                ]
            )
        body = {"project": "shop", "name": slug, "slug": slug, "oci": {"image": "ghcr.io/a/b:1"}}
        return str((await self.client.call("apps.createApp", body))["appId"])

    async def slugs(self) -> dict[str, str]:
        """slug -> id of every live object."""
        if self.kind == "project":
            found = await self.client.list_all("projects.listProjects", {})
        else:
            found = await self.client.list_all("apps.listApps", {"project": "shop"})
        return {item["slug"]: item["id"] for item in found}

    def conflicts(self) -> list[dict[str, Any]]:
        return [r for r in self.emulator.requests if r["status"] == 409]


def manifest_text(scenario: Scenario, ids: dict[str, str]) -> str:
    pin_of = {key: ids[slug] for slug, key in scenario.pinned.items()}
    entries = []
    for key in scenario.order:
        entry = {"name": f"N {key}"}
        if key in pin_of:
            entry = {"id": pin_of[key], **entry}
        if scenario.kind == "app":
            entry["environments"] = {"production": {"variables": {"OWNER": key}}}
        entries.append((key, entry))
    projects = dict(entries) if scenario.kind == "project" else {"shop": {"apps": dict(entries)}}
    document = {"version": 1, "prune": {"apps": scenario.prune}, "projects": projects}
    return json.dumps(document)  # JSON is YAML


def assert_honest(plan: Plan) -> None:
    addresses = Counter(c.address for c in plan.changes)
    assert [a for a, n in addresses.items() if n > 1] == []
    summary = plan_to_dict(plan)["summary"]
    assert (summary["add"], summary["change"], summary["destroy"]) == plan.counts()


async def plan_of(workspace: Workspace, path: Path, targets: tuple[str, ...] = ()) -> Plan:
    manifest = load_manifest([path])
    options = PlanOptions(max_deletes=100, targets=targets)
    return await build_plan(manifest, workspace.client, options)


async def apply_saved(workspace: Workspace, plan: Plan) -> ApplyResult:
    """Apply `plan` the way `apply PLANFILE` does: from its JSON."""
    saved = plan_from_dict(json.loads(json.dumps(plan_to_dict(plan))))
    return await execute(saved, workspace.client, resolve=lambda ref: "", options=ApplyOptions())


async def run(scenario: Scenario, path: Path) -> None:
    workspace = Workspace(scenario.kind)
    if scenario.kind == "app":
        await workspace.client.call("projects.createProject", {"name": "shop", "slug": "shop"})
    ids = {slug: await workspace.create(slug) for slug in scenario.live}
    path.write_text(manifest_text(scenario, ids), encoding="utf-8")
    workspace.emulator.requests.clear()

    first = await plan_of(workspace, path)
    assert_honest(first)
    if scenario.fault is not None:
        workspace.emulator.set_faults({"rules": [scenario.fault]})
        await apply_saved(workspace, first)
        workspace.emulator.set_faults({"rules": []})
        first = await plan_of(workspace, path)
        assert_honest(first)
    result = await apply_saved(workspace, first)
    assert result.complete, [(r.change.address, r.outcome, r.error) for r in result.results]
    assert workspace.conflicts() == []

    again = await plan_of(workspace, path)
    assert not again.live_differs, [c.address for c in again.changes]
    live = await workspace.slugs()
    for slug, key in scenario.pinned.items():
        assert live[key] == ids[slug]
    for key in scenario.created:
        assert key in live and live[key] not in ids.values()
    for slug in scenario.kept:
        assert live[slug] == ids[slug]
    for slug in scenario.unlisted():
        assert (ids[slug] in live.values()) == (not scenario.prune)
    await workspace.client.aclose()


PROPERTY = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY
@given(data=st.data())
def test_renames_in_any_order_converge_without_a_conflict(
    kind: str, data: st.DataObject, tmp_path: Path
) -> None:
    scenario = data.draw(scenarios(kind))
    asyncio.run(run(scenario, tmp_path / "platform.yaml"))


async def run_targeted(scenario: Scenario, path: Path, key: str) -> None:
    """A plan targeted at one object of the manifest first (its rename may need others'
    renames or deletes, which the plan includes), then the rest."""
    workspace = Workspace(scenario.kind)
    if scenario.kind == "app":
        await workspace.client.call("projects.createProject", {"name": "shop", "slug": "shop"})
    ids = {slug: await workspace.create(slug) for slug in scenario.live}
    path.write_text(manifest_text(scenario, ids), encoding="utf-8")
    workspace.emulator.requests.clear()

    target = f"project.{key}" if scenario.kind == "project" else f"app.shop/{key}"
    targeted = await plan_of(workspace, path, (target,))
    assert_honest(targeted)
    result = await apply_saved(workspace, targeted)
    assert result.complete, [(r.change.address, r.outcome, r.error) for r in result.results]
    live = await workspace.slugs()
    slug_of = {key: slug for slug, key in scenario.pinned.items()}
    if key in slug_of:
        assert live.get(key) == ids[slug_of[key]], f"{target} was not renamed"
    rest = await plan_of(workspace, path)
    assert_honest(rest)
    assert (await apply_saved(workspace, rest)).complete
    assert workspace.conflicts() == []
    assert not (await plan_of(workspace, path)).live_differs
    await workspace.client.aclose()


@pytest.mark.parametrize("kind", KINDS)
@PROPERTY
@given(data=st.data())
def test_a_rename_targeted_alone_converges_without_a_conflict(
    kind: str, data: st.DataObject, tmp_path: Path
) -> None:
    scenario = data.draw(scenarios(kind).filter(lambda s: bool(s.order)))
    scenario.fault = None
    key = data.draw(st.sampled_from(scenario.order), label="target")
    asyncio.run(run_targeted(scenario, tmp_path / "platform.yaml", key))


TARGETED_EXAMPLES = {
    "swap, one side targeted": (["web", "api"], {"web": "api", "api": "web"}, [], "api"),
    "chain, its head targeted": (["web", "api"], {"web": "api", "api": "job"}, [], "api"),
    "create in a slug a rename frees": (["web"], {"web": "api"}, ["web"], "web"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("live", "pinned", "created", "key"), TARGETED_EXAMPLES.values(), ids=TARGETED_EXAMPLES.keys()
)
def test_a_targeted_rename_or_create_includes_the_rename_that_frees_its_slug(
    kind: str,
    live: list[str],
    pinned: dict[str, str],
    created: list[str],
    key: str,
    tmp_path: Path,
) -> None:
    """Found by the property above: a project targeted alone took a slug that a project outside
    the targets leaves (the manifest renames it), without that rename: a 409 at apply."""
    order = [*pinned.values(), *created]
    scenario = Scenario(kind, live, pinned, created=created, order=order)
    asyncio.run(run_targeted(scenario, tmp_path / "platform.yaml", key))


def test_the_generator_makes_chains_cycles_creates_and_prunes() -> None:
    """Guard against a generator that never yields the interesting cases."""
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, derandomize=True)
    @given(scenario=scenarios("app"))
    def collect(scenario: Scenario) -> None:
        moves = dict(scenario.pinned)
        for slug, key in moves.items():
            if key in moves and key != slug:
                seen.add("chain")
            walk, current = set(), slug
            while current in moves and current not in walk:
                walk.add(current)
                current = moves[current]
            if current == slug and len(walk) > 1:
                seen.add(f"cycle of {len(walk)}")
        if any(key in scenario.unlisted() for key in moves.values()):
            seen.add("rename into a pruned slug")
        if any(key in moves for key in scenario.created):
            seen.add("create in a freed slug")

    collect()
    assert {"chain", "cycle of 2", "cycle of 3", "rename into a pruned slug"} <= seen
    assert "create in a freed slug" in seen
