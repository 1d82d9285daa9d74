"""`reconciler status`: what is running and what is still to do, per environment (read and
modelled here, rendered by `reconciler.report.status`).

For every environment of the manifest: the deployment serving it (production:
the app's current deployment; preview: the newest one), a newer deployment
when one exists that is not serving (in progress, failed, or held back by a
rollback), and every domain with its verification status and the DNS records
the platform has not seen yet.

Reads are few and concurrent: one `apps.listApps` per project, then per
environment one `deployments.listDeployments` (limit 1) and one
`domains.listDomains` filtered to that environment; a production deployment
that is current but not the newest costs one `deployments.getDeployment`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.address import TreePath
from reconciler.errors import NotFound
from reconciler.json_types import JsonObject
from reconciler.manifest.model import ENVIRONMENT_NAMES, Manifest, listed
from reconciler.plan.kinds import domains
from reconciler.plan.kinds.app import LiveApp, LiveApps, match_live_app, parse_apps
from reconciler.plan.kinds.domains import LiveDomain, parse_domains, where_attached
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import FINAL_DEPLOYMENT_STATUSES, object_answer, object_member

FORMAT_VERSION = "1"
DOMAIN_STATUSES = ("pending", "verifying", "verified", "failed")
NOT_CREATED = "not created"
ATTACHED_ELSEWHERE = "attached elsewhere"


# --- the report -------------------------------------------------------------


@dataclass(frozen=True)
class DeploymentInfo:
    id: str
    status: str
    is_current: bool
    created_at: int | None
    image: str | None = None
    commit_sha: str | None = None
    branch: str | None = None
    error_code: str | None = None
    error_step: str | None = None
    error_message: str | None = None

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_DEPLOYMENT_STATUSES

    @property
    def source(self) -> str:
        """What it runs, for people: the image reference or the short commit (and branch)."""
        if self.image:
            return self.image
        if self.commit_sha:
            commit = self.commit_sha[:7]
            return f"{commit} ({self.branch})" if self.branch else commit
        return self.branch or "-"

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> DeploymentInfo:
        git = object_member(data, "git")
        docker = object_member(data, "docker")
        error = object_member(data, "error")
        created = data.get("createdAt")
        return cls(
            id=str(data.get("id", "?")),
            status=str(data.get("status", "unknown")),
            is_current=data.get("isCurrent") is True,
            created_at=created if isinstance(created, int) else None,
            image=docker.get("image"),
            commit_sha=git.get("commitSha"),
            branch=git.get("branch"),
            error_code=error.get("code"),
            error_step=error.get("step"),
            error_message=error.get("message"),
        )


@dataclass(frozen=True)
class DnsRecordInfo:
    type: str
    name: str
    value: str
    ttl: int | None
    note: str | None = None

    @classmethod
    def from_api(cls, record: JsonObject) -> DnsRecordInfo:
        """One of a domain's `dnsRecords` (the spec's `DnsRecord`)."""
        ttl, note = record.get("ttl"), record.get("note")
        return cls(
            type=str(record.get("type")),
            name=str(record.get("name")),
            value=str(record.get("value")),
            ttl=ttl if isinstance(ttl, int) else None,
            note=note if isinstance(note, str) else None,
        )


@dataclass(frozen=True)
class DomainInfo:
    host: str
    status: str
    """One of DOMAIN_STATUSES, NOT_CREATED for a manifest host not on the platform yet, or
    ATTACHED_ELSEWHERE for one attached to another environment of the workspace."""
    in_manifest: bool | None
    """None when the manifest leaves this environment's domains unmanaged."""
    verification_error: str | None = None
    records_not_seen: tuple[DnsRecordInfo, ...] = ()
    removed_by_next_apply: bool = False
    """Live, not in a manifest that manages the environment's domains, and prune.domains on."""
    attached_to: str | None = None
    """ATTACHED_ELSEWHERE: the environment holding the host, `project/app/environment`."""
    moved_by_next_apply: bool = False
    """ATTACHED_ELSEWHERE to an environment whose domains the manifest manages: apply moves it."""


