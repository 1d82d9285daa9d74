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
from reconciler.plan.changes import Action, Change
from reconciler.plan.kinds.base import address, identity_diffs, make_call, require_fields

READ_OPERATION = "projects.getProject"


async def read_project(client: Any, desired: Project) -> dict[str, Any] | None:
    """The live project (by pinned id, else slug), or None when there is none to update.

    A pinned id that does not exist is an error: creating a new project would get another id,
    and the manifest would never converge.
    """
    try:
        return await read_slug(client, desired.id or desired.slug, object_id=desired.id)
    except NotFound:
        if desired.id is None:
            return None
        raise ReconcilerError(
            f"project {desired.slug!r} is pinned to id {desired.id}, which does not exist",
            hint=f"remove `id: {desired.id}` from {desired.pos or 'the manifest'} to create a "
            "new project, or pin the id of an existing one",
        ) from None


async def read_slug(client: Any, reference: str, *, object_id: str | None = None) -> dict[str, Any]:
    """The project with this id or slug; raises NotFound when there is none."""
    found: dict[str, Any] = require_fields(
        READ_OPERATION,
        await client.call(READ_OPERATION, {"project": reference}, object_id=object_id),
        "id",
        "slug",
    )
    return found


async def slug_holder(client: Any, slug: str) -> dict[str, Any] | None:
    """The project holding `slug` in the workspace, or None when it is free."""
    try:
        return await read_slug(client, slug)
    except NotFound:
        return None


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
