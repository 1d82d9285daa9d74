"""Capacity ceilings: the most each environment may run, before and after the plan.

An environment's ceiling is its per-instance vCPUs, memory and storage times its instances at
most: the sum of `replicas.max` over its regions. After the plan, each value is the manifest's
where it manages it, else the live one (unmanaged fields stay as they are). A value nobody
knows (an environment the plan did not read, a new app whose manifest leaves vCpus to the
platform's default) is unknown, and totals over it are lower bounds (`complete` false).

Pure functions over what the plan read: reconciler/plan/planner.py passes the live
environments and which apps the plan creates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any

from reconciler.address import TreePath
from reconciler.manifest.model import Environment, Manifest, Runtime, is_set, listed

RESOURCES = ("vcpus", "memory_mib", "storage_mib")
_API_FIELDS = {"vcpus": "vCpus", "memory_mib": "memoryMib", "storage_mib": "storageMib"}
LIMIT_KEYS = dict(_API_FIELDS)
"""Resource -> its key in the top-level `limits:` block."""


@dataclass(frozen=True)
class Figures:
    """vCPUs, MiB of memory and MiB of storage; None where unknown. `complete` is false for a
    total that left unknown parts out (then each value is a lower bound)."""

    vcpus: float | None
    memory_mib: float | None
    storage_mib: float | None
    complete: bool = True

    def get(self, resource: str) -> float | None:
        value: float | None = getattr(self, resource)
        return value

    def to_json(self) -> dict[str, Any]:
        return {**{_API_FIELDS[r]: self.get(r) for r in RESOURCES}, "complete": self.complete}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Figures:
        """Inverse of `to_json`; KeyError, TypeError or ValueError for another shape."""
        vcpus, memory, storage = (_figure(data[_API_FIELDS[r]]) for r in RESOURCES)
        complete = data["complete"]
        if not isinstance(complete, bool):
            raise TypeError("complete")
        return cls(vcpus, memory, storage, complete=complete)


def _figure(value: Any) -> float | None:
    """A figure as JSON wrote it (an integer stays one, so the plan reads back the same)."""
    if value is None:
        return None
    if not _is_number(value):
        raise ValueError(value)
    number: float = value
    return number


def amount(value: float | None) -> str:
    """`2`, `0.75`, `?` for unknown: as the manifest writes numbers."""
    if value is None:
        return "?"
    return str(int(value)) if value == int(value) else f"{value:.2f}".rstrip("0")


NOTHING = Figures(0, 0, 0)
UNKNOWN = Figures(None, None, None)


@dataclass(frozen=True)
class Ceiling:
    """The ceiling of one environment, project or the workspace (`scope` `()`)."""

    scope: tuple[str, ...]
    before: Figures
    after: Figures

    @property
    def label(self) -> str:
        return str(TreePath(self.scope)) if self.scope else "workspace"

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.label, "before": self.before.to_json(), "after": self.after.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, workspace: bool = False) -> Ceiling:
        label = data["scope"]
        if not isinstance(label, str):
            raise TypeError("scope")
        scope = () if workspace else TreePath.parse(label).slugs
        return cls(scope, Figures.from_json(data["before"]), Figures.from_json(data["after"]))


@dataclass(frozen=True)
class CapacityReport:
    environments: tuple[Ceiling, ...]
    projects: tuple[Ceiling, ...]
    workspace: Ceiling

    @property
    def changes(self) -> bool:
        return self.workspace.changes or any(c.changes for c in self.environments)

    def to_json(self) -> dict[str, Any]:
        return {
            "environments": [c.to_json() for c in self.environments],
            "projects": [c.to_json() for c in self.projects],
            "workspace": self.workspace.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacityReport:
        """Inverse of `to_json` (a saved plan shown again); KeyError, TypeError or ValueError
        for another shape."""
        return cls(
            tuple(Ceiling.from_json(c) for c in data["environments"]),
            tuple(Ceiling.from_json(c) for c in data["projects"]),
            Ceiling.from_json(data["workspace"], workspace=True),
        )


def ceiling(runtime: Mapping[str, Any], regions: Iterable[Mapping[str, Any]] | None) -> Figures:
    """Per instance x the sum of replicas.max over the regions (None where unknown)."""
    if regions is None:
        return UNKNOWN
    try:
        instances = sum(_number(region["replicas"]["max"]) for region in regions)
    except (KeyError, TypeError, ValueError):
        return UNKNOWN  # a live answer without the shape the spec gives: not taken as data
    vcpus, memory, storage = (
        _per_instance(runtime.get(_API_FIELDS[r]), instances) for r in RESOURCES
    )
    return Figures(vcpus, memory, storage)


def _per_instance(value: Any, instances: float) -> float | None:
    return float(value) * instances if value is not None and _is_number(value) else None


def _number(value: Any) -> float:
    if not _is_number(value):
        raise ValueError(value)
    return float(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def environment_ceiling(
    scope: tuple[str, str, str],
    environment: Environment,
    live: Mapping[str, Any] | None,
    *,
    created: bool,
) -> Ceiling:
    """`live` is the environment as read (None when the plan did not read it); `created` when
    the plan creates (or replaces) its app, which runs nothing before."""
    if created:
        before, current = NOTHING, None
    elif live is None:
        before, current = UNKNOWN, None
    else:
        before, current = ceiling(live.get("runtime") or {}, live.get("regions") or []), live
    after = ceiling(
        _runtime_after(environment, current or {}), _regions_after(environment, current)
    )
    return Ceiling(scope, before, after)


def _runtime_after(environment: Environment, live: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's values where it sets them, else the live ones (unmanaged stays)."""
    runtime = dict(live.get("runtime") or {})
    if isinstance(environment.runtime, Runtime):
        for resource in RESOURCES:
            value = getattr(environment.runtime, resource)
            if is_set(value):
                runtime[_API_FIELDS[resource]] = value
    return runtime


