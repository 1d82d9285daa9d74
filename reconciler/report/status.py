"""`reconciler status` as people and tools read it: aligned text, rich tables, JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from reconciler.plan.kinds.domains import ONE_ENVIRONMENT_ONLY
from reconciler.report.tables import DNS_RECORD_HEADER, aligned
from reconciler.status.read import (
    ATTACHED_ELSEWHERE,
    FORMAT_VERSION,
    NOT_CREATED,
    DeploymentInfo,
    DomainInfo,
    EnvironmentStatus,
    StatusReport,
)

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
                f"{env.path.parent} is rolled back: new production deployments do not take "
                "over until one is promoted."
            )
    return tables


def _deployment_rows(env: EnvironmentStatus, now_ms: int) -> list[tuple[str, ...]]:
    if not env.app_exists:
        return [(env.address, "-", "app not created", "-", "-", "run `reconciler apply`")]
    if env.serving is None and env.newer is None:
        return [(env.address, "-", "no deployments yet", "-", "-", "")]
    rows: list[tuple[str, ...]] = []
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
    out = ["Deployments", *aligned(DEPLOYMENT_HEADER, tables.deployments)]
    if tables.domains:
        out += ["", "Domains", *aligned(DOMAIN_HEADER, tables.domains)]
    if tables.records:
        out += [
            "",
            "DNS records to create (not seen yet)",
            *aligned(DNS_RECORD_HEADER, tables.records),
        ]
    if tables.notes:
        out += ["", *(f"Warning: {note}" for note in tables.notes)]
    return "\n".join(out) + "\n"


UNCUT_COLUMNS = frozenset({"ENVIRONMENT", "DEPLOYMENT", "DOMAIN", "AGE"})
"""Columns a terminal's table never cuts: what people copy (IDs, names) and short values."""

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
        # no lines, two spaces between columns: 80 columns hold the IDs and names whole, and
        # the other columns wrap
        table = Table(title=title, title_justify="left", box=None, padding=(0, 2, 0, 0))
        for name in header:
            table.add_column(name, overflow="fold", no_wrap=name in UNCUT_COLUMNS)
        for row in rows:
            style = STATUS_STYLES.get(row[2].split(" ")[0], "yellow")
            cells = [_escape(cell) for cell in row]
            cells[2] = f"[{style}]{cells[2]}[/]"
            table.add_row(*cells)
        console.print(table)
    if tables.records:
        console.print("[bold]DNS records to create (not seen yet)[/]")
        for line in aligned(DNS_RECORD_HEADER, tables.records):
            console.print(Text(line), soft_wrap=True)
    for note in tables.notes:
        console.print(f"[yellow]Warning:[/] {_escape(note)}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(str(text))
