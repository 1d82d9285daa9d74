"""Apps: `app.<project>/<app>`. Create, update, replace (git <-> image), delete (prune.apps).

One `apps.listApps` per managed project reads every app at once, so the plan
knows both the apps the manifest names and the ones it does not (unmanaged:
noted, or deleted with `prune.apps`). The platform cannot change an app's
source between a repository and an image, so that change is a replace: the
app is deleted with its deployments, domains and variables and created again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.address import Address, TreePath
from reconciler.errors import ReconcilerError
from reconciler.json_types import JsonObject, JsonValue
from reconciler.manifest.model import (
    ENVIRONMENT_NAMES,
    UNSET,
    App,
    Clearable,
    Environment,
    GitSource,
    Manifest,
    OciSource,
    Project,
    is_set,
    listed,
)
from reconciler.plan.changes import ABSENT, Action, Call, Change, FieldDiff, Note, SentValue
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
    text_member,
    waits_for,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord, stable_listing
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import APP

READ_OPERATION = "apps.listApps"

REASON_SOURCE_CHANGED = "source_type_changed"
REASON_PROTECTED = "delete_protected"

SourceType = Literal["git", "oci"]


@dataclass(frozen=True)
class LiveApp:
    """An app as `apps.listApps` answered it, parsed once where it is read: what the plan keys
    on and compares (its source in the manifest's model: `git`, `oci`), and the whole answer
    (`raw`), which keeps the members this reconciler does not know (`Planning.keep_unknown`
    reports them) and shows the app as it is."""

    id: str
    slug: str
    name: str | None
    source_type: SourceType | None
    """`sourceType`, or for the few old apps without it, what their members show."""
    git: GitSource | None
    """The connected repository; None when there is none (no `git`, null or empty)."""
    oci: OciSource | None
    """The image; None when there is none."""
    delete_protection: bool
    rolled_back: bool
    """Its production is rolled back (`isRolledBack`)."""
    raw: JsonObject


def parse_apps(found: object) -> list[LiveApp]:
    """`found` checked to be apps named by id and slug (an `UnexpectedResponse` otherwise).
    A documented member of another type (which the client refuses already,
    platform/shapes.py) reads as absent."""
    listed_apps = found if isinstance(found, list) else [found]
    checked = require_fields(
        READ_OPERATION, [a if isinstance(a, Mapping) else {} for a in listed_apps], "id", "slug"
    )
    return [_parse_app(raw) for raw in checked]


def _parse_app(raw: JsonObject) -> LiveApp:
    git, oci = raw.get("git"), raw.get("oci")
    image = oci.get("image") if isinstance(oci, Mapping) else None
    return LiveApp(
        # str(): require_fields has checked that both are strings
        id=str(raw["id"]),
        slug=str(raw["slug"]),
        name=text_member(raw, "name"),
        source_type=_source_type(raw),
        git=_git_source(git) if git and isinstance(git, Mapping) else None,
        oci=OciSource(image) if isinstance(image, str) else None,
        delete_protection=bool(raw.get("deleteProtection")),
        rolled_back=raw.get("isRolledBack") is True,
        raw=raw,
    )


def _source_type(raw: JsonObject) -> SourceType | None:
    declared = raw.get("sourceType")
    if declared == "git" or declared == "oci":
        return declared
    if "oci" in raw:
        return "oci"
    if "git" in raw:
        return "git"
    return None


def _git_source(git: JsonObject) -> GitSource:
    repository, branch = git.get("repository"), git.get("defaultBranch")
    return GitSource(
        repository=repository if isinstance(repository, str) else UNSET,
        default_branch=branch if isinstance(branch, str) else UNSET,
    )


class LiveApps:
    """The apps of a live project by id and by slug, so finding each app of the manifest
    among them is one lookup, not a scan (a project may have thousands)."""

    def __init__(self, live_apps: Sequence[LiveApp]) -> None:
        # reversed: where two apps share a key, the first listed wins, as a scan would find it
        self.by_id = {a.id: a for a in reversed(live_apps)}
        self.by_slug = {a.slug: a for a in reversed(live_apps)}


def find_live_app(
    project_slug: str,
    desired: App,
    live_apps: LiveApps,
    pinned: Collection[str] = (),
) -> LiveApp | None:
    """The live app `desired` stands for: by pinned id, else by slug. A missing pinned id is
    an error (a new app would get another id and never converge).

    An app the manifest pins (`pinned`: the ids pinned in its project) is never matched by
    slug: when it is renamed away, an unpinned entry with its old slug is a new app.
    """
    found = match_live_app(desired, live_apps, pinned)
    if found is None and desired.id is not None:
        raise ReconcilerError(
            f"app {TreePath.of(project_slug, desired.slug)} is pinned to id {desired.id}, "
            f"which is not an app of project {project_slug!r}",
            hint=f"remove `id: {desired.id}` from {desired.pos or 'the manifest'} to create a "
            "new app, or pin the id of an existing one",
        )
    return found


def match_live_app(
    desired: App, live_apps: LiveApps, pinned: Collection[str] = ()
) -> LiveApp | None:
    """The live app `desired` stands for, None when there is none (`find_live_app`'s rule,
    which `reconciler status` shares)."""
    if desired.id is not None:
        return live_apps.by_id.get(desired.id)
    found = live_apps.by_slug.get(desired.slug)
    return None if found is None or found.id in pinned else found


def desired_source_type(desired: App) -> SourceType | None:
    if isinstance(desired.oci, OciSource):
        return "oci"
    if isinstance(desired.git, GitSource):
        return "git"
    return None


def needs_replace(desired: App, live: LiveApp) -> bool:
    wanted, current = desired_source_type(desired), live.source_type
    return wanted is not None and current is not None and wanted != current


def display(live: LiveApp) -> dict[str, JsonValue]:
    """The app as a change shows it: its members as the platform answered them."""
    keys = ("id", "slug", "name", "sourceType", "git", "oci", "deleteProtection")
    return {key: live.raw[key] for key in keys if key in live.raw}


def desired_display(desired: App) -> dict[str, JsonValue]:
    shown: dict[str, JsonValue] = {"slug": desired.slug, "name": _name(desired)}
    source = desired_source_type(desired)
    if source is not None:
        shown["sourceType"] = source
    if isinstance(desired.git, GitSource) and _git_members(desired.git):
        shown["git"] = _git_members(desired.git)
    if isinstance(desired.oci, OciSource):
        shown["oci"] = {"image": desired.oci.image}
    if desired.delete_protection is not UNSET:
        shown["deleteProtection"] = desired.delete_protection
    return shown


def plan_app(
    project_slug: str,
    project_ref: str,
    project_id: str | None,
    desired: App,
    live: LiveApp | None,
    *,
    allow_replace: bool,
) -> Change | None:
    """The change for one app of the manifest, or None when it matches.

    `project_ref` is how calls name the project (its id when known, else its slug).
    """
    if live is None:
        return _create(project_slug, project_ref, project_id, desired)
    if needs_replace(desired, live):
        return _replace(project_slug, project_ref, project_id, desired, live, allow_replace)
    return _update(project_slug, project_ref, desired, live)


def plan_app_delete(
    project_slug: str, project_ref: str, live: LiveApp, *, slug_wanted: bool = False
) -> Change:
    """Delete an app the manifest no longer lists (only with prune.apps).

    `slug_wanted`: the manifest gives its slug to another app (renamed into it through a pinned
    id), whose change has the address `app.<project>/<slug>`; this one is addressed by its id so
    that every address of the plan stays one change.
    """
    slug = live.slug
    where = str(Address.of("app", project_slug, live.id if slug_wanted else slug))
    took = (
        (f"addressed by its id: its slug {slug!r} goes to the app the manifest calls {slug!r}",)
        if slug_wanted
        else ()
    )
    if live.delete_protection:
        return Change(
            address=where,
            kind="app",
            action=Action.BLOCKED,
            before=display(live),
            after=None,
            reason=REASON_PROTECTED,
            notes=(
                "delete protection is on, so prune.apps cannot delete it: to delete it, list "
                "it in the manifest with `deleteProtection: false`, apply, then remove it "
                "(or leave prune.apps off to keep it unmanaged)",
                *took,
            ),
        )
    return Change(
        address=where,
        kind="app",
        action=Action.DELETE,
        before=display(live),
        after=None,
        calls=(
            make_call(
                "apps.deleteApp", {"project": project_ref, "app": live.id}, object_id=live.id
            ),
        ),
        reason="pruned",
        notes=("not in the manifest and prune.apps is on: deleted with its deployments, "
               "domains and variables", *took),
    )  # fmt: skip


def _name(desired: App) -> str:
    return desired.name if desired.name is not UNSET else desired.slug


def _git_members(git: GitSource) -> dict[str, str]:
    members: dict[str, str] = {}
    if git.repository is not UNSET:
        members["repository"] = git.repository
    if git.default_branch is not UNSET:
        members["defaultBranch"] = git.default_branch
    return members


def _create_calls(project_ref: str, project_id: str | None, desired: App) -> list[Call]:
    body: dict[str, JsonValue] = {
        "project": project_ref,
        "name": _name(desired),
        "slug": desired.slug,
    }
    if isinstance(desired.oci, OciSource):
        body["oci"] = {"image": desired.oci.image}
    else:
        # No source, or `git: null`: an empty git object connects a repository later.
        body["git"] = _git_members(desired.git) if isinstance(desired.git, GitSource) else {}
    calls = [make_call("apps.createApp", body, object_id=project_id)]
    if desired.delete_protection is True:
        # createApp cannot set protection: a second call right after it does.
        calls.append(
            make_call(
                "apps.updateApp",
                {"project": project_ref, "app": desired.slug, "deleteProtection": True},
            )
        )
    return calls


def _create(project_slug: str, project_ref: str, project_id: str | None, desired: App) -> Change:
    return Change(
        address=str(Address.of("app", project_slug, desired.slug)),
        kind="app",
        action=Action.CREATE,
        before=None,
        after=desired_display(desired),
        calls=tuple(_create_calls(project_ref, project_id, desired)),
        position=desired.pos,
    )


def _replace(
    project_slug: str,
    project_ref: str,
    project_id: str | None,
    desired: App,
    live: LiveApp,
    allow_replace: bool,
) -> Change:
    where = str(Address.of("app", project_slug, desired.slug))
    before, after = display(live), desired_display(desired)
    source_diff = FieldDiff("sourceType", live.source_type, desired_source_type(desired))
    why = (
        f"the source changes from {source_diff.before} to {source_diff.after}, which the "
        "platform cannot change in place: the app is deleted with its deployments, domains "
        "and variables, and created again with everything the manifest sets"
    )
    protected = live.delete_protection
    if protected and desired.delete_protection is not False:
        return Change(
            address=where,
            kind="app",
            action=Action.BLOCKED,
            before=before,
            after=after,
            diffs=(source_diff,),
            reason=REASON_PROTECTED,
            notes=(
                f"must be replaced ({why}), but delete protection is on: set "
                f"`deleteProtection: false` on this app, apply, then change its source",
            ),
            position=desired.pos,
        )
    app_id = live.id
    calls = []
    if protected:
        # The manifest turns protection off: that has to happen before the delete.
        calls.append(
            make_call(
                "apps.updateApp",
                {"project": project_ref, "app": app_id, "deleteProtection": False},
                object_id=app_id,
            )
        )
    calls.append(
        make_call("apps.deleteApp", {"project": project_ref, "app": app_id}, object_id=app_id)
    )
    calls.extend(_create_calls(project_ref, project_id, desired))
    notes = [why]
    if not allow_replace:
        notes.append("apply refuses a replace unless run with --allow-replace")
    return Change(
        address=where,
        kind="app",
        action=Action.REPLACE,
        before=before,
        after=after,
        diffs=(source_diff,),
        calls=tuple(calls),
        reason=REASON_SOURCE_CHANGED,
        notes=tuple(notes),
        position=desired.pos,
    )


def _update(project_slug: str, project_ref: str, desired: App, live: LiveApp) -> Change | None:
    app_id = live.id
    body: dict[str, SentValue] = {"project": project_ref, "app": app_id}
    diffs = identity_diffs(desired, live, body)
    git_diffs, git_body = _git_update(desired, live)
    diffs.extend(git_diffs)
    if git_body is not UNSET:
        body["git"] = git_body
    if isinstance(desired.oci, OciSource):
        live_image = live.oci.image if live.oci is not None else ABSENT
        if live_image != desired.oci.image:
            diffs.append(FieldDiff("oci.image", live_image, desired.oci.image))
            body["oci"] = {"image": desired.oci.image}
    if not diffs:
        return None
    renamed = "slug" in body
    return Change(
        address=str(Address.of("app", project_slug, desired.slug)),
        kind="app",
        action=Action.UPDATE,
        before=display(live),
        after={**display(live), **desired_display(desired)},
        diffs=tuple(diffs),
        calls=(make_call("apps.updateApp", body, object_id=app_id),),
        reason="renamed" if renamed else None,
        notes=(f"renamed from {live.slug!r} through its pinned id",) if renamed else (),
        position=desired.pos,
    )


def _git_update(desired: App, live: LiveApp) -> tuple[list[FieldDiff], Clearable[JsonObject]]:
    """Field diffs and the `git` member of updateApp (UNSET: nothing to send)."""
    if desired.git is None:
        if live.git is not None:
            return [FieldDiff("git", live.raw["git"], None)], None
        return [], UNSET
    if not isinstance(desired.git, GitSource):
        return [], UNSET
    wanted = _git_members(desired.git)
    if live.git is None:
        if not wanted:
            return [], UNSET
        return [FieldDiff("git", ABSENT, wanted)], wanted
    live_members = _git_members(live.git)
    diffs, send = [], {}
    for member, value in wanted.items():
        current = live_members.get(member, ABSENT)
        if current != value:
            diffs.append(FieldDiff(f"git.{member}", current, value))
            send[member] = value
    return diffs, (send if send else UNSET)


def _image_changed(change: Change) -> bool:
    if change.action in (Action.CREATE, Action.REPLACE):
        return bool(change.after and change.after.get("oci"))
    return any(d.path == "oci" or d.path.startswith("oci.") for d in change.diffs)


def _unmanaged(
    planning: Planning,
    project: Container,
    live_app: LiveApp,
    desired_slugs: Collection[str],
) -> None:
    """A live app of `project` the manifest does not list: deleted with prune.apps, else noted."""
    project_slug = project.path.leaf
    slug = live_app.slug
    if planning.prune.apps:
        wanted = slug in desired_slugs
        change = plan_app_delete(project_slug, project.at.project, live_app, slug_wanted=wanted)
        if change.action is Action.DELETE:
            planning.going_away[live_app.id] = change.address
        planning.add(change)
        return
    where = project.path.child(slug)
    planning.note(
        Note(
            "info",
            f"app {where} is not in the manifest and is left alone "
            "(unmanaged); list it to manage it, or set prune.apps: true to delete it",
            str(Address("app", where)),
            subjects=(str(where),),
            group="{count} apps are not in the manifest and are left alone (unmanaged): "
            "{subjects}; list them to manage them, or set prune.apps: true to delete them",
        )
    )


class AppKind(ContainerKind[list[LiveApp]]):
    """`app.<project>/<app>`: read with every other app of its project, in one listing."""

    name = "app"
    depth = 2
    container = True
    read_at = ReadAt.PROJECT
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> list[LiveApp]:
        """Every app of the project at `at` (paged to the end)."""
        return parse_apps(await platform.list_all(READ_OPERATION, at.body()))

    def record(
        self, record: LiveRecord, at: Location, label: TreePath, found: list[LiveApp]
    ) -> None:
        record.read(READ_OPERATION)
        record.state[f"apps {label}"] = stable_listing((a.raw for a in found), "id")
        for app in found:
            record.labels[app.id] = label.child(app.slug)
            if app.rolled_back:
                record.rolled_back.add(label.child(app.slug))

    async def plan_under(
        self, planning: Planning, parent: Container | None, descend: Descend
    ) -> None:
        assert parent is not None and isinstance(parent.desired, Project)
        project = parent.desired
        if parent.fresh:
            await asyncio.gather(
                *(
                    self._plan_one(planning, parent, a, None, descend)
                    for a in listed(project.apps)
                    if planning.reads(project.slug, a.slug)
                )
            )
            return
        if not is_set(project.apps):
            return  # no `apps:` block: the project's apps are unmanaged, none is read or pruned
        live_apps = await self.read(planning.platform, parent.at)
        self.record(planning.record, parent.at, parent.path, live_apps)
        pinned = {a.id for a in listed(project.apps) if a.id}
        indexed = LiveApps(live_apps)
        matched = {
            a.slug: find_live_app(project.slug, a, indexed, pinned) for a in listed(project.apps)
        }
        planning.slug_holders[(self.name, *parent.path.slugs)] = {
            a.slug: f"app {parent.path.child(a.slug)}, which the manifest does not list"
            for a in live_apps
        }
        # every app's own change is planned (from listApps, no more reads): a targeted rename
        # may need another app's rename or delete first (the `--target` filter keeps it)
        await asyncio.gather(
            *(
                self._plan_one(planning, parent, a, matched[a.slug], descend)
                for a in listed(project.apps)
            )
        )
        claimed = {a.id for a in matched.values() if a is not None}
        for live_app in live_apps:
            if live_app.id not in claimed:
                _unmanaged(planning, parent, live_app, desired_slugs=matched.keys())

    async def _plan_one(
        self,
        planning: Planning,
        project: Container,
        desired: App,
        live: LiveApp | None,
        descend: Descend,
    ) -> None:
        project_ref = project.at.project
        change = plan_app(
            project.path.leaf,
            project_ref,
            None if project.fresh else project_ref,
            desired,
            live,
            allow_replace=planning.options.allow_replace,
        )
        planning.add(change, project.depends_on)
        path = project.path.child(desired.slug)
        if live is not None:
            planning.keep_unknown(str(Address(self.name, path)), live.raw, APP)
        replaced = change is not None and change.action is Action.REPLACE
        if change is not None and replaced and live is not None:
            planning.going_away[live.id] = change.address
        fresh = live is None or replaced
        environments = tuple(
            (path, e)
            for e in sorted(desired.environments, key=lambda e: ENVIRONMENT_NAMES.index(e.name))
            if planning.reads(*path.slugs, e.name)
        )
        await descend(
            Container(
                desired=desired,
                path=path,
                at=Location(
                    project_ref, live.id if live is not None and not fresh else desired.slug
                ),
                fresh=fresh,
                depends_on=waits_for(change, Action.CREATE, Action.REPLACE) or project.depends_on,
                environments=environments,
            )
        )

    def listed_slugs(self, manifest: Manifest) -> Mapping[tuple[str, ...], Sequence[str]]:
        return {(p.slug,): [a.slug for a in listed(p.apps)] for p in manifest.projects}

    def listed_environments(
        self, manifest: Manifest
    ) -> Mapping[tuple[str, ...], Sequence[Environment]]:
        return {(p.slug, a.slug): a.environments for p in manifest.projects for a in listed(p.apps)}

    def slug_scope(self, change: Change) -> SlugScope | None:
        return ("app", Address.parse(change.address).parts[0])

    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        return None

    def reread(self, platform: Platform, call: Call) -> Reread | None:
        if not call.operation.creates:
            return None
        request = {"project": call.body["project"], "app": call.body["slug"]}
        return lookup(platform, "apps.getApp", request, ("appId",))

    def rollout_reason(self, change: Change) -> str | None:
        # an image app runs the new image only from its next deployment
        return "image" if _image_changed(change) else None

    def configures_deployment(self) -> bool:
        return True


KIND = register(AppKind())