def _regions_after(
    environment: Environment, live: Mapping[str, Any] | None
) -> list[Mapping[str, Any]] | None:
    if is_set(environment.regions):
        return [
            {"name": r.name, "replicas": {"min": r.min_replicas, "max": r.max_replicas}}
            for r in listed(environment.regions)
        ]
    return None if live is None else list(live.get("regions") or [])


def total(scope: tuple[str, ...], parts: Iterable[Ceiling]) -> Ceiling:
    parts = list(parts)
    return Ceiling(scope, _sum(c.before for c in parts), _sum(c.after for c in parts))


def _sum(figures: Iterable[Figures]) -> Figures:
    figures = list(figures)
    vcpus, memory, storage = (
        sum(value for f in figures if (value := f.get(resource)) is not None)
        for resource in RESOURCES
    )
    complete = all(
        f.complete and None not in (f.vcpus, f.memory_mib, f.storage_mib) for f in figures
    )
    return Figures(vcpus, memory, storage, complete=complete)


LiveEnvironment = Callable[[str, str, str], Mapping[str, Any] | None]
Covers = Callable[[str, str, str], bool]


def capacity_report(
    manifest: Manifest,
    live_environment: LiveEnvironment,
    created_apps: Set[tuple[str, ...]],
    covers: Covers,
) -> CapacityReport:
    """The ceilings of every managed environment the plan covers, per project and in all.

    `live_environment(project, app, name)` is the environment as read, or None;
    `covers(project, app, name)` whether the plan covers it (--target)."""
    environments: list[Ceiling] = []
    projects: list[Ceiling] = []
    for project in manifest.projects:
        own: list[Ceiling] = []
        for app in listed(project.apps):
            for environment in app.environments:
                where = (project.slug, app.slug, environment.name)
                if not covers(*where):
                    continue
                created = (project.slug, app.slug) in created_apps
                own.append(
                    environment_ceiling(
                        where, environment, live_environment(*where), created=created
                    )
                )
        if own:
            environments.extend(own)
            projects.append(total((project.slug,), own))
    return CapacityReport(tuple(environments), tuple(projects), total((), environments))


CAPACITY_HEADING = (
    "Capacity ceilings (the most the manifests allow to run: per instance x replicas.max, "
    "over all regions; ? unknown, >= a lower bound):"
)


def capacity_lines(report: CapacityReport) -> list[str]:
    """The environments whose ceiling the plan moves, then the projects whose total it moves
    and the workspace: each resource before -> after, and how many environments are left out
    because their ceiling stays (the JSON lists every one)."""
    moved = [c for c in report.environments if c.changes]
    rows = [*moved, *(c for c in report.projects if c.changes), report.workspace]
    width = max(len(row.label) for row in rows)
    lines = [f"  {row.label:<{width}}  {_row(row)}" for row in rows]
    unchanged = len(report.environments) - len(moved)
    if unchanged:
        what = "environment" if unchanged == 1 else "environments"
        lines.append(f"  ({unchanged} {what} whose ceiling does not change not listed)")
    return lines


def _row(ceiling: Ceiling) -> str:
    units = {"vcpus": "vCPUs", "memory_mib": "MiB memory", "storage_mib": "MiB storage"}
    parts = []
    for resource in RESOURCES:
        before, after = _shown(ceiling.before, resource), _shown(ceiling.after, resource)
        change = before if before == after else f"{before} -> {after}"
        parts.append(f"{change} {units[resource]}")
    return ", ".join(parts)


def _shown(figures: Figures, resource: str) -> str:
    value = figures.get(resource)
    bound = "" if figures.complete or value is None else ">="
    return bound + amount(value)


def shows_capacity(report: CapacityReport | None) -> bool:
    """The text and markdown show the ceilings when the plan moves one (JSON always has them)."""
    return report is not None and bool(report.environments) and report.changes
