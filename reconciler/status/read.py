"""`reconciler status`: what is running and what is still to do, per environment.

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
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.errors import NotFound
from reconciler.manifest.model import ENVIRONMENT_NAMES, App, Manifest, listed
from reconciler.plan.kinds.domains import ONE_ENVIRONMENT_ONLY, where_attached

FORMAT_VERSION = "1"
FINAL_DEPLOYMENT_STATUSES = frozenset(
    {"ready", "failed", "cancelled", "superseded", "skipped", "stopped"}
)
DOMAIN_STATUSES = ("pending", "verifying", "verified", "failed")
NOT_CREATED = "not created"
ATTACHED_ELSEWHERE = "attached elsewhere"


class Client(Protocol):
    async def call(self, operation: str, body: Mapping[str, Any]) -> Any: ...

    async def list_all(self, operation: str, body: Mapping[str, Any]) -> list[dict]: ...


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
        git = data.get("git") if isinstance(data.get("git"), Mapping) else {}
        docker = data.get("docker") if isinstance(data.get("docker"), Mapping) else {}
        error = data.get("error") if isinstance(data.get("error"), Mapping) else {}
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
    def address(self) -> str:
        return f"{self.project}/{self.app}/{self.environment}"


@dataclass(frozen=True)
class StatusReport:
    environments: tuple[EnvironmentStatus, ...]


# --- gathering ----------------------------------------------------------------


async def gather_status(manifest: Manifest, client: Client) -> StatusReport:
    """The status of every environment the manifest names (both, for an app naming none).

    Projects and apps pinned by `id:` are found by it, so a pending rename still shows the
    live object; the report names them as the manifest does."""
    refs = [p.id or p.slug for p in manifest.projects]
    projects = await asyncio.gather(*(_project_apps(client, ref) for ref in refs))
    managed = frozenset(
        f"{project.slug}/{app.slug}/{environment.name}"
        for project in manifest.projects
        for app in listed(project.apps)
        for environment in app.environments
        if isinstance(environment.domains, tuple)
    )
    jobs = []
    for project, ref, live_apps in zip(manifest.projects, refs, projects, strict=True):
        for app in listed(project.apps):
            live_app = _find(live_apps, app)
            names = [e.name for e in app.environments] or list(ENVIRONMENT_NAMES)
            hosts_by_env = {
                e.name: DomainsWanted([d.host for d in e.domains], manifest.prune.domains)
                for e in app.environments
                if isinstance(e.domains, tuple)
            }
            for name in names:
                where = Where(project.slug, app.slug, name, ref)
                wanted = hosts_by_env.get(name, UNMANAGED_DOMAINS)
                jobs.append(_environment_status(client, where, live_app, wanted, managed))
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


async def _project_apps(client: Client, project_ref: str) -> list[Mapping[str, Any]]:
    try:
        apps = await client.list_all("apps.listApps", {"project": project_ref})
    except NotFound:  # the project is not created yet: every app shows as missing
        return []
    return [a for a in apps if isinstance(a, Mapping)]


def _find(live_apps: Sequence[Mapping[str, Any]], app: App) -> Mapping[str, Any] | None:
    key, wanted = ("id", app.id) if app.id else ("slug", app.slug)
    return next((a for a in live_apps if a.get(key) == wanted), None)


async def _environment_status(
    client: Client,
    where: Where,
    live_app: Mapping[str, Any] | None,
    wanted: DomainsWanted,
    managed: frozenset[str],
) -> EnvironmentStatus:
    project, app, environment = where.project, where.app, where.environment
    if live_app is None:
        missing = tuple(DomainInfo(h, NOT_CREATED, True) for h in sorted(wanted.hosts))
        found = await _where_missing_hosts_are(client, missing, managed)
        return EnvironmentStatus(project, app, environment, app_exists=False, domains=found)
    body = {
        "project": where.project_ref,
        "app": str(live_app.get("slug", app)),
        "environment": environment,
    }
    (serving, newer), live_domains = await asyncio.gather(
        _deployments(client, body, live_app), client.list_all("domains.listDomains", body)
    )
    return EnvironmentStatus(
        project,
        app,
        environment,
        app_exists=True,
        rolled_back=environment == "production" and live_app.get("isRolledBack") is True,
        serving=serving,
        newer=newer,
        domains=await _where_missing_hosts_are(client, _domains(live_domains, wanted), managed),
    )


async def _where_missing_hosts_are(
    client: Client, found: tuple[DomainInfo, ...], managed: frozenset[str]
) -> tuple[DomainInfo, ...]:
    """Manifest hosts not in their environment, looked up in the whole workspace (as the plan
    does): one attached to another environment says where, instead of "not created"."""
    missing = [d for d in found if d.status == NOT_CREATED]
    places = await asyncio.gather(*(where_attached(client, d.host) for d in missing))
    located = {
        d.host: dataclasses.replace(
            d, status=ATTACHED_ELSEWHERE, attached_to=where, moved_by_next_apply=where in managed
        )
        for d, where in zip(missing, places, strict=True)
        if where is not None
    }
    return tuple(located.get(d.host, d) for d in found)


async def _deployments(
    client: Client, body: Mapping[str, str], live_app: Mapping[str, Any]
) -> tuple[DeploymentInfo | None, DeploymentInfo | None]:
    page = await client.call("deployments.listDeployments", {**body, "limit": 1})
    items = page if isinstance(page, list) else []
    newest = DeploymentInfo.from_api(items[0]) if items and isinstance(items[0], Mapping) else None
    if body["environment"] != "production":
        return newest, None
    current_id = live_app.get("currentDeploymentId")
    if not current_id:
        return None, newest
    if newest is not None and newest.id == current_id:
        return newest, None
    current = DeploymentInfo.from_api(
        await client.call("deployments.getDeployment", {"deploymentId": current_id})
    )
    return current, newest


def _domains(live: Sequence[Mapping[str, Any]], wanted: DomainsWanted) -> tuple[DomainInfo, ...]:
    hosts = {h.lower() for h in wanted.hosts}
    seen: dict[str, DomainInfo] = {}
    for domain in live:
        host = str(domain.get("domain", "")).lower()
        records = tuple(
            DnsRecordInfo(
                type=str(r.get("type")),
                name=str(r.get("name")),
                value=str(r.get("value")),
                ttl=r.get("ttl") if isinstance(r.get("ttl"), int) else None,
                note=r.get("note"),
            )
            for r in domain.get("dnsRecords") or []
            if isinstance(r, Mapping) and r.get("verified") is not True
        )
        listed = host in hosts if wanted.managed else None
        seen[host] = DomainInfo(
            host=host,
            status=str(domain.get("status", "unknown")),
            in_manifest=listed,
            verification_error=domain.get("verificationError") or None,
            records_not_seen=records,
            removed_by_next_apply=listed is False and wanted.prune,
        )
    for host in hosts - seen.keys():
        seen[host] = DomainInfo(host, NOT_CREATED, True)
    return tuple(seen[h] for h in sorted(seen))


# --- rendering ----------------------------------------------------------------


def format_age(created_at_ms: int | None, now_ms: int) -> str:
    """`45s`, `5m`, `3h`, `2d`: the largest whole unit; a future time reads as `0s`."""
    if created_at_ms is None:
        return "-"
    seconds = max(0, (now_ms - created_at_ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def deployment_to_dict(info: DeploymentInfo | None, now_ms: int) -> dict[str, Any] | None:
    if info is None:
        return None
    error = None
    if info.error_code or info.error_message:
        error = {"code": info.error_code, "step": info.error_step, "message": info.error_message}
    return {
        "id": info.id,
        "status": info.status,
        "final": info.is_final,
        "isCurrent": info.is_current,
        "image": info.image,
        "commitSha": info.commit_sha,
        "branch": info.branch,
        "createdAt": info.created_at,
        "age": format_age(info.created_at, now_ms),
        "error": error,
    }


def report_to_dict(report: StatusReport, now_ms: int) -> dict[str, Any]:
    """The documented `--format json` shape (readers ignore unknown fields)."""
    return {
        "format_version": FORMAT_VERSION,
        "environments": [
            {
                "project": env.project,
                "app": env.app,
                "environment": env.environment,
                "appExists": env.app_exists,
                "rolledBack": env.rolled_back,
                "deployment": deployment_to_dict(env.serving, now_ms),
                "newerDeployment": deployment_to_dict(env.newer, now_ms),
                "domains": [
                    {
                        "domain": d.host,
                        "status": d.status,
                        "inManifest": d.in_manifest,
                        "removedByNextApply": d.removed_by_next_apply,
                        "verificationError": d.verification_error,
                        "attachedTo": d.attached_to,
                        "movedByNextApply": d.moved_by_next_apply,
                        "dnsRecordsNotSeen": [
                            {"type": r.type, "name": r.name, "value": r.value, "ttl": r.ttl}
                            for r in d.records_not_seen
                        ],
                    }
                    for d in env.domains
                ],
            }
            for env in report.environments
        ],
    }


def render_json(report: StatusReport, now_ms: int) -> str:
    return json.dumps(report_to_dict(report, now_ms), indent=2, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Tables:
    """The report as rows, shared by the plain-text and the rich renderers."""

    deployments: list[tuple[str, ...]]
    domains: list[tuple[str, ...]]
    records: list[tuple[str, ...]]
    notes: list[str]


DEPLOYMENT_HEADER = ("ENVIRONMENT", "DEPLOYMENT", "STATUS", "SOURCE", "AGE", "NOTE")
DOMAIN_HEADER = ("DOMAIN", "ENVIRONMENT", "STATUS", "DETAIL")
RECORD_HEADER = ("DOMAIN", "TYPE", "NAME", "VALUE", "TTL")


def report_tables(report: StatusReport, now_ms: int) -> Tables:
    tables = Tables([], [], [], [])
    for env in report.environments:
        tables.deployments.extend(_deployment_rows(env, now_ms))
        for domain in env.domains:
            tables.domains.append((domain.host, env.address, domain.status, _domain_detail(domain)))
            if domain.status not in ("verified", NOT_CREATED, ATTACHED_ELSEWHERE):
                tables.records.extend(
                    (domain.host, r.type, r.name, r.value, "-" if r.ttl is None else str(r.ttl))
                    for r in domain.records_not_seen
                )
        if env.rolled_back:
            tables.notes.append(
                f"{env.project}/{env.app} is rolled back: new production deployments do not take "
                "over until one is promoted."
            )
    return tables


def _deployment_rows(env: EnvironmentStatus, now_ms: int) -> list[tuple[str, ...]]:
    if not env.app_exists:
        return [(env.address, "-", "app not created", "-", "-", "run `reconciler apply`")]
    if env.serving is None and env.newer is None:
        return [(env.address, "-", "no deployments yet", "-", "-", "")]
    rows = []
    for info, role in ((env.serving, "serving"), (env.newer, "newer")):
        if info is None:
            continue
        note = [] if role == "serving" else ["newer, not serving"]
        if role == "serving" and env.rolled_back:
            note.append("rolled back")
        if env.environment == "production" and role == "serving" and info.is_current:
            note.insert(0, "current")
        if info.error_code or info.error_message:
            note.append(_error_note(info))
        status = info.status if info.is_final else f"{info.status} (in progress)"
        rows.append(
            (
                env.address,
                info.id,
                status,
                info.source,
                format_age(info.created_at, now_ms),
                "; ".join(note),
            )
        )
    if env.serving is None and env.environment == "production":
        rows.insert(0, (env.address, "-", "nothing serving yet", "-", "-", ""))
    return rows


ERROR_MESSAGE_WIDTH = 100


def _error_note(info: DeploymentInfo) -> str:
    note = f"error {info.error_code or 'unknown'}"
    if info.error_step:
        note += f" at {info.error_step}"
    if info.error_message:
        message = " ".join(info.error_message.split())  # one line in a table cell
        if len(message) > ERROR_MESSAGE_WIDTH:
            message = message[: ERROR_MESSAGE_WIDTH - 1] + "…"
        note += f": {message}"
    return note


def _domain_detail(domain: DomainInfo) -> str:
    if domain.status == NOT_CREATED:
        return "in the manifest, not on the platform: run `reconciler apply`"
    if domain.status == ATTACHED_ELSEWHERE:
        if domain.moved_by_next_apply:
            return f"attached to {domain.attached_to}: the next apply moves it here"
        return f"attached to {domain.attached_to}; {ONE_ENVIRONMENT_ONLY}"
    parts = []
    if domain.removed_by_next_apply:
        parts.append("not in the manifest: the next apply removes it")
    elif domain.in_manifest is False:
        parts.append("not in the manifest (prune.domains is off: left alone)")
    if domain.verification_error:
        parts.append(domain.verification_error)
    if domain.status == "failed":
        parts.append("fix the DNS records, then verify again (domains.verifyDomain)")
    elif domain.status != "verified" and domain.records_not_seen:
        parts.append(f"{len(domain.records_not_seen)} DNS record(s) not seen yet")
    return "; ".join(parts)


def render_text(report: StatusReport, now_ms: int) -> str:
    """Plain aligned text, for logs and pipes."""
    tables = report_tables(report, now_ms)
    out = ["Deployments", *_aligned(DEPLOYMENT_HEADER, tables.deployments)]
    if tables.domains:
        out += ["", "Domains", *_aligned(DOMAIN_HEADER, tables.domains)]
    if tables.records:
        out += [
            "",
            "DNS records to create (not seen yet)",
            *_aligned(RECORD_HEADER, tables.records),
        ]
    if tables.notes:
        out += ["", *(f"Warning: {note}" for note in tables.notes)]
    return "\n".join(out) + "\n"


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


STATUS_STYLES = {"ready": "green", "verified": "green", "failed": "red", NOT_CREATED: "yellow"}


def render_rich(report: StatusReport, now_ms: int, console: Any) -> None:
    """Tables for a terminal (a `rich.console.Console`). DNS records are printed as aligned
    lines that the terminal may soft-wrap, never cut or folded: people copy them."""
    from rich.table import Table
    from rich.text import Text

    tables = report_tables(report, now_ms)
    for title, header, rows in (
        ("Deployments", DEPLOYMENT_HEADER, tables.deployments),
        ("Domains", DOMAIN_HEADER, tables.domains),
    ):
        if not rows and title != "Deployments":
            continue
        table = Table(title=title, title_justify="left")
        for name in header:
            table.add_column(name, overflow="fold")
        for row in rows:
            style = STATUS_STYLES.get(row[2].split(" ")[0], "yellow")
            cells = [_escape(cell) for cell in row]
            cells[2] = f"[{style}]{cells[2]}[/]"
            table.add_row(*cells)
        console.print(table)
    if tables.records:
        console.print("[bold]DNS records to create (not seen yet)[/]")
        for line in _aligned(RECORD_HEADER, tables.records):
            console.print(Text(line), soft_wrap=True)
    for note in tables.notes:
        console.print(f"[yellow]Warning:[/] {_escape(note)}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(str(text))
