"""Manifest + live state -> the checked plan: the diff, then everything the checks say of it."""

from __future__ import annotations

import dataclasses
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from reconciler.checks.overrides import compared, overrides
from reconciler.checks.static import static_findings
from reconciler.manifest.model import ChecksSettings, Manifest
from reconciler.pipeline.observed import CallObserver, observed
from reconciler.plan.changes import Note, Plan
from reconciler.plan.options import PlanOptions
from reconciler.plan.plan_rules import plan_findings
from reconciler.platform.client import PlatformClient


@dataclass(frozen=True)
class Connection:
    """How to reach the platform: `--base-url` (or `local[:PATH]`), `--parallelism`, `-v`."""

    base_url: str | None
    parallelism: int = 10
    verbose: bool = False


def connected(
    connection: Connection, *, read_only: bool
) -> AbstractAsyncContextManager[PlatformClient]:
    """A client of the platform, closed when the block ends (`read_only`: see `connect`)."""
    from reconciler.platform.connect import connect

    return connect(
        connection.base_url,
        parallelism=connection.parallelism,
        verbose=connection.verbose,
        read_only=read_only,
    )


async def plan_manifest(
    manifest: Manifest,
    client: PlatformClient,
    options: PlanOptions,
    *,
    base_checks: ChecksSettings | None = None,
    observer: CallObserver | None = None,
) -> Plan:
    """The checked plan that converges live state (read through `client`, each call told to
    `observer`) to `manifest`."""
    from reconciler.plan.planner import build_plan

    built = await build_plan(manifest, observed(client, observer), options)
    return check_plan(built, manifest, base_checks=base_checks)


def check_plan(
    plan: Plan, manifest: Manifest, *, base_checks: ChecksSettings | None = None
) -> Plan:
    """`plan` with what the checks say of it: the findings of every built-in rule (static ones
    read the manifest, plan-time ones the changes), the manifest's warnings as notes, and the
    overrides of the checks, marked against `base_checks` (those of the manifest a pull request
    merges into) when given."""
    findings = {*static_findings(manifest), *plan_findings(manifest, plan.changes, plan.capacity)}
    warnings = tuple(
        Note("warning", warning.located_message, from_manifest=True)
        for warning in manifest.warnings
    )
    found = overrides(manifest.checks)
    if base_checks is not None:
        found = compared(found, overrides(base_checks))
    return dataclasses.replace(
        plan, findings=tuple(sorted(findings)), notes=plan.notes + warnings, overrides=found
    )
