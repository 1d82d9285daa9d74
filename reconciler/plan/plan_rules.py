"""The rules about what a plan changes: a secret made readable, capacity over the limits.

Pure functions over the plan's changes and capacity report; `reconciler plan` runs them and
shows their findings with the plan (reconciler/cli/plan.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from reconciler.address import Address
from reconciler.checks.capacity import LIMIT_KEYS, RESOURCES, CapacityReport, amount
from reconciler.checks.findings import Finding, Hit
from reconciler.checks.registry import RULES_BY_ID
from reconciler.checks.settings import RuleSettings
from reconciler.manifest.model import Manifest, Position
from reconciler.manifest.problems import format_path
from reconciler.plan.changes import Action, Change

QUOTA_CODES = {
    "vcpus": "cpu_quota_exceeded",
    "memory_mib": "memory_quota_exceeded",
    "storage_mib": "storage_quota_exceeded",
}
_UNITS = {"vcpus": "vCPUs", "memory_mib": "MiB of memory", "storage_mib": "MiB of storage"}


def plan_findings(
    manifest: Manifest, changes: Iterable[Change], capacity: CapacityReport | None
) -> list[Finding]:
    """Every finding of the plan-time rules that are on, sorted by place."""
    settings = RuleSettings(manifest.checks)
    hits: list[Hit] = []
    if settings.is_on(RULES_BY_ID["writeonly-stays-writeonly"]):
        hits.extend(writeonly_turned_recoverable(manifest, changes))
    if capacity is not None and settings.is_on(RULES_BY_ID["capacity-limits"]):
        hits.extend(capacity_overruns(manifest, capacity))
    return settings.judge(hits)


def _first_place(manifest: Manifest) -> Position:
    return Position(manifest.sources[0].path if manifest.sources else "-", 1, 1)


def writeonly_turned_recoverable(manifest: Manifest, changes: Iterable[Change]) -> Iterator[Hit]:
    for change in changes:
        if change.kind != "variable" or change.action is not Action.UPDATE:
            continue
        kinds = [(d.before, d.after) for d in change.diffs if d.path == "kind"]
        if ("writeonly", "recoverable") not in kinds:
            continue
        project, app, environment, key = Address.parse(change.address).parts
        yield Hit(
            "writeonly-stays-writeonly",
            (project, app, environment),
            change.position or _first_place(manifest),
            format_path(
                ("projects", project, "apps", app, "environments", environment, "variables", key)
            ),
            f"{key} is write-only on the platform and this plan makes it recoverable "
            "(its value becomes readable)",
        )


def capacity_overruns(manifest: Manifest, capacity: CapacityReport) -> Iterator[Hit]:
    limits = manifest.checks.limits
    after = capacity.workspace.after
    for resource in RESOURCES:
        key = LIMIT_KEYS[resource]
        limit, ceiling = limits.get(key), after.get(resource)
        if limit is None or ceiling is None or ceiling <= limit:
            continue
        bound = "" if after.complete else "at least "
        yield Hit(
            "capacity-limits",
            (),
            manifest.checks.positions.get(f"limits.{key}") or _first_place(manifest),
            f"limits.{key}",
            f"after this plan the workspace may run {bound}{amount(ceiling)} {_UNITS[resource]}, "
            f"more than limits.{key} ({amount(limit)}): the platform would fail deployments "
            f"with {QUOTA_CODES[resource]}",
        )
