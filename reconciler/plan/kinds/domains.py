"""Custom domains: `domain.<project>/<app>/<env>/<host>`, created and deleted per host.

Read with one `domains.listDomains` filtered by project alone (the platform API
spec lets each filter work on its own), shared by the project's environments
whose `domains` the manifest manages: each takes the domains of its app and
environment ID (the planner hands it the ID its app's environment listing gave).
An environment whose ID no read gave, or the only one of its project to manage
domains, is read alone, filtered by project, app and environment. Either way the
plan records the same per-environment state, so the plan does not depend on how
it was read. A host the manifest adds that no read environment holds is looked up once with
`domains.getDomain`, because a host can be attached to only one environment of
the whole workspace: when it is attached somewhere the manifest does not
manage, the plan says where (apply would get a 409). Where several hosts need it and the
workspace holds no domain at all (an empty platform), one `listDomains` page says so and no
lookup is sent: each answer would be "not found". A host moving between two
environments of the manifest is a delete there and a create here, the create
depending on the delete.

Hosts compare lower-cased without a trailing dot (the manifest loader does the
same for desired hosts).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from reconciler.address import Address, TreePath
from reconciler.errors import ApiError, NotFound
from reconciler.json_types import JsonObject
from reconciler.manifest.model import UNSET, Environment, Position, freeze, listed
from reconciler.plan.changes import Action, Call, Change, Note
from reconciler.plan.kinds.base import (
    EnvironmentJob,
    EnvironmentKind,
    Location,
    NewDomain,
    Planning,
    Reread,
    lookup,
    make_call,
    require_fields,
    text_member,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.operations import Operation
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import object_answer

READ_OPERATION = "domains.listDomains"
LOOKUP_OPERATION = "domains.getDomain"


@dataclass(frozen=True)
class LiveDomain:
    """A custom domain as the platform answers it (the spec's `Domain`), parsed once where it
    is read: what the plan uses, typed, and the whole answer beside it (`raw`), members this
    reconciler does not know included. Only the host is required of every answer (the plan
    keys on it); an ID or the status an answer leaves out (or gives as no string) is None."""

    host: str
    """Lower-cased, without a trailing dot: as the manifest's hosts compare."""
    id: str | None
    project_id: str | None
    app_id: str | None
    environment_id: str | None
    status: str | None
    raw: JsonObject = field(repr=False, compare=False)

    @classmethod
    def parse(cls, operation: str, answer: JsonObject) -> LiveDomain:
        """`answer` read, an `UnexpectedResponse` naming `operation` when it names no host."""
        checked = require_fields(operation, answer, "domain")
        return cls(
            host=str(checked["domain"]).lower().rstrip("."),
            id=text_member(checked, "id"),
            project_id=text_member(checked, "projectId"),
            app_id=text_member(checked, "appId"),
            environment_id=text_member(checked, "environmentId"),
            status=text_member(checked, "status"),
            raw=freeze(checked),
        )


def parse_domains(found: Iterable[JsonObject]) -> tuple[LiveDomain, ...]:
    """The domains of a `listDomains` answer, each parsed (`LiveDomain.parse`)."""
    return tuple(LiveDomain.parse(READ_OPERATION, domain) for domain in found)


async def lookup_domain(platform: Platform, host: str) -> LiveDomain | None:
    """Where `host` is attached in the workspace, or None when it is free."""
    try:
        found = await platform.call(LOOKUP_OPERATION, {"domain": host})
    except NotFound:
        return None
    answer = object_answer(LOOKUP_OPERATION, found)
    checked = require_fields(LOOKUP_OPERATION, answer, "projectId", "appId", "environmentId")
    return LiveDomain.parse(LOOKUP_OPERATION, checked)


async def look_up_hosts(platform: Platform, hosts: Sequence[str]) -> list[LiveDomain | None]:
    """Where each of `hosts` is attached (`lookup_domain`), with one call instead of one each
    when the workspace holds no domain at all (a new platform, or one without domains): then
    every lookup's answer is known, "not found"."""
    if len(hosts) > 1 and await workspace_has_no_domain(platform):
        return [None] * len(hosts)
    return list(await asyncio.gather(*(lookup_domain(platform, host) for host in hosts)))


async def workspace_has_no_domain(platform: Platform) -> bool:
    """Whether the workspace's first page of domains, unfiltered, is empty. A listing that
    goes on never starts with an empty page (the client refuses one as no progress), so an
    empty first page is the whole workspace. Unknown (False) when it cannot be read."""
    try:
        page = await platform.call(READ_OPERATION, {"limit": 1})
    except ApiError:
        return False
    return isinstance(page, list) and not page


ONE_ENVIRONMENT_ONLY = (
    "a domain can be in only one environment of the workspace, so apply would fail (409): "
    "remove it there first, or manage that environment's domains in this manifest so the plan "
    "moves it"
)
"""What to do about a host the manifest adds that is attached elsewhere (plan and status)."""


async def where_attached(platform: Platform, host: str) -> str | None:
    """Where `host` is attached in the workspace (`project/app/environment`, or its IDs when
    the key may not read those objects), None when it is free."""
    attached = await lookup_domain(platform, host)
    if attached is None:
        return None
    try:
        return str(await locate(platform, attached))
    except ApiError:
        return attachment_by_ids(attached, {})


def attachment_by_ids(domain: LiveDomain, labels: Mapping[str, TreePath]) -> str:
    """Where a looked-up domain is attached, in slugs where `labels` (IDs of environments,
    apps and projects -> their positions) knows them, else by ID."""
    environment_id = str(domain.environment_id)
    if environment_id in labels:
        return str(labels[environment_id])
    app_id, project_id = str(domain.app_id), str(domain.project_id)
    if app_id in labels:
        return f"{labels[app_id]}, environment {environment_id}"
    project = labels[project_id].leaf if project_id in labels else project_id
    return f"project {project}, app {app_id}, environment {environment_id} (outside this manifest)"


async def locate(platform: Platform, domain: LiveDomain) -> TreePath:
    """Where, in slugs, a domain attached outside the manifest is."""
    project_id, app_id = str(domain.project_id), str(domain.app_id)
    slugs = await asyncio.gather(
        _slug(platform, "projects.getProject", {"project": project_id}),
        _slug(platform, "apps.getApp", {"project": project_id, "app": app_id}),
        _slug(
            platform,
            "environments.getEnvironment",
            {"project": project_id, "app": app_id, "environment": domain.environment_id},
        ),
    )
    return TreePath(tuple(slugs))


async def _slug(platform: Platform, operation: str, request: JsonObject) -> str:
    """The slug of the object `request` names (an answer without one is unexpected: the
    caller names the object by its IDs then)."""
    found = object_answer(operation, await platform.call(operation, request))
    answer = require_fields(operation, found, "slug")
    return str(answer["slug"])


Place = tuple[str | None, str | None]
"""Where a domain is attached, as a listing names it: (app ID, environment ID)."""


@dataclass(frozen=True)
class DomainListing:
    """What one `listDomains` read found (a project's domains, or one environment's), with
    the domains of each place indexed on first use: every environment of a project picks its
    share of one listing, and a scan of the whole listing for each would grow with the square
    of the project."""

    domains: tuple[LiveDomain, ...]

    @functools.cached_property
    def by_place(self) -> Mapping[Place, tuple[LiveDomain, ...]]:
        grouped: dict[Place, list[LiveDomain]] = {}
        for domain in self.domains:
            grouped.setdefault((domain.app_id, domain.environment_id), []).append(domain)
        return {place: tuple(domains) for place, domains in grouped.items()}


@dataclass(frozen=True)
class EnvironmentDomains:
    """One environment whose domains the manifest manages, with what live state holds."""

    project: str
    app: str
    environment: str
    hosts: tuple[str, ...]
    positions: Mapping[str, Position | None]
    live: tuple[LiveDomain, ...] | None  # None: the app is being created, nothing read
    ref: Location
    prune: bool

    @property
    def path(self) -> TreePath:
        return TreePath.of(self.project, self.app, self.environment)

    def address_of(self, host: str) -> str:
        return str(Address("domain", self.path.child(host)))


@dataclass
class DomainsPlan:
    changes: list[Change] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


def hosts_to_look_up(environments: Sequence[EnvironmentDomains]) -> list[str]:
    """Hosts the manifest adds that no read environment holds: only these need a getDomain."""
    held = {d.host for env in environments for d in env.live or ()}
    return sorted({h for env in environments for h in env.hosts if h not in held})


def plan_domains(
    environments: Sequence[EnvironmentDomains],
    lookups: Mapping[str, LiveDomain | None],
    *,
    describe: Callable[[LiveDomain], str],
    going_away: Mapping[str, str],
) -> DomainsPlan:
    """Create/delete changes for every managed environment's domains.

    `lookups` holds the getDomain result of each host from `hosts_to_look_up`; `describe`
    names where a looked-up domain is attached; `going_away` maps the ids of apps this plan
    deletes or replaces to their change address (their domains go with them).
    """
    result = DomainsPlan()
    wanted_in = {host: env for env in environments for host in env.hosts}
    held_in = {d.host: env for env in environments for d in env.live or ()}
    for env in environments:
        current = {d.host: d for d in env.live or ()}
        for host, domain in current.items():
            if host in env.hosts:
                continue
            moving_to = wanted_in.get(host)
            if moving_to is not None or env.prune:
                result.changes.append(_delete(env, host, domain, moving_to))
        for host in env.hosts:
            if host in current:
                continue
            if host in held_in:
                source_env = held_in[host]
                result.changes.append(_create(env, host, depends_on=source_env.address_of(host),
                                              moved_from=source_env))  # fmt: skip
                continue
            attached = lookups.get(host)
            result.changes.append(
                _create_checked(env, host, attached, describe, going_away, result.notes)
            )
    return result


def _delete(
    env: EnvironmentDomains,
    host: str,
    domain: LiveDomain,
    moving_to: EnvironmentDomains | None,
) -> Change:
    if moving_to is not None:
        reason = "moved"
        note = f"moves to {moving_to.path}: deleted here first, then created there"
    else:
        reason, note = "pruned", "not listed in the manifest and prune.domains is on"
    environment_id = domain.environment_id or env.ref.object_id
    return Change(
        address=env.address_of(host),
        kind="domain",
        action=Action.DELETE,
        before={"domain": host, "status": domain.status},
        after=None,
        calls=(make_call("domains.deleteDomain", {"domain": host}, object_id=environment_id),),
        reason=reason,
        notes=(note,),
    )


def _create(
    env: EnvironmentDomains,
    host: str,
    *,
    depends_on: str | None = None,
    moved_from: EnvironmentDomains | None = None,
    reason: str | None = None,
    notes: tuple[str, ...] = (),
) -> Change:
    if moved_from is not None:
        reason = "moved"
        notes = (
            *notes,
            f"moves from {moved_from.path}; "
            "its DNS records are issued again and must be verified",
        )
    return Change(
        address=env.address_of(host),
        kind="domain",
        action=Action.CREATE,
        before=None,
        after={"domain": host},
        calls=(
            make_call(
                "domains.createDomain",
                env.ref.body(domain=host),
                object_id=env.ref.object_id,
            ),
        ),
        reason=reason,
        notes=notes,
        depends_on=(depends_on,) if depends_on else (),
        position=env.positions.get(host),
    )


def _create_checked(
    env: EnvironmentDomains,
    host: str,
    attached: LiveDomain | None,
    describe: Callable[[LiveDomain], str],
    going_away: Mapping[str, str],
    notes: list[Note],
) -> Change:
    """A create for a host no read environment holds, flagged when it is attached elsewhere."""
    if attached is None:
        return _create(env, host)
    where = describe(attached)
    app_change = going_away.get(str(attached.app_id))
    if app_change is not None:
        return _create(
            env,
            host,
            depends_on=app_change,
            notes=(f"now attached to {where}, which this plan deletes first",),
        )
    message = f"{host} is already attached to {where}; {ONE_ENVIRONMENT_ONLY}"
    notes.append(Note("warning", message, env.address_of(host)))
    return _create(env, host, reason="attached_elsewhere", notes=(message,))


class DomainsKind(EnvironmentKind[DomainListing, DomainListing]):
    """`domain.<project>/<app>/<env>/<host>`: planned once every environment is read, since a
    host can move between two of them, or be attached anywhere in the workspace."""

    name = "domain"
    depth = 4
    container = False
    read_at = ReadAt.PROJECT  # per project, shared; per environment where it cannot be (`pick`)
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> DomainListing:
        found = await platform.list_all(READ_OPERATION, at.body())
        return DomainListing(parse_domains(found))

    def record(
        self, record: LiveRecord, at: Location, label: TreePath, found: DomainListing
    ) -> None:
        record.read(READ_OPERATION)
        record.state[f"domains {label}"] = sorted(d.host for d in found.domains)
        for domain in found.domains:
            if domain.environment_id:
                record.labels.setdefault(domain.environment_id, label)

    def pick(self, found: DomainListing, at: Location) -> DomainListing:
        """The domains of the environment at `at` in its project's listing (by app and
        environment ID, which a domain carries; its environment's name it does not)."""
        return DomainListing(found.by_place.get((at.app, at.object_id), ()))

    def environment_id(self, live: DomainListing) -> str | None:
        return next((d.environment_id for d in live.domains if d.environment_id), None)

    def manages(self, environment: Environment) -> bool:
        return environment.domains is not UNSET

    def plan(self, job: EnvironmentJob, live: DomainListing | None) -> None:
        environment = job.environment
        managed = EnvironmentDomains(
            project=job.project,
            app=job.app,
            environment=environment.name,
            hosts=tuple(d.host for d in listed(environment.domains)),
            positions={d.host: d.pos for d in listed(environment.domains)},
            live=None if live is None else live.domains,
            ref=job.at,
            prune=job.planning.prune.domains,
        )
        job.planning.state(_Collected).environments.append((managed, job.depends_on))

    async def finish(self, planning: Planning) -> None:
        await _DomainPlanning(planning).run()

    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        # a host moving out of this environment first, then the hosts it gains
        if change.action is Action.DELETE:
            return ApplyPhase.DOMAIN_DELETIONS
        return ApplyPhase.DOMAIN_CREATIONS

    def unique_key(self, change: Change) -> str | None:
        return Address.parse(change.address).leaf

    def reread(self, platform: Platform, call: Call) -> Reread | None:
        if not call.operation.creates:
            return None
        return lookup(platform, LOOKUP_OPERATION, {"domain": call.body["domain"]}, ("domainId",))

    def rollout_reason(self, change: Change) -> str | None:
        return None  # a domain serves the deployment running, whichever it is

    def configures_deployment(self) -> bool:
        return False

    def created(self, change: Change, operation: Operation, data: object) -> NewDomain | None:
        if not operation.creates or not isinstance(data, Mapping):
            return None
        records = data.get("dnsRecords")
        if not isinstance(records, list):
            return None
        host = data.get("domain") or Address.parse(change.address).leaf
        return NewDomain(change.address, str(host), tuple(records))


@dataclass
class _Collected:
    """Each managed environment's domains, with what its changes wait for, as one plan
    planned them: `finish` plans them together."""

    environments: list[tuple[EnvironmentDomains, tuple[str, ...]]] = field(default_factory=list)


class _DomainPlanning:
    """The domains of every managed environment, planned together once all are read."""

    def __init__(self, planning: Planning) -> None:
        self.planning = planning
        self.record = planning.record
        self.environments = list(planning.state(_Collected).environments)

    async def run(self) -> None:
        planning = self.planning
        managed = [env for env, _ in self.environments]
        hosts = hosts_to_look_up(managed)
        found = await look_up_hosts(planning.platform, hosts)
        lookups = dict(zip(hosts, found, strict=True))
        for host, attached in lookups.items():
            if attached is None:
                self.record.read(LOOKUP_OPERATION)
                self.record.state[f"domain {host}"] = None
                continue
            self.record.read(LOOKUP_OPERATION, attached.environment_id)
            self.record.state[f"domain {host}"] = {
                "projectId": attached.project_id,
                "appId": attached.app_id,
                "environmentId": attached.environment_id,
            }
        await self._name_attachments([a for a in lookups.values() if a is not None])
        managed.extend(self._unread_sources(managed, lookups))
        planned = plan_domains(
            managed,
            lookups,
            describe=lambda domain: attachment_by_ids(domain, self.record.labels),
            going_away=planning.going_away,
        )
        depends_by_environment: dict[tuple[str, ...], tuple[str, ...]] = {
            (env.project, env.app, env.environment): deps for env, deps in self.environments
        }
        for change in planned.changes:
            scope = Address.parse(change.address).parent.slugs
            planning.add(change, depends_by_environment.get(scope, ()))
        for note in planned.notes:
            planning.note(note)

    def _unread_sources(
        self,
        managed: Sequence[EnvironmentDomains],
        lookups: Mapping[str, LiveDomain | None],
    ) -> list[EnvironmentDomains]:
        """Environments of the manifest that hold a moving host but were not read (`--target`).

        Their domains are managed, so the host moves (deleted there first) instead of being a
        conflict. They stand in the domain plan with only the moving hosts as live state and no
        hosts of their own, so nothing else about them is planned.
        """
        read = {(env.project, env.app, env.environment) for env in managed}
        found: dict[tuple[str, ...], EnvironmentDomains] = {}
        for attached in lookups.values():
            if attached is None or str(attached.app_id) in self.planning.going_away:
                continue
            path = self.record.labels.get(str(attached.environment_id))
            where = () if path is None else path.slugs
            if len(where) != 3 or where in read or not self.planning.manages(KIND, *where):
                continue
            p, a, name = where
            ref = Location(
                str(attached.project_id), str(attached.app_id), name, attached.environment_id
            )
            previous = found.get(where)
            live = (*(previous.live or ()), attached) if previous else (attached,)
            found[where] = EnvironmentDomains(
                p, a, name, hosts=(), positions={}, live=live, ref=ref, prune=False
            )
        return list(found.values())

    async def _name_attachments(self, attached: Sequence[LiveDomain]) -> None:
        """Learn the slugs of environments outside the manifest that hold a host it adds.

        Only reached when a host is attached elsewhere (a conflict the plan reports), so the
        plan can say `blog/site/production` instead of three IDs. Best effort: a key that may
        not read those objects just leaves the IDs in the message.
        """
        labels = self.record.labels
        unknown = {
            str(a.environment_id): a for a in attached if str(a.environment_id) not in labels
        }
        found = await asyncio.gather(
            *(locate(self.planning.platform, a) for a in unknown.values()),
            return_exceptions=True,
        )
        for environment_id, label in zip(unknown, found, strict=True):
            if isinstance(label, TreePath):
                labels[environment_id] = label


KIND = register(DomainsKind())
