"""Environment settings: `settings.<project>/<app>/<env>`: build, runtime and regions.

Read with one `environments.listEnvironments` per app (both environments at
once). Only the fields the manifest manages are compared; one
`environments.updateSettings` sends just the ones that differ (null where the
manifest clears a field). Before comparing, both sides are normalised: `runtime`
and `build` absent live mean nothing is set yet, healthcheck members take their
server defaults (10/5/3/0), numbers compare by value, absent lists are empty,
an empty string in a clearable field is the same as null, regions compare
as a set by name (the list sent is the manifest's, in its order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.manifest.model import UNSET, Environment, Healthcheck, Region
from reconciler.plan.changes import ABSENT, Action, Call, Change, FieldDiff
from reconciler.plan.kinds.base import (
    EnvironmentJob,
    EnvironmentKind,
    Location,
    address,
    display_number,
    make_call,
    nested_diffs,
    number,
    require_fields,
    value_diff,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord, stable
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import object_member

READ_OPERATION = "environments.listEnvironments"
HEALTHCHECK_DEFAULTS = {
    "intervalSeconds": 10,
    "timeoutSeconds": 5,
    "failureThreshold": 3,
    "initialDelaySeconds": 0,
}


def manages_settings(environment: Environment) -> bool:
    return any(
        block is not UNSET
        for block in (environment.build, environment.runtime, environment.regions)
    )


# --- normalisation ------------------------------------------------------------------------


def _as_is(value: Any) -> Any:
    return value


def _list(value: Any) -> list[Any]:
    return [] if value is None or value is ABSENT else list(value)


def _clearable(value: Any) -> Any:
    return None if value in (None, "", ABSENT) else value


def _number(value: Any) -> Any:
    return number(value)


def _healthcheck(value: Any) -> dict[str, Any] | None:
    if value in (None, ABSENT):
        return None
    if isinstance(value, Healthcheck):
        value = healthcheck_to_api(value)
    return {**HEALTHCHECK_DEFAULTS, **dict(value)}


def _regions(value: Any) -> list[tuple[str, float, float]]:
    if value in (None, ABSENT):
        return []
    items = [r if isinstance(r, Mapping) else region_to_api(r) for r in value]
    return sorted(
        (str(r.get("name")), number(_replicas(r).get("min")), number(_replicas(r).get("max")))
        for r in items
    )


def _replicas(region: Mapping[str, Any]) -> Mapping[str, Any]:
    return object_member(region, "replicas")


@dataclass(frozen=True)
class SettingField:
    """One manageable field: its manifest path, API name, where it lives and how it compares."""

    path: str  # manifest name, also the FieldDiff path: `runtime.healthcheck`
    api: str  # updateSettings request field
    section: str | None  # `build`, `runtime` or None (top level: regions)
    attribute: str  # model attribute
    normalise: Callable[[Any], Any] = _as_is
    unordered: bool = False  # a list the platform treats as a set: its diff names items, not slots


FIELDS: tuple[SettingField, ...] = (
    SettingField("build.dockerfile", "dockerfile", "build", "dockerfile", _clearable),
    SettingField("build.rootDirectory", "rootDirectory", "build", "root_directory"),
    SettingField("build.buildCommand", "buildCommand", "build", "build_command", _clearable),
    # a push builds when it changes a file matching any of the globs: their order means nothing
    SettingField("build.watchPaths", "watchPaths", "build", "watch_paths", _list, unordered=True),
    SettingField("build.autoDeploy", "autoDeploy", "build", "auto_deploy"),
    SettingField("runtime.port", "port", "runtime", "port", _number),
    SettingField("runtime.vCpus", "vCpus", "runtime", "vcpus", _number),
    SettingField("runtime.memoryMib", "memoryMib", "runtime", "memory_mib", _number),
    SettingField("runtime.storageMib", "storageMib", "runtime", "storage_mib", _number),
    SettingField("runtime.command", "command", "runtime", "command", _list),
    SettingField("runtime.healthcheck", "healthcheck", "runtime", "healthcheck", _healthcheck),
    SettingField("runtime.shutdownSignal", "shutdownSignal", "runtime", "shutdown_signal"),
    SettingField("runtime.upstreamProtocol", "upstreamProtocol", "runtime", "upstream_protocol"),
    SettingField(
        "runtime.openapiSpecPath", "openapiSpecPath", "runtime", "openapi_spec_path", _clearable
    ),
    SettingField("regions", "regions", None, "regions", _regions),
)


def healthcheck_to_api(healthcheck: Healthcheck) -> dict[str, Any]:
    return {
        "method": healthcheck.method,
        "path": healthcheck.path,
        "intervalSeconds": healthcheck.interval_seconds,
        "timeoutSeconds": healthcheck.timeout_seconds,
        "failureThreshold": healthcheck.failure_threshold,
        "initialDelaySeconds": healthcheck.initial_delay_seconds,
    }


def region_to_api(region: Region) -> dict[str, Any]:
    return {
        "name": region.name,
        "replicas": {"min": region.min_replicas, "max": region.max_replicas},
    }


def _desired_value(environment: Environment, field: SettingField) -> Any:
    """The manifest's value of `field` (UNSET when unmanaged)."""
    if field.section is None:
        return getattr(environment, field.attribute)
    block = getattr(environment, field.section)
    if block is UNSET:
        return UNSET
    return getattr(block, field.attribute)


