"""Custom domains: `domain.<project>/<app>/<env>/<host>`, created and deleted per host.

Read with one `domains.listDomains` filtered by project, app and environment
for each environment whose `domains` the manifest manages. A host the
manifest adds that no read environment holds is looked up once with
`domains.getDomain`, because a host can be attached to only one environment of
the whole workspace: when it is attached somewhere the manifest does not
manage, the plan says where (apply would get a 409). A host moving between two
environments of the manifest is a delete there and a create here, the create
depending on the delete.

Hosts compare lower-cased without a trailing dot (the manifest loader does the
same for desired hosts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import ApiError, NotFound
from reconciler.manifest.model import Position
from reconciler.plan.changes import Action, Change, Note
from reconciler.plan.kinds.base import EnvironmentRef, address, make_call, require_fields

READ_OPERATION = "domains.listDomains"
LOOKUP_OPERATION = "domains.getDomain"


def host_of(domain: Mapping[str, Any]) -> str:
    return str(domain.get("domain", "")).lower().rstrip(".")


async def read_domains(client: Any, project_id: str, app_id: str, environment: str) -> list[dict]:
    body = {"project": project_id, "app": app_id, "environment": environment}
    return require_fields(READ_OPERATION, await client.list_all(READ_OPERATION, body), "domain")


async def lookup_domain(client: Any, host: str) -> dict[str, Any] | None:
    """Where `host` is attached in the workspace, or None when it is free."""
    try:
        found = await client.call(LOOKUP_OPERATION, {"domain": host})
    except NotFound:
        return None
    return require_fields(LOOKUP_OPERATION, found, "projectId", "appId", "environmentId")


ONE_ENVIRONMENT_ONLY = (
    "a domain can be in only one environment of the workspace, so apply would fail (409): "
    "remove it there first, or manage that environment's domains in this manifest so the plan "
    "moves it"
)
"""What to do about a host the manifest adds that is attached elsewhere (plan and status)."""


async def where_attached(client: Any, host: str) -> str | None:
    """Where `host` is attached in the workspace (`project/app/environment`, or its IDs when
    the key may not read those objects), None when it is free."""
    attached = await lookup_domain(client, host)
    if attached is None:
        return None
    try:
        return await locate(client, attached)
    except ApiError:
        return attachment_by_ids(attached, {})


def attachment_by_ids(domain: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """Where a looked-up domain is attached, in slugs where `labels` (IDs of environments,
    apps and projects -> their slugs) knows them, else by ID."""
    environment_id = str(domain.get("environmentId"))
    if environment_id in labels:
        return labels[environment_id]
    app_id, project_id = str(domain.get("appId")), str(domain.get("projectId"))
    if app_id in labels:
        return f"{labels[app_id]}, environment {environment_id}"
    project = labels.get(project_id, f"project {project_id}")
    return f"{project}, app {app_id}, environment {environment_id} (outside this manifest)"


async def locate(client: Any, domain: Mapping[str, Any]) -> str:
    """`project/app/environment` in slugs for a domain attached outside the manifest."""
    project_id, app_id = str(domain.get("projectId")), str(domain.get("appId"))
    project, app, environment = await asyncio.gather(
        client.call("projects.getProject", {"project": project_id}),
        client.call("apps.getApp", {"project": project_id, "app": app_id}),
        client.call(
            "environments.getEnvironment",
            {"project": project_id, "app": app_id, "environment": domain.get("environmentId")},
        ),
    )
    return f"{project.get('slug')}/{app.get('slug')}/{environment.get('slug')}"


@dataclass(frozen=True)
class EnvironmentDomains:
    """One environment whose domains the manifest manages, with what live state holds."""

    project: str
    app: str
    environment: str
    hosts: tuple[str, ...]
    positions: Mapping[str, Position | None]
    live: tuple[Mapping[str, Any], ...] | None  # None: the app is being created, nothing read
    ref: EnvironmentRef
    prune: bool

    def address_of(self, host: str) -> str:
        return address("domain", self.project, self.app, self.environment, host)


@dataclass
class DomainsPlan:
    changes: list[Change] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


def hosts_to_look_up(environments: Sequence[EnvironmentDomains]) -> list[str]:
    """Hosts the manifest adds that no read environment holds: only these need a getDomain."""
    held = {host_of(d) for env in environments for d in env.live or ()}
    new = []
    for env in environments:
        current = {host_of(d) for d in env.live or ()}
        new.extend(h for h in env.hosts if h not in current and h not in held)
    return sorted(set(new))


def plan_domains(
    environments: Sequence[EnvironmentDomains],
    lookups: Mapping[str, Mapping[str, Any] | None],
    *,
    describe: Callable[[Mapping[str, Any]], str],
    going_away: Mapping[str, str],
) -> DomainsPlan:
    """Create/delete changes for every managed environment's domains.

    `lookups` holds the getDomain result of each host from `hosts_to_look_up`; `describe`
    names where a looked-up domain is attached; `going_away` maps the ids of apps this plan
    deletes or replaces to their change address (their domains go with them).
    """
    result = DomainsPlan()
    wanted_in = {host: env for env in environments for host in env.hosts}
    held_in = {host_of(d): (env, d) for env in environments for d in env.live or ()}
    for env in environments:
        current = {host_of(d): d for d in env.live or ()}
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
                source_env, _ = held_in[host]
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
    domain: Mapping[str, Any],
    moving_to: EnvironmentDomains | None,
) -> Change:
    if moving_to is not None:
        reason = "moved"
        note = (f"moves to {moving_to.project}/{moving_to.app}/{moving_to.environment}: deleted "
                "here first, then created there")  # fmt: skip
    else:
        reason, note = "pruned", "not listed in the manifest and prune.domains is on"
    environment_id = domain.get("environmentId") or env.ref.environment_id
    return Change(
        address=env.address_of(host),
        kind="domain",
        action=Action.DELETE,
        before={"domain": host, "status": domain.get("status")},
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
            f"moves from {moved_from.project}/{moved_from.app}/{moved_from.environment}; "
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
                object_id=env.ref.environment_id,
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
    attached: Mapping[str, Any] | None,
    describe: Callable[[Mapping[str, Any]], str],
    going_away: Mapping[str, str],
    notes: list[Note],
) -> Change:
    """A create for a host no read environment holds, flagged when it is attached elsewhere."""
    if attached is None:
        return _create(env, host)
    where = describe(attached)
    app_change = going_away.get(str(attached.get("appId")))
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
