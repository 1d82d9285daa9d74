"""Projects: `project.<slug>`. Create, update (name, delete protection, slug rename via a pinned id).

The workspace's other projects are never touched: the manifest's scope is the
projects it names. Reading is one `projects.getProject` by slug (or by the
pinned id, which is how a rename is detected).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.errors import NotFound, ReconcilerError
from reconciler.manifest.model import UNSET, Project
from reconciler.plan.changes import Action, Call, Change
from reconciler.plan.kinds.base import (
    Kind,
    Location,
    Reread,
    SlugScope,
    address,
    identity_diffs,
    lookup,
    make_call,
    require_fields,
    slug_changed,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord, stable
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.protocol import Platform

READ_OPERATION = "projects.getProject"


def location(desired: Project) -> Location:
    """Where the planner reads `desired`: by its pinned id, else its slug."""
    return Location(desired.id or desired.slug, object_id=desired.id)


async def read_project(platform: Platform, desired: Project) -> dict[str, Any] | None:
    """The live project (by pinned id, else slug), or None when there is none to update.

    A pinned id that does not exist is an error: creating a new project would get another id,
    and the manifest would never converge.
    """
    live: dict[str, Any] | None = await KIND.read(platform, location(desired))
    if live is None and desired.id is not None:
        raise ReconcilerError(
            f"project {desired.slug!r} is pinned to id {desired.id}, which does not exist",
            hint=f"remove `id: {desired.id}` from {desired.pos or 'the manifest'} to create a "
            "new project, or pin the id of an existing one",
        )
    return live


async def slug_holder(platform: Platform, slug: str) -> dict[str, Any] | None:
    """The project holding `slug` in the workspace, or None when it is free."""
    found: dict[str, Any] | None = await KIND.read(platform, Location(slug))
    return found


def slug_label(live: Mapping[str, Any], pinned: Mapping[str, str]) -> str:
    """How a note names the live project holding a slug (`pinned`: id -> manifest key)."""
    if live["id"] in pinned:
        return (
            f"project {live['slug']}, which the manifest pins as {pinned[live['id']]!r} "
            "(target it too)"
        )
    return f"project {live['slug']}, which the manifest does not list"


def display(project: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: project[key] for key in ("id", "slug", "name", "deleteProtection") if key in project
    }


def plan_project(desired: Project, live: Mapping[str, Any] | None) -> Change | None:
    """The change that makes the live project match `desired`, or None when it does."""
    if live is None:
        return _create(desired)
    return _update(desired, live)


def _create(desired: Project) -> Change:
    name = desired.name if desired.name is not UNSET else desired.slug
    after: dict[str, Any] = {"slug": desired.slug, "name": name}
    calls = [make_call("projects.createProject", {"name": name, "slug": desired.slug})]
    if desired.delete_protection is True:
        after["deleteProtection"] = True
        # createProject cannot set protection: a second call right after it does.
        calls.append(
            make_call("projects.updateProject", {"project": desired.slug, "deleteProtection": True})
        )
    return Change(
        address=address("project", desired.slug),
        kind="project",
        action=Action.CREATE,
        before=None,
        after=after,
        calls=tuple(calls),
        position=desired.pos,
    )


def _update(desired: Project, live: Mapping[str, Any]) -> Change | None:
    live_id = live["id"]
    body: dict[str, Any] = {"project": live_id}
    diffs = identity_diffs(desired, live, body)
    if not diffs:
        return None
    after = {**display(live), **{d.path: d.after for d in diffs}}
    renamed = "slug" in body
    return Change(
        address=address("project", desired.slug),
        kind="project",
        action=Action.UPDATE,
        before=display(live),
        after=after,
        diffs=tuple(diffs),
        calls=(make_call("projects.updateProject", body, object_id=live_id),),
        reason="renamed" if renamed else None,
        notes=(_rename_note(live.get("slug"), desired.slug),) if renamed else (),
        position=desired.pos,
    )


def _rename_note(old: Any, new: str) -> str:
    return (
        f"renamed from {old!r} through its pinned id; generated URLs of the project's apps "
        f"change to use {new!r} from their next deployment"
    )


class ProjectKind(Kind):
    """`project.<slug>`: the top of the address tree."""

    name = "project"
    depth = 1
    container = True
    read_at = ReadAt.PROJECT
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> dict[str, Any] | None:
        """The project with the id or slug `at.project`; None when there is none."""
        try:
            found = await platform.call(READ_OPERATION, at.body(), object_id=at.object_id)
        except NotFound:
            return None
        checked: dict[str, Any] = require_fields(READ_OPERATION, found, "id", "slug")
        return checked

    def record(self, record: LiveRecord, at: Location, label: str, found: Any) -> None:
        record.read(READ_OPERATION, found["id"] if found else None)
        record.state[f"project {label}"] = stable(found)
        if found is not None:
            record.labels[found["id"]] = f"project {found.get('slug', label)}"

    def slug_scope(self, change: Change) -> SlugScope | None:
        return ("project",)

    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        return None

    def reread(self, platform: Platform, call: Call) -> Reread | None:
        if not call.operation.creates:
            return None
        return lookup(platform, READ_OPERATION, {"project": call.body["slug"]}, ("id",))

    def rollout_reason(self, change: Change) -> str | None:
        # a project's slug is part of its apps' generated URLs
        return "project slug" if slug_changed(change) else None

    def configures_deployment(self) -> bool:
        return True


KIND = register(ProjectKind())