def _api_value(value: Any) -> Any:
    """A model value as updateSettings takes it."""
    if isinstance(value, Healthcheck):
        return healthcheck_to_api(value)
    if isinstance(value, tuple) and value and isinstance(value[0], Region):
        return [region_to_api(r) for r in value]
    if isinstance(value, tuple):
        return list(value)
    return display_number(value)


def _live_value(live: Mapping[str, Any], field: SettingField) -> Any:
    if field.section is None:
        return live.get(field.api, ABSENT)
    block = live.get(field.section)
    if not isinstance(block, Mapping):
        return ABSENT
    return block.get(field.api, ABSENT)


def plan_settings(
    project_slug: str,
    app_slug: str,
    environment: Environment,
    live: Mapping[str, Any] | None,
    ref: Location,
) -> Change | None:
    """The settings change of one environment; `live` is None when the app is being created."""
    current = live or {}
    diffs: list[FieldDiff] = []
    body: dict[str, Any] = {}
    for field in FIELDS:
        wanted = _desired_value(environment, field)
        if wanted is UNSET:
            continue
        before = _live_value(current, field)
        if field.normalise(wanted) == field.normalise(before):
            continue
        after = _api_value(wanted)
        body[field.api] = after
        diffs.extend(_field_diffs(field, before, after))
    if not body:
        return None
    fresh = live is None
    return Change(
        address=address("settings", project_slug, app_slug, environment.name),
        kind="settings",
        action=Action.CREATE if fresh else Action.UPDATE,
        before=None if fresh else {d.path: d.before for d in diffs},
        after={d.path: d.after for d in diffs},
        diffs=tuple(diffs),
        calls=(
            make_call("environments.updateSettings", ref.body(**body), object_id=ref.object_id),
        ),
        position=environment.pos,
    )


def _field_diffs(field: SettingField, before: Any, after: Any) -> list[FieldDiff]:
    if field.api == "healthcheck" and isinstance(before, Mapping) and isinstance(after, Mapping):
        # member by member, against the live value with the server defaults filled in
        return nested_diffs(field.path, _healthcheck(before), after)
    # `command` is an argument list: its items are diffed in order
    return [value_diff(field.path, before, after, unordered=field.unordered)]


class SettingsKind(EnvironmentKind):
    """`settings.<project>/<app>/<env>`: read with the app's other environment, in one call."""

    name = "settings"
    depth = 3
    container = False
    read_at = 2
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> list[dict[str, Any]]:
        """Both environments of the app at `at` (one call)."""
        found = await platform.list_all(READ_OPERATION, at.body())
        checked: list[dict[str, Any]] = require_fields(READ_OPERATION, found, "slug")
        return checked

    def record(self, record: LiveRecord, at: Location, label: str, found: Any) -> None:
        record.read(READ_OPERATION)
        record.state[f"environments {label}"] = sorted(
            (stable(e) or {} for e in found), key=lambda e: str(e.get("slug"))
        )
        for environment in found:
            if environment.get("id"):
                record.labels[environment["id"]] = f"{label}/{environment.get('slug')}"

    def pick(self, found: Any, at: Location) -> Any:
        by_slug = {e.get("slug"): e for e in found}
        return by_slug.get(at.environment, {})

    def environment_id(self, live: Any) -> str | None:
        return str(live["id"]) if live and live.get("id") else None

    def manages(self, environment: Environment) -> bool:
        return manages_settings(environment)

    def plan(self, job: EnvironmentJob, live: Any) -> None:
        change = plan_settings(job.project, job.app, job.environment, live, job.at)
        job.planning.add(change, job.depends_on)

    def apply_phase(self, change: Change, call: Call) -> int | None:
        return 2

    def rollout_reason(self, change: Change) -> str | None:
        return "settings"

    def configures_deployment(self) -> bool:
        return True


KIND = register(SettingsKind())
