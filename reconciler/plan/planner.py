"""Build a `Plan`: read live state, diff every resource kind, order and check the changes.

The planner walks the address tree through the registry (`reconciler.plan.kinds`): the
container kinds in order (projects, then their apps: `ContainerKind.plan_under` reads and
plans a container's objects and hands each on as a `Container` as soon as it is planned),
then in the environments of the last container the environment kinds. Reading is concurrent
and pipelined per project: the project, then its apps, then for each app in parallel only
what the manifest manages: each environment kind is read per project, per app or per
environment, as the kind says (`read_at`). A kind read per project (domains) is read once for
the project, the first time one of its apps needs it, and each environment takes its share
by the ID its app's listing of environments gave; an environment without one, or alone in
its project in managing that kind, is read by itself. Objects that do not exist yet are not
read at all. The client's semaphore bounds how many requests are in flight; there is no
barrier between projects, so a slow project never holds up the others. Only after every
read, each kind's `finish` plans what crosses environments (the domains kind looks up the
hosts no read environment holds: a host can be attached anywhere in the workspace).

Every kind turns desired + live into `Change`s with their calls, and a container's changes
are what the changes below it wait for (`Container.depends_on`); this module adds what
crosses kinds: slug moves, `--target` filtering, the deletion threshold and notes, the
permission list, the digests and the metadata. Variables are the exception to filtering
here: their calls are shared batches, so the targets are applied before the batches are
formed (`variables.plan_variables`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime

from reconciler import __version__
from reconciler.address import Address, TreePath
from reconciler.checks import capacity
from reconciler.collector import collector_paused
from reconciler.manifest.model import ENVIRONMENT_NAMES, Environment, Manifest, Prune
from reconciler.plan import golive, kinds, slug_moves
from reconciler.plan.changes import Action, Change, Note, Plan, max_deletes_note
from reconciler.plan.kinds.base import (
    AnyEnvironmentKind,
    Container,
    ContainerKind,
    EnvironmentJob,
    Location,
    Planning,
)
from reconciler.plan.live import LiveRecord, fingerprint_mode
from reconciler.plan.options import PlanOptions
from reconciler.plan.phases import ReadAt
from reconciler.plan.targets import Scope
from reconciler.platform.protocol import Platform

__all__ = ["PlanOptions", "build_plan", "manifest_digest"]


async def build_plan(manifest: Manifest, platform: Platform, options: PlanOptions) -> Plan:
    """Read live state through `platform` and compute the plan that converges it to `manifest`."""
    scope = Scope.parse(options.targets)
    with collector_paused():  # long-lived, acyclic objects: see reconciler/collector.py
        planner = _Planner(manifest, platform, options, scope)
        await planner.run()
        return planner.plan()


class _SharedReads:
    """The reads of one container shared by the environments under it (kinds read at its
    depth, such as `ReadAt.PROJECT`): the first environment that needs one starts it, the
    others await the same task."""

    def __init__(self, platform: Platform, at: Location, kinds: Collection[AnyEnvironmentKind]):
        self.platform = platform
        self.at = at
        self.kinds = kinds
        self._reads: dict[AnyEnvironmentKind, asyncio.Future[object]] = {}

    async def read(self, kind: AnyEnvironmentKind) -> object:
        if kind not in self._reads:
            self._reads[kind] = asyncio.ensure_future(kind.read(self.platform, self.at))
        return await self._reads[kind]


class _Planner(Planning):
    """One plan being built: the walk over the container kinds of the registry (projects,
    then apps), then the environment kinds read and planned in each environment."""

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
        self.unmanaged_fields: list[tuple[str, str]] = []
        self.kind_states: dict[type, object] = {}
        self.container_kinds = kinds.container_kinds()
        self.environment_kinds = kinds.environment_kinds()
        self.live_holders: dict[TreePath, Location] = {}
        """The environments' containers (apps) this plan plans in place, by path:
        where their environments are read (not one it creates or replaces)."""
        self.fresh_holders: set[TreePath] = set()
        """The environments' containers this plan creates or replaces."""
        self.deployed: set[TreePath] = set()
        """The environments the going-live rule asked about that have a deployment."""

    # -- reading and diffing -----------------------------------------------------------------

    async def run(self) -> None:
        await self._walk(0, None, None)
        for kind in self.environment_kinds:
            await kind.finish(self)
        await self._order_slug_moves()
        await self._read_deployed()

    async def _walk(
        self, level: int, parent: Container | None, shared: _SharedReads | None
    ) -> None:
        """Plan the objects of the `level`th container kind under `parent`; each one planned
        is walked further at once, and below the last container kind its environments are
        read and planned."""

        async def descend(container: Container) -> None:
            if level + 1 < len(self.container_kinds):
                here = self._shared_reads(container) or shared
                await self._walk(level + 1, container, here)
            else:
                await self._plan_environments(container, shared)

        await self.container_kinds[level].plan_under(self, parent, descend)

    def _shared_reads(self, container: Container) -> _SharedReads | None:
        """The reads shared under a container read live: of the kinds read at its depth that
        two or more of its environments manage (for one, its own filtered read costs no more
        than the container's listing)."""
        if container.fresh:
            return None
        shared = [
            kind
            for kind in self.environment_kinds
            if kind.read_at == container.path.depth
            and sum(self._wants(app, e, kind) for app, e in container.environments) > 1
        ]
        return _SharedReads(self.platform, container.at, shared)

    async def _order_slug_moves(self) -> None:
        """Make what takes a slug wait for what frees it, and break rename cycles through a
        temporary slug (plan/slug_moves.py)."""
        wanted: dict[slug_moves.Scope, set[str]] = {
            (name, *parent): set(slugs) for name, parent, slugs in self._listed_slugs
        }
        moves = slug_moves.SlugMoves(self.changes, self.slug_holders, wanted)
        temporaries: dict[str, str] = {}
        for cycle in moves.cycles():
            kind = kinds.get(cycle.scope[0])
            is_free = kind.slug_is_free(self) if isinstance(kind, ContainerKind) else None
            temporaries[cycle.breaker.address] = await slug_moves.temporary_slug(
                cycle, moves.taken(cycle.scope) | set(temporaries.values()), is_free
            )
        self.changes, notes = moves.resolved(temporaries)
        self.notes.extend(notes)

    async def _plan_environments(self, holder: Container, shared: _SharedReads | None) -> None:
        """Read and plan the environments of `holder` (an app); nothing is read under one
        this plan creates or replaces."""
        if holder.fresh:
            self.fresh_holders.add(holder.path)
            for _, environment in holder.environments:
                self._plan_environment(holder, environment, None)
            return
        self.live_holders[holder.path] = holder.at
        await self._read_and_plan_environments(holder, shared)

    async def _read_and_plan_environments(
        self, holder: Container, shared: _SharedReads | None
    ) -> None:
        """Read what the environments' kinds need (per project, per app and per environment,
        all at once), then plan each environment."""
        at = holder.at
        environments = [e for _, e in holder.environments]
        per_app = [
            kind
            for kind in self.environment_kinds
            if kind.read_at == ReadAt.APP
            and any(self._wants(holder.path, e, kind) for e in environments)
        ]
        # an environment finds its share of a project's listing by the ID a per-app read gives
        per_project = [
            kind
            for kind in (shared.kinds if shared is not None and per_app else ())
            if any(self._wants(holder.path, e, kind) for e in environments)
        ]
        project_listings = [shared.read(kind) for kind in per_project] if shared else []
        results = await asyncio.gather(
            *(kind.read(self.platform, at) for kind in per_app),
            *project_listings,
            *(self._read_environment(holder, e, per_project) for e in environments),
        )
        read_per_app = dict(zip(per_app, results[: len(per_app)], strict=True))
        read_per_project = dict(
            zip(per_project, results[len(per_app) : len(per_app) + len(per_project)], strict=True)
        )
        for kind, found in read_per_app.items():
            kind.record(self.record, at, holder.path, found)
        for environment, reads in zip(
            environments, results[len(per_app) + len(per_project) :], strict=True
        ):
            place = Location(at.project, at.app, environment.name)
            for kind, found in read_per_app.items():
                reads[kind] = kind.pick(found, place)
            place = dataclasses.replace(place, object_id=self._environment_id(reads))
            for kind, found in read_per_project.items():
                if not self._wants(holder.path, environment, kind):
                    continue
                if place.object_id is None:  # not in its app's listing: read it alone
                    reads[kind] = await kind.read(self.platform, place)
                else:
                    reads[kind] = kind.pick(found, place)
            self._plan_environment(holder, environment, reads)

    async def _read_environment(
        self,
        holder: Container,
        environment: Environment,
        shared: Collection[AnyEnvironmentKind] = (),
    ) -> dict[AnyEnvironmentKind, object]:
        """What each kind read per environment finds there, for the kinds it manages (a kind
        read per project too, unless the environment takes its share of the project's)."""
        at = Location(holder.at.project, holder.at.app, environment.name)
        wanted = [
            kind
            for kind in self.environment_kinds
            if kind.read_at in (ReadAt.PROJECT, ReadAt.ENVIRONMENT)
            and kind not in shared
            and self._wants(holder.path, environment, kind)
        ]
        found = await asyncio.gather(*(kind.read(self.platform, at) for kind in wanted))
        return dict(zip(wanted, found, strict=True))

    def _wants(self, holder: TreePath, environment: Environment, kind: AnyEnvironmentKind) -> bool:
        """Whether the manifest manages `kind` in `environment` (of the app at `holder`) and
        the targets reach it."""
        return kind.manages(environment) and self.scope.reads(
            *holder.child(environment.name).slugs, kind=kind.name
        )

    def _environment_id(self, reads: Mapping[AnyEnvironmentKind, object]) -> str | None:
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
        holder: Container,
        environment: Environment,
        reads: Mapping[AnyEnvironmentKind, object] | None,
    ) -> None:
        """Plan every kind the environment manages; `reads` is None when its app is created or
        replaced by this plan (nothing under it was read)."""
        path = holder.path.child(environment.name)
        environment_id = None if reads is None else self._environment_id(reads)
        at = Location(holder.at.project, holder.at.app, environment.name, environment_id)
        project, app = holder.path.slugs
        job = EnvironmentJob(self, project, app, environment, at, path, holder.depends_on)
        for kind in self.environment_kinds:
            if not self._wants(holder.path, environment, kind):
                continue
            live = None if reads is None else reads.get(kind)
            if (
                live is not None and kind.read_at != ReadAt.APP
            ):  # per-app reads are recorded per app
                kind.record(self.record, at, path, live)
            kind.plan(job, live)

    def manages(self, kind: AnyEnvironmentKind, project: str, app: str, environment: str) -> bool:
        found = self._listed_environments.get((project, app, environment))
        return found is not None and kind.manages(found)

    @functools.cached_property
    def _listed_slugs(self) -> list[tuple[str, tuple[str, ...], Sequence[str]]]:
        """(kind name, its container's address parts, the slugs in manifest order) for every
        container kind."""
        return [
            (kind.name, parent, slugs)
            for kind in self.container_kinds
            for parent, slugs in kind.listed_slugs(self.manifest).items()
        ]

    @functools.cached_property
    def _listed_environments(self) -> dict[tuple[str, ...], Environment]:
        """Every environment the manifest lists, by address parts (the first of a name)."""
        listed: dict[tuple[str, ...], Environment] = {}
        for kind in self.container_kinds:
            for holder, environments in kind.listed_environments(self.manifest).items():
                for environment in environments:
                    listed.setdefault((*holder, environment.name), environment)
        return listed

    def note(self, note: Note) -> None:
        self.notes.append(note)

    def selected(self, change_address: str) -> bool:
        return self.scope.covers(change_address)

    def reads(self, *parts: str) -> bool:
        return self.scope.reads(*parts)

    def add(self, change: Change | None, depends_on: Collection[str] = ()) -> None:
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
            declared_secrets={
                where: source
                for kind in self.environment_kinds
                for where, source in kind.declared_secrets(self).items()
            },
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
            if item.only_if_deployed and item.environment.parent in self.live_holders
        ]
        if asked:
            self.record.read("deployments.listDeployments")
        found = await asyncio.gather(
            *(golive.latest_deployment(self.platform, self._live_ids(key)) for key in asked)
        )
        self.deployed.update(
            key for key, latest in zip(asked, found, strict=True) if latest is not None
        )

    def _live_ids(self, environment: TreePath) -> Location:
        """The environment named by the IDs of its live app, as listDeployments takes it."""
        at = self.live_holders[environment.parent]
        return dataclasses.replace(at, environment=environment.leaf)

    def _deployment_notes(self, changes: Sequence[Change]) -> list[Note]:
        """Which environments need a deployment for the plan to reach traffic
        (reconciler/plan/golive.py)."""
        to_deploy = golive.environments_to_deploy(
            self.manifest, changes, self.deployed.__contains__
        )
        auto = golive.auto_deploying(self.manifest, to_deploy, self.record.environment)
        return golive.deployment_notes(to_deploy, self.record.rolled_back, auto)

    def _capacity(self) -> capacity.CapacityReport:
        return capacity.capacity_report(
            self.manifest,
            self.record.environment,
            {app.slugs for app in self.fresh_holders},
            self.scope.reads,
        )

    def _manifest_paths(self) -> set[tuple[str, ...]]:
        """Every container (project, app) and environment of the manifest, as address parts."""
        paths = set(self._listed_environments)
        paths.update((*parent, slug) for _, parent, slugs in self._listed_slugs for slug in slugs)
        return paths

    def _order(self) -> Callable[[Change], tuple[int, ...]]:
        """The sort key of changes: manifest order of the containers (projects, apps), then
        environment and kind. Positions are looked up in maps made once, so sorting stays
        linear."""
        positions: dict[tuple[str, ...], int] = {}
        counts: dict[tuple[str, ...], int] = {}
        for _, parent, slugs in self._listed_slugs:
            counts[parent] = len(slugs)
            positions.update(((*parent, slug), i) for i, slug in enumerate(slugs))
        depth = len(self.container_kinds)
        kind_index = {name: i for i, name in enumerate(kinds.names())}

        def key(change: Change) -> tuple[int, ...]:
            parts = Address.parse(change.address).parts
            # what the manifest does not list (prune.apps deletions) comes after what it lists
            containers = [
                positions.get(parts[:n], counts.get(parts[: n - 1], 0)) if len(parts) >= n else -1
                for n in range(1, depth + 1)
            ]
            env_index = ENVIRONMENT_NAMES.index(parts[depth]) if len(parts) > depth else -1
            return (*containers, env_index, kind_index[change.kind])

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
        # what a kind says once about itself: its warnings with the plan's, the rest at the end
        closing = [note for kind in self.environment_kinds for note in kind.plan_notes(self)]
        notes.extend(note for note in closing if note.severity == "warning")
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
                f"app {app} has environment(s) {', '.join(others)} besides production and "
                "preview; reconciler manages only those two and leaves the others alone",
                str(Address("app", app)),
            )
            # in the order of their text, as plans always listed them: `a-b/web` sorts before
            # `a/web` as text, after it as slugs
            for app, others in sorted(
                self.record.other_environments.items(), key=lambda item: str(item[0])
            )
            if self.scope.reads(*app.slugs)
        )
        notes.extend(note for note in closing if note.severity != "warning")
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
