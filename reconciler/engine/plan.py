"""Build a `Plan`: read live state, diff every resource kind, order and check the changes.

Reading is concurrent and pipelined per project: `getProject`, then
`listApps`, then for each app in parallel only what the manifest manages
(`listEnvironments` for settings, and per environment variables, policies and
domains). Objects that do not exist yet are not read at all. The client's
semaphore bounds how many requests are in flight; there is no barrier between
projects, so a slow project never holds up the others. Only after every read,
the hosts the manifest adds that no read environment holds are looked up with
`getDomain` (a host can be attached anywhere in the workspace).

Every resource module turns desired + live into `Change`s with their calls;
this module adds what crosses kinds: dependencies (an app's changes wait for
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from reconciler import __version__
from reconciler.checks import capacity, golive
from reconciler.engine import slug_moves
from reconciler.engine.changes import Action, Change, Note, Plan
from reconciler.engine.live import LiveRecord, fingerprint_mode
from reconciler.engine.targets import Scope, parse_address
from reconciler.manifest.model import (
    ENVIRONMENT_NAMES,
    UNSET,
    App,
    Environment,
    Manifest,
    Project,
    is_set,
    listed,
)
from reconciler.platform.errors import PermissionDenied
from reconciler.resources import app as apps
from reconciler.resources import domains, policies, project, settings, variables
from reconciler.resources.common import EnvironmentRef

# change kind -> the Environment attribute holding that collection
_COLLECTIONS = {"variable": "variables", "policies": "policies", "domain": "domains"}
_KIND_ORDER = {"project": 0, "app": 1, "settings": 2, "variable": 3, "policies": 4, "domain": 5}


@dataclass(frozen=True)
class PlanOptions:
    targets: tuple[str, ...] = ()  # --target ADDRESS (repeatable), subtree prefixes
    max_deletes: int = 10
    allow_replace: bool = False
    fingerprint_key: bytes | None = None  # RECONCILER_FINGERPRINT_KEY
    # secret references planned as missing: apply PLANFILE rebuilds the plan without the
    # secrets the saved plan was made without, so the two compare call by call
    unavailable_secrets: frozenset[str] = frozenset()


async def build_plan(manifest: Manifest, client: Any, options: PlanOptions) -> Plan:
    """Read live state through `client` and compute the plan that converges it to `manifest`."""
    scope = Scope.parse(options.targets)
    planner = _Planner(manifest, client, options, scope)
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


@dataclass
class _Planner:
    manifest: Manifest
    client: Any
    options: PlanOptions
    scope: Scope
    changes: list[Change] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    record: LiveRecord = field(default_factory=LiveRecord)
    domain_environments: list[tuple[domains.EnvironmentDomains, tuple[str, ...]]] = field(
        default_factory=list
    )
    going_away: dict[str, str] = field(default_factory=dict)
    slug_holders: dict[slug_moves.Scope, dict[str, str]] = field(default_factory=dict)
    missing_sources: set[str] = field(default_factory=set)
    planned_projects: set[str] = field(default_factory=set)
    declared_secrets: dict[str, str] = field(default_factory=dict)
    compared_by_presence: int = 0

    # -- reading and diffing -----------------------------------------------------------------

    async def run(self) -> None:
        in_scope = [p for p in self.manifest.projects if self.scope.reads(p.slug)]
        self.planned_projects.update(p.slug for p in in_scope)
        await asyncio.gather(*(self._plan_project(p) for p in in_scope))
        await self._plan_domains()
        await self._order_slug_moves()

    async def _plan_project(self, desired: Project) -> None:
        live = await project.read_project(self.client, desired)
        self.record.read(project.READ_OPERATION, live["id"] if live else None)
        self.record.project(desired.slug, live)
        live = await self._hold_project_slugs(desired, live)
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
        live_apps = await apps.read_apps(self.client, live["id"])
        self.record.read(apps.READ_OPERATION)
        self.record.apps(desired.slug, live_apps)
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
                self._plan_app(desired, a, matched[a.slug], project_ref, project_id, depends)
                for a in listed(desired.apps)
            )
        )
        claimed = {a["id"] for a in matched.values() if a is not None}
        for live_app in live_apps:
            if live_app["id"] not in claimed:
                self._unmanaged_app(desired, project_ref, live_app, desired_slugs=matched.keys())

    async def _hold_project_slugs(
        self, desired: Project, live: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """Note who holds the slugs `desired` leaves and takes (engine/slug_moves.py), and
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
                holder = await project.slug_holder(self.client, desired.slug)
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
        live = await project.read_project(self.client, desired)
        self.record.read(project.READ_OPERATION, live["id"] if live else None)
        self.record.project(desired.slug, live)
        live = await self._hold_project_slugs(desired, live)
        self._add(project.plan_project(desired, live))

    async def _order_slug_moves(self) -> None:
        """Make what takes a slug wait for what frees it, and break rename cycles through a
        temporary slug (engine/slug_moves.py)."""
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
            holder = await project.slug_holder(self.client, slug)
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
        replaced = change is not None and change.action is Action.REPLACE
        if replaced and live is not None:
            self.going_away[live["id"]] = change.address
        fresh = live is None or replaced
        context = _AppContext(
            project=desired_project,
            app=desired,
            project_ref=project_ref,
            app_ref=desired.slug if fresh or live is None else str(live["id"]),
            fresh=fresh,
            depends_on=_dependency(change, Action.CREATE, Action.REPLACE) or project_depends,
            label=f"{desired_project.slug}/{desired.slug}",
        )
        environments = [
            e
            for e in sorted(desired.environments, key=lambda e: ENVIRONMENT_NAMES.index(e.name))
            if self.scope.reads(desired_project.slug, desired.slug, e.name)
        ]
        if fresh:
            for environment in environments:
                self._plan_environment(context, environment, _Reads.fresh())
            return
        assert live is not None
        await self._read_and_plan_environments(context, live, environments)

    async def _read_and_plan_environments(
        self, context: _AppContext, live: Mapping[str, Any], environments: Sequence[Environment]
    ) -> None:
        p, a = context.project.slug, context.app.slug
        wants_settings = any(
            settings.manages_settings(e) and self.scope.reads(p, a, e.name, kind="settings")
            for e in environments
        )
        live_id = live["id"]
        settings_read = (
            settings.read_environments(self.client, context.project_ref, live_id)
            if wants_settings
            else _nothing()
        )
        reads = [self._read_environment(context, live_id, e) for e in environments]
        listed, *per_environment = await asyncio.gather(settings_read, *reads)
        by_slug: dict[str, Mapping[str, Any]] = {}
        if listed is not None:
            self.record.read(settings.READ_OPERATION)
            self.record.environments(context.label, listed)
            by_slug = {e.get("slug"): e for e in listed}
        for environment, env_reads in zip(environments, per_environment, strict=True):
            env_reads.settings = by_slug.get(environment.name, {}) if listed is not None else None
            self._plan_environment(context, environment, env_reads)

    async def _read_environment(
        self, context: _AppContext, app_id: str, environment: Environment
    ) -> _Reads:
        p, a, name = context.project.slug, context.app.slug, environment.name
        ref = EnvironmentRef(context.project_ref, app_id, name)
        wants = {kind: self._wants(p, a, environment, kind) for kind in _COLLECTIONS}
        project_id = context.project_ref
        results = await asyncio.gather(
            variables.read_variables(self.client, ref) if wants["variable"] else _nothing(),
            policies.read_policies(self.client, ref) if wants["policies"] else _nothing(),
            domains.read_domains(self.client, project_id, app_id, name)
            if wants["domain"]
            else _nothing(),
        )
        return _Reads(variables=results[0], policies=results[1], domains=results[2])

    def _wants(self, project: str, app: str, environment: Environment, kind: str) -> bool:
        """Whether the manifest manages this collection and the targets reach it."""
        managed = getattr(environment, _COLLECTIONS[kind]) is not UNSET
        return managed and self.scope.reads(project, app, environment.name, kind=kind)

    def _plan_environment(
        self, context: _AppContext, environment: Environment, reads: _Reads
    ) -> None:
        p, a, name = context.project.slug, context.app.slug, environment.name
        label = f"{context.label}/{name}"
        environment_id = reads.environment_id()
        ref = EnvironmentRef(context.project_ref, context.app_ref, name, environment_id)
        depends = context.depends_on
        if settings.manages_settings(environment) and self.scope.reads(p, a, name, kind="settings"):
            live_settings = None if context.fresh else (reads.settings or {})
            self._add(settings.plan_settings(p, a, environment, live_settings, ref), depends)
        if self._wants(p, a, environment, "variable"):
            self._plan_variables(context, environment, reads, ref, label)
        if self._wants(p, a, environment, "policies"):
            if reads.policies is not None:
                self.record.read(policies.READ_OPERATION, environment_id)
                self.record.policies(label, reads.policies)
            self._add(policies.plan_policies(p, a, environment, reads.policies, ref), depends)
        if self._wants(p, a, environment, "domain"):
            if reads.domains is not None:
                self.record.read(domains.READ_OPERATION)
                self.record.domains(label, reads.domains)
            self.domain_environments.append(
                (
                    domains.EnvironmentDomains(
                        project=p,
                        app=a,
                        environment=name,
                        hosts=tuple(d.host for d in environment.domains),
                        positions={d.host: d.pos for d in environment.domains},
                        live=None if reads.domains is None else tuple(reads.domains),
                        ref=ref,
                        prune=self.manifest.prune.domains,
                    ),
                    depends,
                )
            )

    def _plan_variables(
        self,
        context: _AppContext,
        environment: Environment,
        reads: _Reads,
        ref: EnvironmentRef,
        label: str,
    ) -> None:
        if reads.variables is not None:
            self.record.read(variables.READ_OPERATION, ref.environment_id)
            self.record.variables(label, reads.variables)
        planned = variables.plan_variables(
            context.project.slug,
            context.app.slug,
            environment,
            reads.variables,
            ref,
            prune=self.manifest.prune.variables,
            fingerprint_key=self.options.fingerprint_key,
            selected=self.scope.covers,
            unavailable=self.options.unavailable_secrets,
        )
        self.missing_sources.update(planned.missing_sources)
        self.declared_secrets.update(planned.declared_secrets)
        self.compared_by_presence += len(planned.compared_by_presence)
        for change in planned.changes:
            self._add(change, context.depends_on)

    async def _plan_domains(self) -> None:
        managed = [env for env, _ in self.domain_environments]
        hosts = domains.hosts_to_look_up(managed)
        found = await asyncio.gather(*(domains.lookup_domain(self.client, h) for h in hosts))
        lookups = dict(zip(hosts, found, strict=True))
        for host, attached in lookups.items():
            self.record.read(domains.LOOKUP_OPERATION, (attached or {}).get("environmentId"))
            self.record.lookup(host, attached)
        await self._name_attachments([a for a in lookups.values() if a is not None])
        managed.extend(self._unread_sources(managed, lookups))
        planned = domains.plan_domains(
            managed, lookups, describe=self.record.describe, going_away=self.going_away
        )
        depends_by_prefix = {
            f"domain.{env.project}/{env.app}/{env.environment}/": deps
            for env, deps in self.domain_environments
        }
        for change in planned.changes:
            prefix = change.address.rsplit("/", 1)[0] + "/"
            self._add(change, depends_by_prefix.get(prefix, ()))
        self.notes.extend(planned.notes)

    def _unread_sources(
        self,
        managed: Sequence[domains.EnvironmentDomains],
        lookups: Mapping[str, Mapping[str, Any] | None],
    ) -> list[domains.EnvironmentDomains]:
        """Environments of the manifest that hold a moving host but were not read (`--target`).

        Their domains are managed, so the host moves (deleted there first) instead of being a
        conflict. They stand in the domain plan with only the moving hosts as live state and no
        hosts of their own, so nothing else about them is planned.
        """
        read = {(env.project, env.app, env.environment) for env in managed}
        found: dict[tuple[str, str, str], domains.EnvironmentDomains] = {}
        for attached in lookups.values():
            if attached is None or str(attached.get("appId")) in self.going_away:
                continue
            where = tuple(self.record.labels.get(str(attached.get("environmentId")), "").split("/"))
            if len(where) != 3 or where in read or not self._manages_domains(*where):
                continue
            p, a, name = where
            ref = EnvironmentRef(
                str(attached["projectId"]), str(attached["appId"]), name, attached["environmentId"]
            )
            previous = found.get(where)
            live = (*(previous.live or ()), attached) if previous else (attached,)
            found[where] = domains.EnvironmentDomains(
                p, a, name, hosts=(), positions={}, live=live, ref=ref, prune=False
            )
        return list(found.values())

    def _manages_domains(self, project_slug: str, app_slug: str, environment: str) -> bool:
        desired = self.manifest.project(project_slug)
        app = desired.app(app_slug) if desired else None
        found = app.environment(environment) if app else None  # type: ignore[arg-type]
        return found is not None and found.domains is not UNSET

    async def _name_attachments(self, attached: Sequence[Mapping[str, Any]]) -> None:
        """Learn the slugs of environments outside the manifest that hold a host it adds.

        Only reached when a host is attached elsewhere (a conflict the plan reports), so the
        plan can say `blog/site/production` instead of three IDs. Best effort: a key that may
        not read those objects just leaves the IDs in the message.
        """
        unknown = {
            str(a.get("environmentId")): a
            for a in attached
            if str(a.get("environmentId")) not in self.record.labels
        }
        found = await asyncio.gather(
            *(domains.locate(self.client, a) for a in unknown.values()), return_exceptions=True
        )
        for environment_id, label in zip(unknown, found, strict=True):
            if isinstance(label, str):
                self.record.labels[environment_id] = label

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
        permissions.update(getattr(self.client, "check_permissions", ()))
        return Plan(
            changes=tuple(changes),
            notes=tuple(notes),
            permissions=tuple(sorted(permissions)),
            manifest_digest=manifest_digest(self.manifest, self.options),
            live_digest=self.record.digest(),
            targets=tuple(self.options.targets),
            max_deletes=self.options.max_deletes,
            metadata={
                "base_url": str(getattr(self.client, "base_url", "")),
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "reconciler_version": __version__,
                "fingerprint_mode": fingerprint_mode(self.options.fingerprint_key),
            },
            declared_secrets=dict(self.declared_secrets),
            capacity=self._capacity(),
        )

    def _deployment_notes(self, changes: Sequence[Change]) -> list[Note]:
        """Which environments need a deployment for the plan to reach traffic
        (reconciler/checks/golive.py)."""
        to_deploy = golive.environments_to_deploy(self.manifest, changes)
        auto = golive.auto_deploying(self.manifest, to_deploy, self.record.environment)
        return golive.deployment_notes(to_deploy, self.record.rolled_back, auto)

    def _capacity(self) -> capacity.CapacityReport:
        created = {
            tuple(c.address.partition(".")[2].split("/"))
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

        def key(change: Change) -> tuple[int, int, int, int]:
            kind, parts = parse_address(change.address)
            project_index = projects.get(parts[0], len(projects))
            app_index = 0
            if len(parts) > 1:
                # apps the manifest does not list (prune.apps deletions) come last
                unlisted = app_counts.get(parts[0], 0)
                app_index = 1 + apps.get((parts[0], parts[1]), unlisted)
            env_index = ENVIRONMENT_NAMES.index(parts[2]) if len(parts) > 2 else -1  # type: ignore[arg-type]
            return project_index, app_index, env_index, _KIND_ORDER[kind]

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
        notes: list[Note] = [
            Note(
                "warning",
                f"--target {target} matches nothing the manifest manages: check its spelling "
                "(addresses look like app.shop/web or variable.shop/web/production/KEY)",
            )
            for target in self.scope.targets
            if target.parts[:3] not in self._manifest_paths()
        ]
        if included:
            notes.append(
                Note(
                    "info",
                    f"{len(included)} change(s) outside the targets are included because "
                    f"targeted changes depend on them: {', '.join(included)}",
                )
            )
        deletions = [c for c in changes if c.action in (Action.DELETE, Action.REPLACE)]
        if len(deletions) > self.options.max_deletes:
            notes.append(
                Note(
                    "warning",
                    f"this plan deletes {len(deletions)} objects, more than --max-deletes "
                    f"{self.options.max_deletes}: apply will refuse it unless --max-deletes is "
                    "raised",
                )
            )
        replaces = [c.address for c in changes if c.action is Action.REPLACE]
        if replaces and not self.options.allow_replace:
            notes.append(
                Note(
                    "warning",
                    f"{len(replaces)} app(s) must be replaced ({', '.join(replaces)}): apply "
                    "refuses this unless run with --allow-replace",
                )
            )
        if self.missing_sources:
            notes.append(
                Note(
                    "warning",
                    "secret(s) not available to this plan: "
                    + ", ".join(sorted(self.missing_sources))
                    + "; their values show as (known after apply), and apply refuses a plan "
                    "that must send them until they are available",
                )
            )
        if self.compared_by_presence:
            notes.append(
                Note(
                    "info",
                    f"{self.compared_by_presence} write-only variable(s) compared by presence "
                    "and kind only, because RECONCILER_FINGERPRINT_KEY is not set: a changed "
                    "secret value does not show as a change. Set the key so apply records a "
                    "fingerprint of each value and plans can compare them.",
                )
            )
        return notes


@dataclass
class _Reads:
    """What was read for one environment (None: not read)."""

    settings: Mapping[str, Any] | None = None
    variables: list[dict[str, Any]] | None = None
    policies: list[dict[str, Any]] | None = None
    domains: list[dict[str, Any]] | None = None

    @classmethod
    def fresh(cls) -> _Reads:
        return cls()

    def environment_id(self) -> str | None:
        if self.settings and self.settings.get("id"):
            return str(self.settings["id"])
        for domain in self.domains or ():
            if domain.get("environmentId"):
                return str(domain["environmentId"])
        return None


async def _nothing() -> None:
    return None


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
