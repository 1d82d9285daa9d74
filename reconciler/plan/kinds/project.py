"""Projects: `project.<slug>`. Create, update (name, delete protection, slug rename via a pinned id).

The workspace's other projects are never touched: the manifest's scope is the
projects it names. Reading is one `projects.getProject` by slug (or by the
pinned id, which is how a rename is detected), concurrently for every project the
targets reach; each project's apps are planned as soon as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from reconciler.address import Address, TreePath
from reconciler.errors import NotFound, PermissionDenied, ReconcilerError
from reconciler.json_types import JsonObject, JsonValue
from reconciler.manifest.model import UNSET, Manifest, Project, listed
from reconciler.plan.changes import Action, Call, Change, SentValue
from reconciler.plan.kinds.base import (
    Container,
    ContainerKind,
    Descend,
    Location,
    Planning,
    Reread,
    SlugScope,
    identity_diffs,
    lookup,
    make_call,
    require_fields,
    slug_changed,
    text_member,
    waits_for,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord, stable
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import PROJECT

READ_OPERATION = "projects.getProject"


@dataclass(frozen=True)
class LiveProject:
    """A project as `projects.getProject` answered it, parsed once where it is read: what the
    plan keys on, and the whole answer (`raw`), which keeps the members this reconciler does
    not know (`Planning.keep_unknown` reports them) and shows the project as it is."""

    id: str
    slug: str
    name: str | None
    delete_protection: bool
    raw: JsonObject


def parse_project(found: object) -> LiveProject:
    """`found` checked to name a project by id and slug (an `UnexpectedResponse` otherwise).
    A name of another type (which the client refuses already, platform/shapes.py) reads as
    none."""
    raw: JsonObject = require_fields(
        READ_OPERATION, found if isinstance(found, Mapping) else {}, "id", "slug"
    )
    return LiveProject(
        # str(): require_fields has checked that both are strings
        id=str(raw["id"]),
        slug=str(raw["slug"]),
        name=text_member(raw, "name"),
        delete_protection=bool(raw.get("deleteProtection")),
        raw=raw,
    )


def location(desired: Project) -> Location:
    """Where the planner reads `desired`: by its pinned id, else its slug."""
    return Location(desired.id or desired.slug, object_id=desired.id)


async def read_project(platform: Platform, desired: Project) -> LiveProject | None:
    """The live project (by pinned id, else slug), or None when there is none to update.

    A pinned id that does not exist is an error: creating a new project would get another id,
    and the manifest would never converge.
    """
    live = await KIND.read(platform, location(desired))
    if live is None and desired.id is not None:
        raise ReconcilerError(
            f"project {desired.slug!r} is pinned to id {desired.id}, which does not exist",
            hint=f"remove `id: {desired.id}` from {desired.pos or 'the manifest'} to create a "
            "new project, or pin the id of an existing one",
        )
    return live


async def slug_holder(platform: Platform, slug: str) -> LiveProject | None:
    """The project holding `slug` in the workspace, or None when it is free."""
    return await KIND.read(platform, Location(slug))


def slug_label(live: LiveProject, pinned: Mapping[str, str]) -> str:
    """How a note names the live project holding a slug (`pinned`: id -> manifest key)."""
    if live.id in pinned:
        return (
            f"project {live.slug}, which the manifest pins as {pinned[live.id]!r} (target it too)"
        )
    return f"project {live.slug}, which the manifest does not list"


def display(project: LiveProject) -> dict[str, JsonValue]:
    """The project as a change shows it: its members as the platform answered them."""
    raw = project.raw
    return {key: raw[key] for key in ("id", "slug", "name", "deleteProtection") if key in raw}


def plan_project(desired: Project, live: LiveProject | None) -> Change | None:
    """The change that makes the live project match `desired`, or None when it does."""
    if live is None:
        return _create(desired)
    return _update(desired, live)


def _create(desired: Project) -> Change:
    name = desired.name if desired.name is not UNSET else desired.slug
    after: dict[str, JsonValue] = {"slug": desired.slug, "name": name}
    calls = [make_call("projects.createProject", {"name": name, "slug": desired.slug})]
    if desired.delete_protection is True:
        after["deleteProtection"] = True
        # createProject cannot set protection: a second call right after it does.
        calls.append(
            make_call("projects.updateProject", {"project": desired.slug, "deleteProtection": True})
        )
    return Change(
        address=str(Address.of("project", desired.slug)),
        kind="project",
        action=Action.CREATE,
        before=None,
        after=after,
        calls=tuple(calls),
        position=desired.pos,
    )


def _update(desired: Project, live: LiveProject) -> Change | None:
    live_id = live.id
    body: dict[str, SentValue] = {"project": live_id}
    diffs = identity_diffs(desired, live, body)
    if not diffs:
        return None
    after = {**display(live), **{d.path: d.after for d in diffs}}
    renamed = "slug" in body
    return Change(
        address=str(Address.of("project", desired.slug)),
        kind="project",
        action=Action.UPDATE,
        before=display(live),
        after=after,
        diffs=tuple(diffs),
        calls=(make_call("projects.updateProject", body, object_id=live_id),),
        reason="renamed" if renamed else None,
        notes=(_rename_note(live.slug, desired.slug),) if renamed else (),
        position=desired.pos,
    )


def _rename_note(old: str, new: str) -> str:
    return (
        f"renamed from {old!r} through its pinned id; generated URLs of the project's apps "
        f"change to use {new!r} from their next deployment"
    )


@dataclass
class _Planned:
    """The manifest keys of the projects one plan has planned (a project renamed away is
    planned once, when a planned project needs its slug)."""

    keys: set[str] = field(default_factory=set)


async def _read_planned(planning: Planning, desired: Project) -> LiveProject | None:
    """The live project `desired` stands for (read and recorded), with the slugs it leaves
    and takes noted."""
    live = await read_project(planning.platform, desired)
    KIND.record(planning.record, location(desired), TreePath.of(desired.slug), live)
    return await _hold_slugs(planning, desired, live)


async def _hold_slugs(
    planning: Planning, desired: Project, live: LiveProject | None
) -> LiveProject | None:
    """Note who holds the slugs `desired` leaves and takes (plan/slug_moves.py), and
    return the live project it stands for: none when, unpinned, it found by its slug a
    project the manifest pins under another key (renamed away: this one is new)."""
    held = planning.slug_holders.setdefault(("project",), {})
    pinned = {p.id: p.slug for p in planning.manifest.projects if p.id}
    if live is not None:
        held[live.slug] = slug_label(live, pinned)
    if desired.id is None and live is not None and live.id in pinned:
        await _plan_renamed_away(planning, pinned[live.id])
        return None
    if live is not None and live.slug != desired.slug:
        try:
            holder = await _read_holder(planning, desired.slug)
        except PermissionDenied:
            return live  # a key that may not see the holder: apply finds out
        if holder is not None:
            held.setdefault(desired.slug, slug_label(holder, pinned))
            if holder.id in pinned:
                await _plan_renamed_away(planning, pinned[holder.id])
    return live


async def _read_holder(planning: Planning, slug: str) -> LiveProject | None:
    """The project holding `slug` (read and recorded), None when it is free."""
    holder = await slug_holder(planning.platform, slug)
    planning.record.read(READ_OPERATION, holder.id if holder else None)
    planning.record.slug_holder("project", slug, holder.id if holder else None)
    return holder


async def _plan_renamed_away(planning: Planning, key: str) -> None:
    """Plan the project's own change (not its apps) when it holds a slug a planned project
    takes and the manifest renames it: outside the targets, its rename is what frees the
    slug, and the planner's `--target` filter keeps it as a dependency, as it keeps an app's."""
    desired = planning.manifest.project(key)
    planned = planning.state(_Planned).keys
    if desired is None or key in planned:
        return
    planned.add(key)
    planning.add(plan_project(desired, await _read_planned(planning, desired)))


class ProjectKind(ContainerKind[LiveProject | None]):
    """`project.<slug>`: the top of the address tree."""

    name = "project"
    depth = 1
    container = True
    read_at = ReadAt.PROJECT
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> LiveProject | None:
        """The project with the id or slug `at.project`; None when there is none."""
        try:
            found = await platform.call(READ_OPERATION, at.body(), object_id=at.object_id)
        except NotFound:
            return None
        return parse_project(found)

    def record(
        self, record: LiveRecord, at: Location, label: TreePath, found: LiveProject | None
    ) -> None:
        record.read(READ_OPERATION, found.id if found else None)
        record.state[f"project {label}"] = stable(found.raw if found else None)
        if found is not None:
            record.labels[found.id] = TreePath.of(found.slug)

    async def plan_under(
        self, planning: Planning, parent: Container | None, descend: Descend
    ) -> None:
        in_scope = [p for p in planning.manifest.projects if planning.reads(p.slug)]
        planning.state(_Planned).keys.update(p.slug for p in in_scope)
        await asyncio.gather(*(self._plan_one(planning, p, descend) for p in in_scope))

    async def _plan_one(self, planning: Planning, desired: Project, descend: Descend) -> None:
        live = await _read_planned(planning, desired)
        if live is not None:
            planning.keep_unknown(str(Address.of("project", desired.slug)), live.raw, PROJECT)
        change = plan_project(desired, live)
        planning.add(change)
        environments = tuple(
            (TreePath.of(desired.slug, a.slug), e)
            for a in listed(desired.apps)
            for e in a.environments
            if planning.reads(desired.slug, a.slug, e.name)
        )
        await descend(
            Container(
                desired=desired,
                path=TreePath.of(desired.slug),
                at=Location(live.id if live else desired.slug),
                fresh=live is None,
                depends_on=waits_for(change, Action.CREATE),
                environments=environments,
            )
        )

    def listed_slugs(self, manifest: Manifest) -> Mapping[tuple[str, ...], Sequence[str]]:
        return {(): [p.slug for p in manifest.projects]}

    def slug_is_free(self, planning: Planning) -> Callable[[str], Awaitable[bool]] | None:
        async def is_free(slug: str) -> bool:
            try:
                return await _read_holder(planning, slug) is None
            except PermissionDenied:
                return False  # not known to be free

        return is_free

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
