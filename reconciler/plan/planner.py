"""Build a `Plan`: read live state, diff every resource kind, order and check the changes.

The planner walks the address tree: projects, their apps, their environments. Reading is
concurrent and pipelined per project: the project, then its apps, then for each app in
parallel only what the manifest manages: each environment-level kind of the registry
(`reconciler.plan.kinds`) is read per project, per app or per environment, as the kind says
(`read_at`). A kind read per project (domains) is read once for the project, the first time
one of its apps needs it, and each environment takes its share by the ID its app's listing
of environments gave; an environment without one, or alone in its project in managing that
kind, is read by itself. Objects that do not exist yet are not read at all. The client's semaphore bounds how many
requests are in flight; there is no barrier between projects, so a slow project never holds
up the others. Only after every read, each kind's `finish` plans what crosses environments
(the domains kind looks up the hosts no read environment holds: a host can be attached
anywhere in the workspace).

Every kind turns desired + live into `Change`s with their calls; this module adds what
crosses kinds: dependencies (an app's changes wait for
its project's create or rename, an environment's for its app's
create/rename/replace), `--target` filtering, the deletion threshold and
notes, the permission list, the digests and the metadata. Variables are the
exception to filtering here: their calls are shared batches, so the targets
are applied before the batches are formed (`variables.plan_variables`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reconciler import __version__
from reconciler.checks import capacity
from reconciler.collector import collector_paused
from reconciler.errors import PermissionDenied
from reconciler.manifest.model import (
    ENVIRONMENT_NAMES,
    App,
    Environment,
    Manifest,
    Project,
    Prune,
    is_set,
    listed,
)
from reconciler.plan import golive, kinds, slug_moves
from reconciler.plan.changes import Action, Change, Note, Plan, max_deletes_note
from reconciler.plan.kinds import app as apps
from reconciler.plan.kinds import project
from reconciler.plan.kinds.base import (
    EnvironmentJob,
    EnvironmentKind,
    Location,
    Planning,
    address_parts,
)
from reconciler.plan.live import LiveRecord, fingerprint_mode
from reconciler.plan.options import PlanOptions
from reconciler.plan.phases import ReadAt
from reconciler.plan.targets import Scope
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import APP, PROJECT, Shape, unknown_members, unknown_values

__all__ = ["PlanOptions", "build_plan", "manifest_digest"]


async def build_plan(manifest: Manifest, platform: Platform, options: PlanOptions) -> Plan:
    """Read live state through `platform` and compute the plan that converges it to `manifest`."""
    scope = Scope.parse(options.targets)
    with collector_paused():  # long-lived, acyclic objects: see reconciler/collector.py
        planner = _Planner(manifest, platform, options, scope)
        await planner.run()
        return planner.plan()


@dataclass
class _AppContext:
    """What the environment-level changes of one app need to know about it."""

    project: Project
    app: App
    project_ref: str
    app_ref: str
    fresh: bool  # created or replaced by this plan: nothing under it is read
    depends_on: tuple[str, ...]
    label: str  # shop/web
    project_reads: _ProjectReads | None = None  # None: the project is created by this plan


class _ProjectReads:
    """The reads of one project shared by its environments (kinds with `read_at == ReadAt.PROJECT`): the
    first environment that needs one starts it, the others await the same task."""

    def __init__(self, platform: Platform, at: Location, kinds: Collection[EnvironmentKind]):
        self.platform = platform
        self.at = at
        self.kinds = kinds
        self._reads: dict[EnvironmentKind, asyncio.Future[Any]] = {}

    async def read(self, kind: EnvironmentKind) -> Any:
        if kind not in self._reads:
            self._reads[kind] = asyncio.ensure_future(kind.read(self.platform, self.at))
        return await self._reads[kind]


class _Planner(Planning):
    """One plan being built: the tree walk over projects, apps and environments, with the
    environment-level kinds of the registry read and planned for each environment."""

    def __init__(
        self, manifest: Manifest, platform: Platform, options: PlanOptions, scope: Scope
    ) -> None:
        self.manifest = manifest
        self.platform = platform
        self.options = options
        self.scope = scope
        self.prune: Prune = manifest.prune
        self.record = LiveRecord()
        self.changes: list[Change] = []
        self.notes: list[Note] = []
        self.going_away: dict[str, str] = {}
        self.slug_holders: dict[slug_moves.Scope, dict[str, str]] = {}
        self.missing_sources: set[str] = set()
        self.compared_by_presence: list[str] = []
        self.declared_secrets: dict[str, str] = {}
        self.planned_projects: set[str] = set()
        self.collected: dict[str, list[Any]] = {}
        self.unmanaged_fields: list[tuple[str, str]] = []
        self.environment_kinds = kinds.environment_kinds()
        self.live_apps: dict[tuple[str, str], tuple[str, str]] = {}
        """(project, app) slugs of the manifest -> the IDs of the live app it plans (not one it
        creates or replaces)."""
        self.deployed: set[golive.EnvironmentKey] = set()
        """The environments the going-live rule asked about that have a deployment."""

    # -- reading and diffing -----------------------------------------------------------------

    async def run(self) -> None:
        in_scope = [p for p in self.manifest.projects if self.scope.reads(p.slug)]
        self.planned_projects.update(p.slug for p in in_scope)
        await asyncio.gather(*(self._plan_project(p) for p in in_scope))
        for kind in self.environment_kinds:
            await kind.finish(self)
        await self._order_slug_moves()
        await self._read_deployed()

    async def _plan_project(self, desired: Project) -> None:
        live = await self._read_project(desired)
        if live is not None:
            self._unknown_members(f"project.{desired.slug}", live, PROJECT)
        change = project.plan_project(desired, live)
        self._add(change)
        depends = _dependency(change, Action.CREATE)
        project_id = live["id"] if live else None
        project_ref = project_id or desired.slug
        if live is None:
            await asyncio.gather(
                *(
                    self._plan_app(desired, a, None, project_ref, None, depends)
                    for a in listed(desired.apps)
                    if self.scope.reads(desired.slug, a.slug)
                )
            )
            return
        if not is_set(desired.apps):
            return  # no `apps:` block: the project's apps are unmanaged, none is read or pruned
        at = Location(live["id"])
        project_reads = _ProjectReads(self.platform, at, self._shared_kinds(desired))
        live_apps: list[dict[str, Any]] = await apps.KIND.read(self.platform, at)
        apps.KIND.record(self.record, at, desired.slug, live_apps)
        pinned = {a.id for a in listed(desired.apps) if a.id}
        indexed = apps.LiveApps(live_apps)
        matched = {
            a.slug: apps.find_live_app(desired.slug, a, indexed, pinned)
            for a in listed(desired.apps)
        }
        self.slug_holders[("app", desired.slug)] = {
            a["slug"]: f"app {desired.slug}/{a['slug']}, which the manifest does not list"
            for a in live_apps
        }
        # every app's own change is planned (from listApps, no more reads): a targeted rename
        # may need another app's rename or delete first (`_targeted` keeps what it needs)
        await asyncio.gather(
            *(
                self._plan_app(
                    desired, a, matched[a.slug], project_ref, project_id, depends, project_reads
                )
                for a in listed(desired.apps)
            )
        )
        claimed = {a["id"] for a in matched.values() if a is not None}
        for live_app in live_apps:
            if live_app["id"] not in claimed:
                self._unmanaged_app(desired, project_ref, live_app, desired_slugs=matched.keys())

    def _shared_kinds(self, desired: Project) -> list[EnvironmentKind]:
        """The kinds read per project that two or more environments of `desired` manage (for
        one, its own filtered read costs no more than the project's listing)."""
        environments = [
            (a.slug, e)
            for a in listed(desired.apps)
            for e in a.environments
            if self.scope.reads(desired.slug, a.slug, e.name)
        ]
        return [
            kind
            for kind in self.environment_kinds
            if kind.read_at == ReadAt.PROJECT
            and sum(self._wants(desired.slug, a, e, kind) for a, e in environments) > 1
        ]

    async def _read_project(self, desired: Project) -> dict[str, Any] | None:
        """The live project `desired` stands for (read and recorded), with the slugs it leaves
        and takes noted."""
        live = await project.read_project(self.platform, desired)
        project.KIND.record(self.record, project.location(desired), desired.slug, live)
        return await self._hold_project_slugs(desired, live)

    async def _hold_project_slugs(
        self, desired: Project, live: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """Note who holds the slugs `desired` leaves and takes (plan/slug_moves.py), and
        return the live project it stands for: none when, unpinned, it found by its slug a
        project the manifest pins under another key (renamed away: this one is new)."""
        held = self.slug_holders.setdefault(("project",), {})
        pinned = {p.id: p.slug for p in self.manifest.projects if p.id}
        if live is not None:
            held[live["slug"]] = project.slug_label(live, pinned)
        if desired.id is None and live is not None and live["id"] in pinned:
            await self._plan_renamed_away(pinned[live["id"]])
            return None
        if live is not None and live["slug"] != desired.slug:
            try:
                holder = await project.slug_holder(self.platform, desired.slug)
            except PermissionDenied:
                return live  # a key that may not see the holder: apply finds out
            self.record.read(project.READ_OPERATION, holder["id"] if holder else None)
            self.record.slug_holder("project", desired.slug, holder)
            if holder is not None:
                held.setdefault(desired.slug, project.slug_label(holder, pinned))
                if holder["id"] in pinned:
                    await self._plan_renamed_away(pinned[holder["id"]])
        return live

    async def _plan_renamed_away(self, key: str) -> None:
        """Plan the project's own change (not its apps) when it holds a slug a planned project
        takes and the manifest renames it: outside the targets, its rename is what frees the
        slug, and `_targeted` keeps it as a dependency, as it keeps an app's."""
        desired = self.manifest.project(key)
        if desired is None or key in self.planned_projects:
            return
        self.planned_projects.add(key)
        self._add(project.plan_project(desired, await self._read_project(desired)))

    async def _order_slug_moves(self) -> None:
        """Make what takes a slug wait for what frees it, and break rename cycles through a
        temporary slug (plan/slug_moves.py)."""
        wanted: dict[slug_moves.Scope, set[str]] = {("project",): set()}
        for desired in self.manifest.projects:
            wanted[("project",)].add(desired.slug)
            wanted[("app", desired.slug)] = {a.slug for a in listed(desired.apps)}
        moves = slug_moves.SlugMoves(self.changes, self.slug_holders, wanted)
        temporaries: dict[str, str] = {}
        for cycle in moves.cycles():
            is_free = self._project_slug_is_free if cycle.scope == ("project",) else None
            temporaries[cycle.breaker.address] = await slug_moves.temporary_slug(
                cycle, moves.taken(cycle.scope) | set(temporaries.values()), is_free
            )
        self.changes, notes = moves.resolved(temporaries)
        self.notes.extend(notes)

    async def _project_slug_is_free(self, slug: str) -> bool:
        try:
            holder = await project.slug_holder(self.platform, slug)
        except PermissionDenied:
            return False  # not known to be free
        self.record.read(project.READ_OPERATION, holder["id"] if holder else None)
        self.record.slug_holder("project", slug, holder)
        return holder is None

    def _unmanaged_app(
        self,
        desired: Project,
        project_ref: str,
        live_app: Mapping[str, Any],
        *,
        desired_slugs: Collection[str],
    ) -> None:
        slug = live_app.get("slug", live_app["id"])
        if self.manifest.prune.apps:
            wanted = slug in desired_slugs
            change = apps.plan_app_delete(desired.slug, project_ref, live_app, slug_wanted=wanted)
            if change.action is Action.DELETE:
                self.going_away[live_app["id"]] = change.address
            self._add(change)
            return
        where = f"app.{desired.slug}/{slug}"
        self.notes.append(
            Note(
                "info",
                f"app {desired.slug}/{slug} is not in the manifest and is left alone "
                "(unmanaged); list it to manage it, or set prune.apps: true to delete it",
                where,
                subjects=(f"{desired.slug}/{slug}",),
                group="{count} apps are not in the manifest and are left alone (unmanaged): "
                "{subjects}; list them to manage them, or set prune.apps: true to delete them",
            )
        )

    async def _plan_app(
        self,
        desired_project: Project,
        desired: App,
        live: Mapping[str, Any] | None,
        project_ref: str,
        project_id: str | None,
        project_depends: tuple[str, ...],
        project_reads: _ProjectReads | None = None,
    ) -> None:
        change = apps.plan_app(
            desired_project.slug,
            project_ref,
            project_id,
            desired,
            live,
            allow_replace=self.options.allow_replace,
        )
        self._add(change, project_depends)
        if live is not None:
            self._unknown_members(f"app.{desired_project.slug}/{desired.slug}", live, APP)
        replaced = change is not None and change.action is Action.REPLACE
        if change is not None and replaced and live is not None:
            self.going_away[live["id"]] = change.address
        fresh = live is None or replaced
        if not fresh and live is not None and project_id is not None:
            self.live_apps[(desired_project.slug, desired.slug)] = (project_id, str(live["id"]))
        context = _AppContext(
            project=desired_project,
            app=desired,
            project_ref=project_ref,
            app_ref=desired.slug if fresh or live is None else str(live["id"]),
            fresh=fresh,
            depends_on=_dependency(change, Action.CREATE, Action.REPLACE) or project_depends,
            label=f"{desired_project.slug}/{desired.slug}",
            project_reads=project_reads,
        )
        environments = [
            e
            for e in sorted(desired.environments, key=lambda e: ENVIRONMENT_NAMES.index(e.name))
            if self.scope.reads(desired_project.slug, desired.slug, e.name)
        ]
        if fresh:
            for environment in environments:
                self._plan_environment(context, environment, None)
            return
        assert live is not None
        await self._read_and_plan_environments(context, live, environments)

    async def _read_and_plan_environments(
        self, context: _AppContext, live: Mapping[str, Any], environments: Sequence[Environment]
    ) -> None:
        """Read what the environments' kinds need (per project, per app and per environment,
        all at once), then plan each environment."""
        at = Location(context.project_ref, str(live["id"]))
        per_app = [
            kind
            for kind in self.environment_kinds
            if kind.read_at == ReadAt.APP
            and any(self._wants_in(context, e, kind) for e in environments)
        ]
        shared = context.project_reads
        # an environment finds its share of a project's listing by the ID a per-app read gives
        per_project = [
            kind
            for kind in (shared.kinds if shared is not None and per_app else ())
            if any(self._wants_in(context, e, kind) for e in environments)
        ]
        project_listings = [shared.read(kind) for kind in per_project] if shared else []
        results = await asyncio.gather(
            *(kind.read(self.platform, at) for kind in per_app),
            *project_listings,
            *(self._read_environment(context, at, e, per_project) for e in environments),
        )
        read_per_app = dict(zip(per_app, results[: len(per_app)], strict=True))
        read_per_project = dict(
            zip(per_project, results[len(per_app) : len(per_app) + len(per_project)], strict=True)
        )
        for kind, found in read_per_app.items():
            kind.record(self.record, at, context.label, found)
        for environment, reads in zip(
            environments, results[len(per_app) + len(per_project) :], strict=True
        ):
            place = Location(at.project, at.app, environment.name)
            for kind, found in read_per_app.items():
                reads[kind] = kind.pick(found, place)
            place = dataclasses.replace(place, object_id=self._environment_id(reads))
            for kind, found in read_per_project.items():
                if not self._wants_in(context, environment, kind):
                    continue
                if place.object_id is None:  # not in its app's listing: read it alone
                    reads[kind] = await kind.read(self.platform, place)
                else:
                    reads[kind] = kind.pick(found, place)
            self._plan_environment(context, environment, reads)

    async def _read_environment(
        self,
        context: _AppContext,
        app: Location,
        environment: Environment,
        shared: Collection[EnvironmentKind] = (),
    ) -> dict[EnvironmentKind, Any]:
        """What each kind read per environment finds there, for the kinds it manages (a kind
        read per project too, unless the environment takes its share of the project's)."""
        at = Location(app.project, app.app, environment.name)
        wanted = [
            kind
            for kind in self.environment_kinds
            if kind.read_at in (ReadAt.PROJECT, ReadAt.ENVIRONMENT)
            and kind not in shared
            and self._wants_in(context, environment, kind)
        ]
        found = await asyncio.gather(*(kind.read(self.platform, at) for kind in wanted))
        return dict(zip(wanted, found, strict=True))

    def _wants_in(
        self, context: _AppContext, environment: Environment, kind: EnvironmentKind
    ) -> bool:
        return self._wants(context.project.slug, context.app.slug, environment, kind)

    def _wants(
        self, project: str, app: str, environment: Environment, kind: EnvironmentKind
    ) -> bool:
        """Whether the manifest manages `kind` in `environment` and the targets reach it."""
        return kind.manages(environment) and self.scope.reads(
            project, app, environment.name, kind=kind.name
        )

    def _environment_id(self, reads: Mapping[EnvironmentKind, Any]) -> str | None:
        """The environment's ID, when one of the kinds read for it names it."""
        return next(
            (
                found_id
                for kind in self.environment_kinds
                if kind in reads and (found_id := kind.environment_id(reads[kind])) is not None
            ),
            None,
        )

    def _plan_environment(
        self,
        context: _AppContext,
        environment: Environment,
        reads: Mapping[EnvironmentKind, Any] | None,
    ) -> None:
        """Plan every kind the environment manages; `reads` is None when its app is created or
        replaced by this plan (nothing under it was read)."""
        label = f"{context.label}/{environment.name}"
        environment_id = None if reads is None else self._environment_id(reads)
        at = Location(context.project_ref, context.app_ref, environment.name, environment_id)
        job = EnvironmentJob(
            self, context.project.slug, context.app.slug, environment, at, label, context.depends_on
        )
        for kind in self.environment_kinds:
            if not self._wants_in(context, environment, kind):
                continue
            live = None if reads is None else reads.get(kind)
            if (
                live is not None and kind.read_at != ReadAt.APP
            ):  # per-app reads are recorded per app
                kind.record(self.record, at, label, live)
            kind.plan(job, live)

    def _unknown_members(self, where: str, live: Mapping[str, Any], shape: Shape) -> None:
        """A project's or an app's members (and values) this reconciler does not know: their
        updates send only what changes, so these stay as they are; the plan reports them."""
        found = unknown_members(live, shape) + [
            f"{path} {live.get(path)!r}" for path in unknown_values(live, shape)
        ]
        self.unmanaged_fields.extend((where, path) for path in found)

    def manages(self, kind: EnvironmentKind, project: str, app: str, environment: str) -> bool:
        desired = self.manifest.project(project)
        found_app = desired.app(app) if desired else None
        found = found_app.environment(environment) if found_app else None
        return found is not None and kind.manages(found)

    def note(self, note: Note) -> None:
        self.notes.append(note)

    def selected(self, change_address: str) -> bool:
        return self.scope.covers(change_address)

    def add(self, change: Change | None, depends_on: Collection[str] = ()) -> None:
        self._add(change, depends_on)

    def _add(self, change: Change | None, depends_on: Iterable[str] = ()) -> None:
        if change is None:
            return
        merged = tuple(dict.fromkeys((*change.depends_on, *depends_on)))
        if change.action is Action.BLOCKED:
            merged = ()  # nothing is sent, so nothing to wait for
        self.changes.append(dataclasses.replace(change, depends_on=merged))

    # -- assembling the plan -----------------------------------------------------------------

    def plan(self) -> Plan:
        ordered = slug_moves.listing_order(sorted(self.changes, key=self._order()))
        changes, included = self._targeted(ordered)
        notes = [n for n in self.notes if n.address is None or self.scope.covers(n.address)]
        notes.extend(self._plan_notes(changes, included))
        notes.extend(self._deployment_notes(changes))
        permissions = set(self.record.permissions)
        permissions.update(call.permission for change in changes for call in change.calls)
        # a read that met a 404 made the client check the base URL, and apply's re-read will
        permissions.update(self.platform.check_permissions)
        return Plan(
            changes=tuple(changes),
            notes=tuple(notes),
            permissions=tuple(sorted(permissions)),
            manifest_digest=manifest_digest(self.manifest, self.options),
            live_digest=self.record.digest(),
            targets=tuple(self.options.targets),
            max_deletes=self.options.max_deletes,
            metadata={
                "base_url": str(getattr(self.platform, "base_url", "")),
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "reconciler_version": __version__,
                "fingerprint_mode": fingerprint_mode(self.options.fingerprint_key),
            },
            declared_secrets=dict(self.declared_secrets),
            capacity=self._capacity(),
            workspace=self.record.project_ids(),
        )

    async def _read_deployed(self) -> None:
        """Whether each environment that `apply --deploy` would deploy only if it has a
        deployment has one (golive.py's rule): one listDeployments each, for the few a change
        above them (an image, a project slug) asks for; an app this plan creates or replaces
        has none."""
        changes, _ = self._targeted(self.changes)
        asked = [
            item.environment
            for item in golive.planned_rollouts(self.manifest, changes)
            if item.only_if_deployed and item.environment[:2] in self.live_apps
        ]
        if asked:
            self.record.read("deployments.listDeployments")
        found = await asyncio.gather(
            *(
                golive.latest_deployment(self.platform, (*self.live_apps[key[:2]], key[2]))
                for key in asked
            )
        )
        self.deployed.update(
            key for key, latest in zip(asked, found, strict=True) if latest is not None
        )

    def _deployment_notes(self, changes: Sequence[Change]) -> list[Note]:
        """Which environments need a deployment for the plan to reach traffic
        (reconciler/plan/golive.py)."""
        to_deploy = golive.environments_to_deploy(
            self.manifest, changes, self.deployed.__contains__
        )
        auto = golive.auto_deploying(self.manifest, to_deploy, self.record.environment)
        return golive.deployment_notes(to_deploy, self.record.rolled_back, auto)

    def _capacity(self) -> capacity.CapacityReport:
        created = {
            address_parts(c.address)
            for c in self.changes
            if c.kind == "app" and c.action in (Action.CREATE, Action.REPLACE)
        }
        return capacity.capacity_report(
            self.manifest,
            self.record.environment,
            created,  # type: ignore[arg-type]  # app addresses have two parts
            lambda project, app, name: self.scope.reads(project, app, name),
        )

    def _manifest_paths(self) -> set[tuple[str, ...]]:
        """Every project, app and managed environment of the manifest, as address parts."""
        paths: set[tuple[str, ...]] = set()
        for desired in self.manifest.projects:
            paths.add((desired.slug,))
            for app in listed(desired.apps):
                paths.add((desired.slug, app.slug))
                paths.update((desired.slug, app.slug, e.name) for e in app.environments)
        return paths

    def _order(self) -> Callable[[Change], tuple[int, int, int, int]]:
        """The sort key of changes: manifest order of projects and apps, then environment and
        kind. Positions are looked up in maps made once, so sorting stays linear."""
        projects = {p.slug: i for i, p in enumerate(self.manifest.projects)}
        apps = {
            (p.slug, a.slug): i
            for p in self.manifest.projects
            for i, a in enumerate(listed(p.apps))
        }
        app_counts = {p.slug: len(listed(p.apps)) for p in self.manifest.projects}
        kind_index = {name: i for i, name in enumerate(kinds.names())}

        def key(change: Change) -> tuple[int, int, int, int]:
            parts = address_parts(change.address)
            project_index = projects.get(parts[0], len(projects))
            app_index = 0
            if len(parts) > 1:
                # apps the manifest does not list (prune.apps deletions) come last
                unlisted = app_counts.get(parts[0], 0)
                app_index = 1 + apps.get((parts[0], parts[1]), unlisted)
            env_index = ENVIRONMENT_NAMES.index(parts[2]) if len(parts) > 2 else -1
            return project_index, app_index, env_index, kind_index[change.kind]

        return key

    def _targeted(self, changes: list[Change]) -> tuple[list[Change], list[str]]:
        """Changes under the targets, plus what they depend on (which apply must do first),
        and the addresses of those dependencies outside the targets."""
        if self.scope.everything:
            return changes, []
        by_address = {c.address: c for c in changes}
        keep = {c.address for c in changes if self.scope.covers(c.address)}
        pending = list(keep)
        while pending:
            for dependency in by_address[pending.pop()].depends_on:
                if dependency in by_address and dependency not in keep:
                    keep.add(dependency)
                    pending.append(dependency)
        targeted = [c for c in changes if c.address in keep]
        included = [c.address for c in targeted if not self.scope.covers(c.address)]
        return targeted, included

    def _plan_notes(self, changes: Sequence[Change], included: Sequence[str]) -> list[Note]:
        managed = self._manifest_paths()
        notes: list[Note] = [
            Note(
                "warning",
                f"--target {target} matches nothing the manifest manages: check its spelling "
                "(addresses look like app.shop/web or variable.shop/web/production/KEY)",
            )
            for target in self.scope.targets
            if target.parts[:3] not in managed
        ]
        if included:
            notes.append(
                Note(
                    "info",
                    f"{len(included)} change(s) outside the targets are included because "
                    f"targeted changes depend on them: {', '.join(included)}",
                    subjects=tuple(included),
                )
            )
        deletions = [c for c in changes if c.action in (Action.DELETE, Action.REPLACE)]
        if len(deletions) > self.options.max_deletes:
            notes.append(
                Note("warning", max_deletes_note(len(deletions), self.options.max_deletes))
            )
        replaces = [c.address for c in changes if c.action is Action.REPLACE]
        if replaces and not self.options.allow_replace:
            notes.append(
                Note(
                    "warning",
                    f"{len(replaces)} app(s) must be replaced ({', '.join(replaces)}): apply "
                    "refuses this unless run with --allow-replace",
                    subjects=tuple(replaces),
                )
            )
        if self.missing_sources:
            missing = tuple(sorted(self.missing_sources))
            notes.append(
                Note(
                    "warning",
                    "secret(s) not available to this plan: "
                    + ", ".join(missing)
                    + "; their values show as (known after apply), and apply refuses a plan "
                    "that must send them until they are available",
                    subjects=missing,
                )
            )
        # by address (environments are planned concurrently), each one's in the order found
        unmanaged = sorted(
            ((a, path) for a, path in self.unmanaged_fields if self.scope.covers(a)),
            key=lambda field: field[0],
        )
        if unmanaged:
            notes.append(unmanaged_note(unmanaged))
        notes.extend(
            Note(
                "info",
                f"app {label} has environment(s) {', '.join(others)} besides production and "
                "preview; reconciler manages only those two and leaves the others alone",
                f"app.{label}",
            )
            for label, others in sorted(self.record.other_environments.items())
            if self.scope.reads(*label.split("/"))
        )
        if self.compared_by_presence:
            notes.append(
                Note(
                    "info",
                    f"{len(self.compared_by_presence)} write-only variable(s) compared by presence "
                    "and kind only, because RECONCILER_FINGERPRINT_KEY is not set: a changed "
                    "secret value does not show as a change. Set the key so apply records a "
                    "fingerprint of each value and plans can compare them.",
                )
            )
        return notes


SHOWN_UNMANAGED = 5
"""How many unmanaged fields the plan's note names before it counts the rest."""


def unmanaged_note(fields: Sequence[tuple[str, str]]) -> Note:
    """One note for every member live state holds that this reconciler does not know and the
    manifest does not manage: the first few, grouped by address, then how many more."""
    grouped: dict[str, list[str]] = {}
    for where, path in fields[:SHOWN_UNMANAGED]:
        grouped.setdefault(where, []).append(path)
    shown = [f"{where}: {', '.join(paths)}" for where, paths in grouped.items()]
    more = len(fields) - SHOWN_UNMANAGED
    if more > 0:
        shown.append(f"and {more} more")
    return Note(
        "info",
        f"{len(fields)} unmanaged field(s): the platform holds what this reconciler does not "
        f"know ({'; '.join(shown)}); the plan keeps them as they are (`reconciler export` "
        "writes those a manifest can hold in `opaque` blocks, which the plan then manages)",
    )


def _dependency(change: Change | None, *actions: Action) -> tuple[str, ...]:
    """The change's address when later changes must wait for it (created, replaced, renamed)."""
    if change is None:
        return ()
    if change.action in actions or change.reason == "renamed":
        return (change.address,)
    return ()


def manifest_digest(manifest: Manifest, options: PlanOptions) -> str:
    """sha256 over the manifest files' sha256s and the options that change what a plan covers.

    Only `--target` is included: `--max-deletes` and `--allow-replace` are checks apply may
    make stricter or looser without the plan meaning anything else.
    """
    digest = hashlib.sha256()
    for source in sorted(manifest.sources, key=lambda s: s.path):
        digest.update(f"{source.path}\0{source.sha256}\n".encode())
    for target in sorted(options.targets):
        digest.update(f"target\0{target}\n".encode())
    return digest.hexdigest()
