"""Slug renames of pinned projects and apps, end to end against the emulator.

Slugs are unique (projects in the workspace, apps in a project), so a rename into a slug
another object holds has to wait until that object leaves it: renamed away, or deleted by
`prune.apps`. Renames that form a cycle (a swap, a rotation) go through a temporary slug.
Every scenario runs in both manifest key orders, for apps and for projects, and checks that
apply never meets a 409, that the plan lists changes in the order apply makes them, that every
address appears once, and that the next plan is empty.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_apply_e2e import apply, assert_converged, plan, write_manifest
from tests.fixtures.cli import Seed

KINDS = ("app", "project")
ORDERS = ("forward", "reverse")
SLUG = re.compile(r"[a-z0-9-]{3,255}")

Entry = tuple[str, str | None]
"""One object of the manifest: its slug key and its pinned id (None: not pinned)."""


@dataclass
class Objects:
    """Projects, or the apps of project `shop`, seeded and read through the platform API."""

    kind: str
    seed: Seed
    emulator: Any

    def __post_init__(self) -> None:
        if self.kind == "app":
            self.seed.project("shop")

    def create(self, slug: str) -> str:
        if self.kind == "app":
            return self.seed.app("shop", slug, oci={"image": "ghcr.io/acme/img:1"})
        project_id = self.seed.project(slug)
        self.seed.app(project_id, "web", oci={"image": "ghcr.io/acme/img:1"})
        return project_id

    def live(self) -> dict[str, str]:
        """slug -> id of every live object."""
        if self.kind == "app":
            found = self.seed.call("apps.listApps", {"project": "shop"})
        else:
            found = self.seed.call("projects.listProjects", {})
        return {item["slug"]: item["id"] for item in found}

    def address(self, slug: str) -> str:
        return f"app.shop/{slug}" if self.kind == "app" else f"project.{slug}"

    def manifest(
        self, entries: Sequence[Entry], order: str, *, prune: bool = False, children: bool = True
    ) -> str:
        """The manifest listing `entries` in `order`; each object manages something under it
        (for a project: variables of its app `web`; for an app: every kind of environment
        child), so children of renamed objects are applied too."""
        listed = list(entries) if order == "forward" else list(reversed(entries))
        blocks = [self._entry(slug, pinned, children) for slug, pinned in listed]
        lines = ["version: 1", f"prune: {{apps: {str(prune).lower()}}}", "projects:"]
        if self.kind == "app":
            lines += ["  shop:", "    apps:", *(_indent(b, 6) for b in blocks)]
        else:
            lines += [_indent(b, 2) for b in blocks]
        return "\n".join(lines) + "\n"

    def _entry(self, slug: str, pinned: str | None, children: bool) -> str:
        lines = [f"{slug}:"]
        if pinned:
            lines.append(f"  id: {pinned}")
        lines.append(f"  name: N {slug}")
        if not children:
            return "\n".join(lines)
        if self.kind == "project":
            lines += [
                "  apps:",
                "    web:",
                "      environments:",
                f"        production: {{variables: {{OWNER: {slug}}}}}",
            ]
            return "\n".join(lines)
        lines += [
            "  environments:",
            "    production:",
            f"      runtime: {{port: {1000 + len(slug)}}}",
            f"      variables: {{OWNER: {slug}}}",
            f"      policies: [{{name: {slug}, enabled: true, logging: {{query: true}}}}]",
            f"      domains: [{slug}.shop.example.com]",
        ]
        return "\n".join(lines)


def _indent(block: str, width: int) -> str:
    return "\n".join(" " * width + line for line in block.splitlines())


@pytest.fixture(params=KINDS)
def objects(request: Any, seed: Seed, emulator: Any) -> Objects:
    return Objects(request.param, seed, emulator)


# --- running and checking ----------------------------------------------------------------------


def plan_of(emulator: Any, manifest: str, *args: str) -> dict[str, Any]:
    result = plan(emulator, "-f", manifest, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def conflicts(emulator: Any) -> list[str]:
    return [r["operation"] for r in emulator.requests() if r["status"] == 409]


def assert_one_change_per_address(planned: dict[str, Any]) -> None:
    addresses = Counter(c["address"] for c in planned["changes"])
    assert [a for a, n in addresses.items() if n > 1] == []
    summary = planned["summary"]
    actions = Counter(c["action"] for c in planned["changes"])
    assert summary["add"] == actions["create"] + actions["replace"]
    assert summary["change"] == actions["update"]
    assert summary["destroy"] == actions["delete"] + actions["replace"]


def finished_order(output: str, addresses: Sequence[str]) -> list[str]:
    """The order in which apply reported `addresses` done (one line per finished change)."""
    done = []
    for line in output.splitlines():
        address = line.split(": ", 1)[0]
        if address in addresses and address not in done:
            done.append(address)
    return done


def inside(address: str, parent: str) -> bool:
    """Whether `address` lives in the object at `parent` (`settings.shop/api/production` in
    `app.shop/api`)."""
    parts, parent_parts = address.split(".", 1)[1], parent.split(".", 1)[1]
    return parts.startswith(parent_parts + "/")


def waits_for(planned: dict[str, Any], address: str, other: str) -> bool:
    """Whether the change at `address` depends on `other`, directly or through others."""
    depends = {c["address"]: c["depends_on"] for c in planned["changes"]}
    pending, seen = list(depends[address]), set()
    while pending:
        current = pending.pop()
        if current == other:
            return True
        if current not in seen:
            seen.add(current)
            pending.extend(depends.get(current, ()))
    return False


def apply_converges(emulator: Any, manifest: str) -> str:
    """Apply `manifest`: no 409 on the way, and nothing left to do afterwards."""
    result = apply(emulator, "-f", manifest, "--auto-approve")
    assert result.exit_code == 0, result.output
    assert conflicts(emulator) == [], result.output
    assert_converged(emulator, [manifest])
    return result.output


def renamed_slugs(planned: dict[str, Any]) -> list[str]:
    """Every slug a call of the plan sends."""
    return [
        call["body"]["slug"]
        for change in planned["changes"]
        for call in change["calls"]
        if "slug" in call["body"]
    ]


# --- chains --------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_a_chain_of_renames_applies_in_either_key_order(
    objects: Objects, order: str, tmp_path: Path
) -> None:
    api, v2 = objects.create("api"), objects.create("api-v2")
    manifest = write_manifest(tmp_path, objects.manifest([("api-legacy", api), ("api", v2)], order))

    planned = plan_of(objects.emulator, manifest)
    output = apply_converges(objects.emulator, manifest)

    assert_one_change_per_address(planned)
    legacy, taker = objects.address("api-legacy"), objects.address("api")
    changes = {c["address"]: c for c in planned["changes"]}
    assert legacy in changes[taker]["depends_on"]
    assert any("'api'" in note and legacy in note for note in changes[taker]["notes"])
    listed = [c["address"] for c in planned["changes"] if c["address"] in (legacy, taker)]
    assert listed == [legacy, taker]
    assert finished_order(output, [legacy, taker]) == [legacy, taker]
    assert objects.live()["api-legacy"] == api and objects.live()["api"] == v2


@pytest.mark.parametrize("order", ORDERS)
def test_a_rename_and_a_create_in_the_slug_it_frees(
    objects: Objects, order: str, tmp_path: Path
) -> None:
    api = objects.create("api")
    manifest = write_manifest(tmp_path, objects.manifest([("api", None), ("api-old", api)], order))

    planned = plan_of(objects.emulator, manifest)
    output = apply_converges(objects.emulator, manifest)

    assert_one_change_per_address(planned)
    changes = {c["address"]: c for c in planned["changes"]}
    created, renamed = changes[objects.address("api")], changes[objects.address("api-old")]
    assert created["action"] == "create" and renamed["action_reason"] == "renamed"
    assert renamed["address"] in created["depends_on"]
    listed = [c["address"] for c in planned["changes"]]
    assert listed.index(renamed["address"]) < listed.index(created["address"])
    # what lives in the new object waits for its create, which waits for the rename
    children = [c for c in planned["changes"] if inside(c["address"], created["address"])]
    assert children and all(waits_for(planned, c["address"], created["address"]) for c in children)
    assert finished_order(output, [renamed["address"], created["address"]]) == [
        renamed["address"],
        created["address"],
    ]
    live = objects.live()
    assert live["api-old"] == api and live["api"] != api


# --- cycles --------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_a_swap_goes_through_a_temporary_slug(objects: Objects, order: str, tmp_path: Path) -> None:
    blue, green = objects.create("blue"), objects.create("green")
    entries = [("green", blue), ("blue", green)]
    manifest = write_manifest(tmp_path, objects.manifest(entries, order))

    planned = plan_of(objects.emulator, manifest)
    # the plan is the same whatever the key order
    other = "reverse" if order == "forward" else "forward"
    mirrored = write_manifest(tmp_path, objects.manifest(entries, other), "mirrored.yaml")
    assert renamed_slugs(plan_of(objects.emulator, mirrored)) == renamed_slugs(planned)
    apply_converges(objects.emulator, manifest)

    assert objects.live() == {"green": blue, "blue": green}
    assert_one_change_per_address(planned)
    changes = {c["address"]: c for c in planned["changes"]}
    first, second = objects.address("blue"), objects.address("green")
    # the cycle is broken at the first address: it moves out of the way, then into place
    breaker = [c["body"].get("slug") for c in changes[first]["calls"]]
    assert len(breaker) == 2 and breaker[1] == "blue"
    temporary = breaker[0]
    assert SLUG.fullmatch(temporary) and temporary not in ("blue", "green")
    assert any(temporary in note and "temporary" in note for note in changes[first]["notes"])
    assert [c["body"]["slug"] for c in changes[second]["calls"]] == ["green"]
    assert first in changes[second]["depends_on"] and second in changes[first]["depends_on"]
    listed = [c["address"] for c in planned["changes"] if c["address"] in (first, second)]
    assert listed == [first, second]


@pytest.mark.parametrize("order", ORDERS)
def test_a_rotation_of_three_goes_through_one_temporary_slug(
    objects: Objects, order: str, tmp_path: Path
) -> None:
    ids = {slug: objects.create(slug) for slug in ("red", "green", "blue")}
    entries = [("green", ids["red"]), ("blue", ids["green"]), ("red", ids["blue"])]
    manifest = write_manifest(tmp_path, objects.manifest(entries, order))

    planned = plan_of(objects.emulator, manifest)
    apply_converges(objects.emulator, manifest)

    assert_one_change_per_address(planned)
    sent = renamed_slugs(planned)
    assert len(sent) == 4  # three renames and one move out of the way
    temporary = [s for s in sent if s not in ids]
    assert len(temporary) == 1 and SLUG.fullmatch(temporary[0])
    live = objects.live()
    assert {slug: live[slug] for slug in ids} == {
        "green": ids["red"],
        "blue": ids["green"],
        "red": ids["blue"],
    }


def test_a_swap_that_stops_half_way_converges_on_the_next_apply(
    objects: Objects, tmp_path: Path
) -> None:
    blue, green = objects.create("blue"), objects.create("green")
    manifest = write_manifest(
        tmp_path, objects.manifest([("green", blue), ("blue", green)], "forward")
    )
    operation = "apps.updateApp" if objects.kind == "app" else "projects.updateProject"
    # the move out of the way goes through; the rename after it is refused once
    objects.emulator.set_faults([{"operation": operation, "after": 1, "times": 1, "status": 403}])

    first = apply(objects.emulator, "-f", manifest, "--auto-approve")

    assert first.exit_code == 1, first.output
    halfway = objects.live()
    # the cycle breaks at `blue`: `green` moved to its temporary slug, then stopped
    assert halfway["blue"] == blue and green in halfway.values() and "green" not in halfway
    objects.emulator.set_faults([])
    second = plan_of(objects.emulator, manifest)
    assert_one_change_per_address(second)
    assert len(renamed_slugs(second)) == 2  # no cycle left: two plain renames

    apply_converges(objects.emulator, manifest)

    assert objects.live() == {"green": blue, "blue": green}


# --- prune --------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ORDERS)
def test_a_rename_into_the_slug_of_a_pruned_app(
    seed: Seed, emulator: Any, order: str, tmp_path: Path
) -> None:
    objects = Objects("app", seed, emulator)
    old, v2 = objects.create("api"), objects.create("api-v2")
    objects.create("web")
    manifest = write_manifest(
        tmp_path, objects.manifest([("api", v2), ("web", None)], order, prune=True, children=False)
    )

    planned = plan_of(emulator, manifest)
    text = plan(emulator, "-f", manifest).output
    markdown = plan(emulator, "-f", manifest, "--format", "markdown").output
    output = apply_converges(emulator, manifest)

    assert_one_change_per_address(planned)
    changes = {c["address"]: c for c in planned["changes"] if c["kind"] == "app"}
    deleted = f"app.shop/{old}"
    assert set(changes) == {"app.shop/api", "app.shop/web", deleted}
    assert changes[deleted]["action"] == "delete" and changes[deleted]["before"]["slug"] == "api"
    assert changes["app.shop/api"]["depends_on"] == [deleted]
    assert planned["summary"] == {"add": 0, "blocked": 0, "change": 2, "destroy": 1}
    listed = [c["address"] for c in planned["changes"]]
    assert listed.index(deleted) < listed.index("app.shop/api")
    assert f"# {deleted} will be destroyed" in text
    for address in (deleted, "app.shop/api", "app.shop/web"):
        assert text.count(f"# {address} will be") == 1
    assert "Plan: 0 to add, 2 to change, 1 to destroy." in text
    assert "**Plan:** 0 to add, 2 to change, 1 to destroy." in markdown
    # the caution block lists the one app destroyed; each change is folded once
    markdown = html.unescape(markdown)
    assert f"> - <code>{deleted}</code>\n" in markdown
    for address in (deleted, "app.shop/api", "app.shop/web"):
        assert markdown.count(f" {address} will be") == 1
    assert "Resources: 0 added, 2 changed, 1 destroyed." in output
    assert finished_order(output, [deleted, "app.shop/api"]) == [deleted, "app.shop/api"]
    live = objects.live()
    assert live["api"] == v2 and old not in live.values()


def test_a_rename_into_a_slug_the_manifest_does_not_manage_is_flagged(
    objects: Objects, tmp_path: Path
) -> None:
    objects.create("api")  # not in the manifest (and prune.apps is off)
    v2 = objects.create("api-v2")
    manifest = write_manifest(tmp_path, objects.manifest([("api", v2)], "forward"))

    planned = plan_of(objects.emulator, manifest)

    assert_one_change_per_address(planned)
    warnings = [n["message"] for n in planned["notes"] if n["severity"] == "warning"]
    assert any("'api'" in m and "409" in m for m in warnings), planned["notes"]
    change = next(c for c in planned["changes"] if c["address"] == objects.address("api"))
    assert any("409" in note for note in change["notes"])


def test_a_rename_into_the_slug_of_a_protected_app_waits_for_its_deletion(
    seed: Seed, emulator: Any, tmp_path: Path
) -> None:
    objects = Objects("app", seed, emulator)
    seed.app("shop", "api", oci={"image": "ghcr.io/acme/img:1"}, delete_protection=True)
    v2 = objects.create("api-v2")
    protected = objects.live()["api"]
    manifest = write_manifest(
        tmp_path, objects.manifest([("api", v2)], "forward", prune=True, children=False)
    )

    planned = plan_of(emulator, manifest)
    result = apply(emulator, "-f", manifest, "--auto-approve")

    assert_one_change_per_address(planned)
    blocked = next(c for c in planned["changes"] if c["action"] == "blocked")
    assert blocked["address"] == f"app.shop/{protected}"
    renamed = next(c for c in planned["changes"] if c["address"] == "app.shop/api")
    assert renamed["depends_on"] == [blocked["address"]]
    assert any("delete protection" in note for note in renamed["notes"])
    # nothing is sent that would meet a 409: the rename is skipped, saying why
    assert result.exit_code == 1, result.output
    assert conflicts(emulator) == []
    assert f"app.shop/api: skipped (needs {blocked['address']}" in result.output
    assert objects.live() == {"api": protected, "api-v2": v2}


# --- targets and saved plans -------------------------------------------------------------


def chain(objects: Objects, tmp_path: Path) -> tuple[str, str, str]:
    """`api` renamed to `api-legacy` while `api-v2` takes `api`: (api's id, api-v2's id, file)."""
    api, v2 = objects.create("api"), objects.create("api-v2")
    entries = [("api", v2), ("api-legacy", api)]
    return api, v2, write_manifest(tmp_path, objects.manifest(entries, "forward"))


TARGETS = {
    "app": ("app.shop/api", "app.shop/api-legacy"),
    "project": ("project.api", "project.api-legacy"),
}


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_a_targeted_rename_brings_the_rename_that_frees_its_slug(
    kind: str, seed: Seed, emulator: Any, tmp_path: Path
) -> None:
    objects = Objects(kind, seed, emulator)
    api, v2, manifest = chain(objects, tmp_path)
    target, freeing = TARGETS[kind]

    planned = plan_of(emulator, manifest, "--target", target)
    result = apply(emulator, "-f", manifest, "--target", target, "--auto-approve")

    renames = [c["address"] for c in planned["changes"] if c["kind"] == kind]
    assert renames == [freeing, target]
    assert any(freeing in n["message"] for n in planned["notes"]), planned["notes"]
    assert result.exit_code == 0, result.output
    assert conflicts(emulator) == []
    assert objects.live() == {"api": v2, "api-legacy": api}


def test_a_saved_plan_of_a_swap_applies_as_planned(objects: Objects, tmp_path: Path) -> None:
    blue, green = objects.create("blue"), objects.create("green")
    manifest = write_manifest(
        tmp_path, objects.manifest([("green", blue), ("blue", green)], "reverse")
    )
    saved = tmp_path / "plan.json"
    planned = plan(objects.emulator, "-f", manifest, "--out", str(saved))
    assert planned.exit_code == 0, planned.output

    result = apply(objects.emulator, str(saved))

    assert result.exit_code == 0, result.output
    assert conflicts(objects.emulator) == []
    assert objects.live() == {"green": blue, "blue": green}
    assert_converged(objects.emulator, [manifest])
