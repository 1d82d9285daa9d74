"""Environment settings: `settings.<project>/<app>/<env>`: build, runtime and regions.

Read with one `environments.listEnvironments` per app (both environments at
once). Each live environment is checked and read once, where the kind reads it, into a
`LiveEnvironment`: its settings in the manifest's own model (`live_model`) beside the answer
itself. Only the fields the manifest manages are compared, model with model; one
`environments.updateSettings` sends just the ones that differ (null where the
manifest clears a field). The fields, and how each compares, are the ones the model declares
(reconciler/manifest/settings.py): `runtime` and `build` absent live mean nothing is set yet,
healthcheck members take their server defaults, numbers compare by value, absent lists are
empty, an empty string in a clearable field is the same as null, regions compare as a set by
name (the list sent is the manifest's, in its order).

Members a newer platform added (anything `shapes.ENVIRONMENT` does not document) never make
a change by themselves. `updateSettings` leaves out what it is not sent, so the unknown
members of the environment, its runtime and its build are never touched; the objects it
takes whole (a health check, each region) are sent with the live unknown members of the same
object (the region of the same name), so a write never drops them. What the manifest writes
in `opaque` blocks is compared where written (mappings member by member) and sent: a flat
member of `updateSettings`, or merged into the health check or region it belongs to. Only a
health check cleared, or a region left out of the list, can still remove unknown members:
such a change names them (`unknown_removed`), and apply refuses it unless run with
--allow-unknown-removal. Every unknown member the manifest does not manage is reported in the
plan's one note of unmanaged fields.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from reconciler.address import Address, TreePath
from reconciler.errors import UnexpectedResponse
from reconciler.json_types import JsonObject, JsonValue
from reconciler.manifest.model import (
    ENVIRONMENT_NAMES,
    UNSET,
    Build,
    Clearable,
    Environment,
    EnvironmentName,
    Healthcheck,
    Managed,
    Region,
    Runtime,
    deep_merge,
    freeze,
    thaw,
)
from reconciler.manifest.settings import (
    HEALTHCHECK_DEFAULTS,
    SETTING_FIELDS,
    Section,
    SettingField,
    from_data,
    to_data,
)
from reconciler.plan.changes import ABSENT, Absent, Action, Call, Change, FieldDiff, Note
from reconciler.plan.kinds.base import (
    EnvironmentJob,
    EnvironmentKind,
    Location,
    comparable,
    display_number,
    make_call,
    nested_diffs,
    require_fields,
    value_diff,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord, stable_listing
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import (
    ENVIRONMENT,
    HEALTHCHECK,
    REGION,
    Shape,
    unknown_members,
    unknown_part,
)

READ_OPERATION = "environments.listEnvironments"
FIELDS = SETTING_FIELDS
Block = TypeVar("Block", Build, Runtime)


def manages_settings(environment: Environment) -> bool:
    return any(
        block is not UNSET
        for block in (environment.build, environment.runtime, environment.regions)
    )


# --- the live environment, in the model ---------------------------------------------------


@dataclass(frozen=True)
class LiveEnvironment:
    """One environment as `listEnvironments` answers it, checked and read once (`read`): its
    settings in the manifest's model, which the diff compares, beside the answer itself, which
    a diff shows as before and whose objects a write sends back with the members this
    reconciler does not know."""

    slug: str
    id: str | None
    name: EnvironmentName | None
    """None for an environment whose name this reconciler does not know (a newer platform's:
    never planned), or one the answer does not list."""
    answer: JsonObject

    @functools.cached_property
    def settings(self) -> Environment | None:
        """Its settings read into the model (None without a `name`), when first asked: when
        this environment is planned. An answer the model cannot read then is an
        `UnexpectedResponse`; one about an environment the manifest does not manage (a
        preview's, when only production is) stops nothing."""
        return None if self.name is None else live_model(self.answer, self.name)


def read_environment(answer: JsonObject) -> LiveEnvironment:
    """One object of a `listEnvironments` answer, checked to have the `slug` the plan keys on;
    its settings are read into the model when it is planned (`settings`)."""
    slug = str(require_fields(READ_OPERATION, answer, "slug")["slug"])
    name = next((known for known in ENVIRONMENT_NAMES if known == slug), None)
    identifier = answer.get("id")
    return LiveEnvironment(
        slug=slug, id=str(identifier) if identifier else None, name=name, answer=answer
    )


def live_model(live: JsonObject, name: EnvironmentName) -> Environment:
    """The live environment read into the manifest's model, what the model does not know kept
    beside it in each object's `opaque` (as `shapes.unknown_part` finds it: a health check's
    under `runtime.opaque.healthcheck`, as the manifest writes it). An object without a member
    the spec requires (a health check's `method`) is an `UnexpectedResponse`."""
    try:
        return _live_model(live, name)
    except KeyError as missing:
        raise UnexpectedResponse(
            f"{READ_OPERATION}: the platform returned settings without `{missing.args[0]}`",
            operation=READ_OPERATION,
        ) from None


def _live_model(live: JsonObject, name: EnvironmentName) -> Environment:
    regions = live.get("regions")
    return Environment(
        name=name,
        build=_live_block(live, "build", Build),
        runtime=_live_block(live, "runtime", Runtime),
        regions=UNSET
        if regions is None
        else tuple(_live_region(region) for region in _list(regions, "regions")),
        opaque=freeze(
            {
                k: v
                for k, v in unknown_part(live, ENVIRONMENT).items()
                if k not in ENVIRONMENT.fields
            }
        ),
    )


def _live_block(live: JsonObject, section: Section, model: type[Block]) -> Managed[Block]:
    """A live `build` or `runtime` in the model (UNSET while no settings were written)."""
    data = live.get(section)
    if data is None:
        return UNSET
    return from_data(
        model, _object(data, section), opaque=_unknown(data, ENVIRONMENT.fields[section])
    )


def _live_region(region: JsonValue) -> Region:
    return from_data(Region, _object(region, "regions[]"), opaque=_unknown(region, REGION))


def _object(value: JsonValue, where: str) -> JsonObject:
    """`value`, which the spec makes an object: anything else is an `UnexpectedResponse`."""
    if not isinstance(value, Mapping):
        raise _malformed(where, "an object")
    return value


def _list(value: JsonValue, where: str) -> Sequence[JsonValue]:
    """`value`, which the spec makes a list: anything else is an `UnexpectedResponse`."""
    if not isinstance(value, list):
        raise _malformed(where, "a list")
    return value


def _malformed(where: str, what: str) -> UnexpectedResponse:
    return UnexpectedResponse(
        f"{READ_OPERATION}: the platform returned settings whose `{where}` is not {what}",
        operation=READ_OPERATION,
    )


def _unknown(value: JsonValue, shape: Shape) -> JsonObject:
    unknown: JsonObject = freeze(unknown_part(value, shape))
    return unknown


def _api_value(field: SettingField, value: object) -> JsonValue:
    """A model value as updateSettings takes it."""
    sent: JsonValue = display_number(field.data(value))
    return sent


# --- what this reconciler does not know ------------------------------------------------------

SECTIONS: tuple[Section, ...] = ("runtime", "build")


def written_agrees(live: JsonValue | Absent, written: JsonValue) -> bool:
    """Whether `live` holds what an `opaque` block writes: mappings member by member (what
    it does not write is not compared), anything else by value (numbers by value)."""
    if isinstance(written, Mapping):
        return isinstance(live, Mapping) and all(
            key in live and written_agrees(live[key], value) for key, value in written.items()
        )
    return bool(comparable(live) == comparable(written))


def _merged(live: JsonValue | Absent, written: JsonObject) -> JsonObject:
    """What an object sent whole becomes with `written` (opaque members) merged over it."""
    return deep_merge(live, written) if isinstance(live, Mapping) else dict(written)


def _opaque_members(environment: Environment) -> list[tuple[Section | None, str, JsonValue]]:
    """(section, member, value) of every flat `updateSettings` member the manifest writes in
    an `opaque` block: the environment's own (section None), its build's and its runtime's
    (a known runtime member in `runtime.opaque`, the health check, is not one: it is merged
    into that object)."""
    found: list[tuple[Section | None, str, JsonValue]] = [
        (None, key, thaw(value)) for key, value in environment.opaque.items()
    ]
    for section in SECTIONS:
        block = environment.runtime if section == "runtime" else environment.build
        if block is UNSET:
            continue
        for key, value in block.opaque.items():
            if not (section == "runtime" and key == "healthcheck"):
                found.append((section, key, thaw(value)))
    return found


def _healthcheck_opaque(environment: Environment) -> JsonObject:
    """The health check members the manifest writes in `runtime.opaque.healthcheck`."""
    if environment.runtime is UNSET:
        return {}
    written = environment.runtime.opaque.get("healthcheck")
    members: JsonObject = thaw(written) if isinstance(written, Mapping) else {}
    return members


def _section_value(live: JsonObject, section: Section | None, key: str) -> JsonValue | Absent:
    """The live value of a member of the environment (`section` None) or of its build or
    runtime, as the platform sent it (what a diff shows as before)."""
    if section is None:
        return live.get(key, ABSENT)
    block = live.get(section)
    return block.get(key, ABSENT) if isinstance(block, Mapping) else ABSENT


def _live_regions(live: JsonValue | Absent) -> dict[str, JsonObject]:
    if not isinstance(live, (list, tuple)):
        return {}
    return {str(r.get("name")): r for r in live if isinstance(r, Mapping)}


def _regions_agree(wanted: tuple[Region, ...], live: JsonValue | Absent) -> bool:
    """The `opaque` members of each region the manifest writes agree with the live region
    of the same name."""
    by_name = _live_regions(live)
    return all(
        written_agrees(by_name.get(region.name), thaw(region.opaque))
        for region in wanted
        if region.opaque
    )


def _regions_sent(wanted: tuple[Region, ...], live: JsonValue | Absent) -> list[JsonObject]:
    """The regions list to send: each region as the manifest writes it, carrying the members
    of the live region of the same name that this reconciler does not know, then its own
    `opaque` members."""
    by_name = _live_regions(live)
    sent = []
    for region in wanted:
        item: JsonObject = to_data(region)
        carried = unknown_part(by_name.get(region.name), REGION)
        if carried:
            item = deep_merge(item, carried)
        if region.opaque:
            item = deep_merge(item, thaw(region.opaque))
        sent.append(item)
    return sent


def _healthcheck_sent(
    wanted: Clearable[Healthcheck], live: JsonValue | Absent, written: JsonObject
) -> JsonObject | None:
    """The health check to send: the manifest's (None clears it), carrying the members of the
    live one that this reconciler does not know, then the written `opaque` members; with the
    health check unmanaged, the live one with those members merged in."""
    if wanted is None:
        return None
    if wanted is UNSET:
        return _merged(live, written)
    sent: JsonObject = to_data(wanted)
    carried = unknown_part(live, HEALTHCHECK)
    if carried:
        sent = deep_merge(sent, carried)
    return deep_merge(sent, written) if written else sent


def _removed(field: SettingField, wanted: object, before: JsonValue | Absent) -> list[str]:
    """What this reconciler does not know of the live value that sending `wanted` removes:
    a health check cleared, a region left out of the list."""
    if field.form == "object" and wanted is None:
        lost = unknown_members(before, HEALTHCHECK)
        return [f"{field.path} (cleared): {', '.join(lost)}"] if lost else []
    if field.form == "objects" and isinstance(wanted, tuple):
        kept = {region.name for region in wanted if isinstance(region, Region)}
        removed = []
        for name, region in _live_regions(before).items():
            lost = unknown_members(region, REGION)
            if name not in kept and lost:
                removed.append(f"{field.path}[{name}] (left out of the list): {', '.join(lost)}")
        return removed
    return []


def unmanaged_members(environment: Environment, live: JsonObject) -> list[str]:
    """What the live environment holds that this reconciler does not know and the manifest
    does not write in an `opaque` block: `runtime.gpu`, `regions[fra].zone`."""
    managed = {key if section is None else f"{section}.{key}"
               for section, key, _ in _opaque_members(environment)}  # fmt: skip
    managed |= _paths("runtime.healthcheck", _healthcheck_opaque(environment))
    wanted_regions = () if environment.regions is UNSET else environment.regions
    for region in wanted_regions:
        managed |= _paths(f"regions[{region.name}]", thaw(region.opaque))
    found = unknown_members({k: v for k, v in live.items() if k != "regions"}, ENVIRONMENT)
    for name, live_region in _live_regions(live.get("regions")).items():
        found += unknown_members(live_region, REGION, f"regions[{name}]")
    return [path for path in found if not _within(path, managed)]


def _paths(where: str, written: JsonObject) -> set[str]:
    found: set[str] = set()
    for key, value in written.items():
        path = f"{where}.{key}"
        found.add(path)
        if isinstance(value, Mapping):
            found |= _paths(path, value)
    return found


def _within(path: str, managed: set[str]) -> bool:
    return path in managed or any(path.startswith(f"{m}.") for m in managed)


def plan_settings(
    project_slug: str,
    app_slug: str,
    environment: Environment,
    live: LiveEnvironment | None,
    ref: Location,
) -> Change | None:
    """The settings change of one environment; `live` is None when the app is being created."""
    current: JsonObject = {} if live is None else live.answer
    live_settings = _live_settings(live, environment.name)
    diffs: list[FieldDiff] = []
    body: dict[str, JsonValue] = {}
    removed: list[str] = []
    hc_written = _healthcheck_opaque(environment)
    for field in FIELDS:
        wanted = field.value_in(environment)
        written = hc_written if field.form == "object" else {}
        if wanted is UNSET and not written:
            continue
        before = _section_value(current, field.section, field.name)
        if _agrees(field, wanted, field.value_in(live_settings), before, written):
            continue
        after: JsonValue
        if field.form == "object":
            after = _healthcheck_sent(wanted, before, written)
        elif field.form == "objects":
            after = _regions_sent(wanted, before)
        else:
            after = _api_value(field, wanted)
        body[field.name] = after
        diffs.extend(_field_diffs(field, before, after))
        removed += _removed(field, wanted, before)
    for section, key, written_value in _opaque_members(environment):
        before = _section_value(current, section, key)
        if written_agrees(before, written_value):
            continue
        if isinstance(written_value, Mapping):
            after = _merged(before, written_value)
        else:
            after = written_value
        body[key] = after
        where = f"{section}.opaque.{key}" if section else f"opaque.{key}"
        diffs.extend(nested_diffs(where, before, after))
    if not body:
        return None
    fresh = live is None
    return Change(
        address=str(Address.of("settings", project_slug, app_slug, environment.name)),
        kind="settings",
        action=Action.CREATE if fresh else Action.UPDATE,
        before=None if fresh else {d.path: d.before for d in diffs},
        after={d.path: d.after for d in diffs},
        diffs=tuple(diffs),
        calls=(
            make_call("environments.updateSettings", ref.body(**body), object_id=ref.object_id),
        ),
        position=environment.pos,
        notes=_removal_note(removed),
        unknown_removed=tuple(removed),
    )


def _live_settings(live: LiveEnvironment | None, name: EnvironmentName) -> Environment:
    """The live settings in the model: nothing set in an app this plan creates (None) or in an
    environment the answer does not list."""
    if live is None or live.settings is None:
        return Environment(name)
    return live.settings


def _agrees(
    field: SettingField,
    wanted: object,
    live: object,
    before: JsonValue | Absent,
    written: JsonObject,
) -> bool:
    """Whether the live value is what the manifest asks for: the members this reconciler
    knows, the manifest's model against the live one's (`live`), and the `opaque` members
    written for it (a health check's; each region's) against what the platform sent
    (`before`)."""
    if wanted is not UNSET and field.comparable(wanted) != field.comparable(live):
        return False
    if field.form == "objects" and isinstance(wanted, tuple):
        return _regions_agree(wanted, before)
    return not written or (before not in (None, ABSENT) and written_agrees(before, written))


def _removal_note(removed: list[str]) -> tuple[str, ...]:
    if not removed:
        return ()
    return (
        "this update removes what this reconciler does not know of the live settings: "
        + "; ".join(removed)
        + ". Apply refuses this unless the manifest keeps them (the health check, or the "
        "region in the list) or it runs with --allow-unknown-removal",
    )


def _field_diffs(
    field: SettingField, before: JsonValue | Absent, after: JsonValue
) -> list[FieldDiff]:
    if field.form == "object" and isinstance(before, Mapping) and isinstance(after, Mapping):
        # member by member, against the live value with the server defaults filled in
        return nested_diffs(field.path, {**HEALTHCHECK_DEFAULTS, **before}, after)
    # `command` is an argument list: its items are diffed in order
    return [value_diff(field.path, before, after, unordered=field.declared.unordered)]


class SettingsKind(EnvironmentKind[list[LiveEnvironment], LiveEnvironment]):
    """`settings.<project>/<app>/<env>`: read with the app's other environment, in one call."""

    name = "settings"
    depth = 3
    container = False
    read_at = ReadAt.APP
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> list[LiveEnvironment]:
        """Both environments of the app at `at` (one call)."""
        found = await platform.list_all(READ_OPERATION, at.body())
        return [read_environment(answer) for answer in found]

    def record(
        self, record: LiveRecord, at: Location, label: TreePath, found: list[LiveEnvironment]
    ) -> None:
        record.read(READ_OPERATION)
        record.state[f"environments {label}"] = stable_listing((e.answer for e in found), "slug")
        for environment in found:
            if environment.id:
                record.labels[environment.id] = label.child(environment.slug)
        others = sorted(e.slug for e in found if e.slug not in ENVIRONMENT_NAMES)
        if others:
            record.other_environments[label] = tuple(others)

    def pick(self, found: list[LiveEnvironment], at: Location) -> LiveEnvironment:
        by_slug = {e.slug: e for e in found}
        not_listed = LiveEnvironment(str(at.environment), None, None, {})
        return by_slug.get(str(at.environment), not_listed)

    def environment_id(self, live: LiveEnvironment) -> str | None:
        return live.id

    def manages(self, environment: Environment) -> bool:
        return manages_settings(environment)

    def plan(self, job: EnvironmentJob, live: LiveEnvironment | None) -> None:
        change = plan_settings(job.project, job.app, job.environment, live, job.at)
        job.planning.add(change, job.depends_on)
        if live is None:
            return
        where = str(Address("settings", job.path))
        job.planning.unmanaged_fields.extend(
            (where, path) for path in unmanaged_members(job.environment, live.answer)
        )
        if change is not None and change.unknown_removed:
            job.planning.note(
                Note(
                    "warning",
                    f"{where}: this update removes what this reconciler does not know "
                    f"({'; '.join(change.unknown_removed)}); apply refuses it unless run with "
                    "--allow-unknown-removal",
                    where,
                )
            )

    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        return ApplyPhase.SETTINGS

    def rollout_reason(self, change: Change) -> str | None:
        return "settings"

    def configures_deployment(self) -> bool:
        return True


KIND = register(SettingsKind())