@dataclass(frozen=True)
class EnvironmentStatus:
    project: str
    app: str
    environment: str
    app_exists: bool
    rolled_back: bool = False
    serving: DeploymentInfo | None = None
    """Production: the current deployment; preview: the newest one."""
    newer: DeploymentInfo | None = None
    """Production only: the newest deployment when it is not the one serving."""
    domains: tuple[DomainInfo, ...] = ()

    @property
    def path(self) -> TreePath:
        return TreePath.of(self.project, self.app, self.environment)

    @property
    def address(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class StatusReport:
    environments: tuple[EnvironmentStatus, ...]


# --- gathering ----------------------------------------------------------------


async def gather_status(manifest: Manifest, platform: Platform) -> StatusReport:
    """The status of every environment the manifest names (both, for an app naming none).

    Projects and apps pinned by `id:` are found by it, so a pending rename still shows the
    live object; the report names them as the manifest does."""
    refs = [p.id or p.slug for p in manifest.projects]
    projects = await asyncio.gather(*(_project_apps(platform, ref) for ref in refs))
    managed = frozenset(
        str(TreePath.of(project.slug, app.slug, environment.name))
        for project in manifest.projects
        for app in listed(project.apps)
        for environment in app.environments
        if isinstance(environment.domains, tuple)
    )
    jobs = []
    for project, ref, live_apps in zip(manifest.projects, refs, projects, strict=True):
        indexed = LiveApps(live_apps)
        pinned = {a.id for a in listed(project.apps) if a.id}
        for app in listed(project.apps):
            live_app = match_live_app(app, indexed, pinned)
            names = [e.name for e in app.environments] or list(ENVIRONMENT_NAMES)
            hosts_by_env = {
                e.name: DomainsWanted([d.host for d in e.domains], manifest.prune.domains)
                for e in app.environments
                if isinstance(e.domains, tuple)
            }
            for name in names:
                where = Where(project.slug, app.slug, name, ref)
                wanted = hosts_by_env.get(name, UNMANAGED_DOMAINS)
                jobs.append(_environment_status(platform, where, live_app, wanted, managed))
    return StatusReport(tuple(await asyncio.gather(*jobs)))


@dataclass(frozen=True)
class DomainsWanted:
    """The hosts the manifest lists for an environment (`managed` False: it lists none)."""

    hosts: Sequence[str]
    prune: bool
    managed: bool = True


UNMANAGED_DOMAINS = DomainsWanted((), prune=False, managed=False)


@dataclass(frozen=True)
class Where:
    """An environment as the manifest names it, and the project reference to read it with."""

    project: str
    app: str
    environment: str
    project_ref: str


async def _project_apps(platform: Platform, project_ref: str) -> list[LiveApp]:
    try:
        apps = await platform.list_all("apps.listApps", {"project": project_ref})
    except NotFound:  # the project is not created yet: every app shows as missing
        return []
    return parse_apps(apps)


async def _environment_status(
    platform: Platform,
    where: Where,
    live_app: LiveApp | None,
    wanted: DomainsWanted,
    managed: frozenset[str],
) -> EnvironmentStatus:
    project, app, environment = where.project, where.app, where.environment
    if live_app is None:
        missing = tuple(DomainInfo(h, NOT_CREATED, True) for h in sorted(wanted.hosts))
        found = await _where_missing_hosts_are(platform, missing, managed)
        return EnvironmentStatus(project, app, environment, app_exists=False, domains=found)
    body = {
        "project": where.project_ref,
        "app": live_app.slug,
        "environment": environment,
    }
    (serving, newer), live_domains = await asyncio.gather(
        _deployments(platform, body, live_app), platform.list_all(domains.READ_OPERATION, body)
    )
    return EnvironmentStatus(
        project,
        app,
        environment,
        app_exists=True,
        rolled_back=environment == "production" and live_app.rolled_back,
        serving=serving,
        newer=newer,
        domains=await _where_missing_hosts_are(
            platform, _domains(parse_domains(live_domains), wanted), managed
        ),
    )


async def _where_missing_hosts_are(
    platform: Platform, found: tuple[DomainInfo, ...], managed: frozenset[str]
) -> tuple[DomainInfo, ...]:
    """Manifest hosts not in their environment, looked up in the whole workspace (as the plan
    does): one attached to another environment says where, instead of "not created"."""
    missing = [d for d in found if d.status == NOT_CREATED]
    places = await asyncio.gather(*(where_attached(platform, d.host) for d in missing))
    located = {
        d.host: dataclasses.replace(
            d, status=ATTACHED_ELSEWHERE, attached_to=where, moved_by_next_apply=where in managed
        )
        for d, where in zip(missing, places, strict=True)
        if where is not None
    }
    return tuple(located.get(d.host, d) for d in found)


async def _deployments(
    platform: Platform, body: Mapping[str, str], live_app: LiveApp
) -> tuple[DeploymentInfo | None, DeploymentInfo | None]:
    page = await platform.call("deployments.listDeployments", {**body, "limit": 1})
    items = page if isinstance(page, list) else []
    newest = DeploymentInfo.from_api(items[0]) if items and isinstance(items[0], Mapping) else None
    if body["environment"] != "production":
        return newest, None
    current_id = live_app.raw.get("currentDeploymentId")
    if not current_id:
        return None, newest
    if newest is not None and newest.id == current_id:
        return newest, None
    found = await platform.call("deployments.getDeployment", {"deploymentId": current_id})
    current = DeploymentInfo.from_api(object_answer("deployments.getDeployment", found))
    return current, newest


def _domains(live: Sequence[LiveDomain], wanted: DomainsWanted) -> tuple[DomainInfo, ...]:
    """The environment's domains (hosts as the plan compares them: lower-cased, without a
    trailing dot), and the manifest's hosts it does not hold yet."""
    hosts = {h.lower() for h in wanted.hosts}
    seen: dict[str, DomainInfo] = {}
    for domain in live:
        listed = domain.host in hosts if wanted.managed else None
        error = domain.raw.get("verificationError")
        seen[domain.host] = DomainInfo(
            host=domain.host,
            status="unknown" if domain.status is None else domain.status,
            in_manifest=listed,
            verification_error=error if isinstance(error, str) and error else None,
            records_not_seen=_records_not_seen(domain),
            removed_by_next_apply=listed is False and wanted.prune,
        )
    for host in hosts - seen.keys():
        seen[host] = DomainInfo(host, NOT_CREATED, True)
    return tuple(seen[h] for h in sorted(seen))


def _records_not_seen(domain: LiveDomain) -> tuple[DnsRecordInfo, ...]:
    records = domain.raw.get("dnsRecords")  # frozen: a tuple
    return tuple(
        DnsRecordInfo.from_api(record)
        for record in (records if isinstance(records, Sequence) else ())
        if isinstance(record, Mapping) and record.get("verified") is not True
    )
