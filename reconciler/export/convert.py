"""One live project -> the manifest's plain-data form.

Only what differs from a default the spec states is written (omitted means unmanaged, so
leaving a field out can never cause a diff), with keys in the order a person writes them.
Write-only variables become `fromEnv` references with generated names.

What this reconciler does not know (anything reconciler/platform/shapes.py does not document:
a newer platform's members, policy kinds, values) is written in `opaque` blocks on the object
that holds it, as reconciler/manifest/opaque.py reads them, so planning the export against
the same live state still shows no change. What no manifest can hold is left out with a note
(`ExportNotes`): an environment other than production and preview, a variable of a kind this
reconciler does not know, the members of a project or an app it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.address import TreePath
from reconciler.errors import ExportError
from reconciler.export.live import (
    ExportedApp,
    ExportedEnvironment,
    ExportedProject,
)
from reconciler.export.secret_names import SecretNames
from reconciler.json_types import JsonObject, JsonValue
from reconciler.manifest.model import (
    ENVIRONMENT_NAMES,
    UNSET,
    Build,
    Healthcheck,
    Managed,
    Region,
    Runtime,
    deep_merge,
    thaw,
)
from reconciler.manifest.opaque import OPAQUE
from reconciler.manifest.settings import declared_fields, to_data
from reconciler.plan.kinds.app import LiveApp
from reconciler.plan.kinds.base import display_number
from reconciler.plan.kinds.policies import LivePolicy
from reconciler.plan.kinds.project import LiveProject
from reconciler.plan.kinds.variables import LiveVariable
from reconciler.plan.secrets import split_fingerprint
from reconciler.platform.shapes import (
    APP,
    ENVIRONMENT,
    HEALTHCHECK,
    MATCH_ITEM,
    POLICY,
    PROJECT,
    VARIABLE_KINDS,
    Shape,
    known_part,
    unknown_members,
    unknown_part,
    unknown_values,
)

ENVIRONMENT_KEY_ORDER = (
    "build",
    "runtime",
    "regions",
    "variables",
    "domains",
    "policies",
    OPAQUE,
)
MATCH_MEMBER_ORDER = ("path", "method", "header", "queryParam", "remoteIp")
MEMBER_KEY_ORDER = (
    "name",
    "path",
    "methods",
    "present",
    "value",
    "exact",
    "prefix",
    "regex",
    "ignoreCase",
    "in",
    "notIn",
)
LOGGING_FIELDS = ("requestHeaders", "responseHeaders", "requestBody", "responseBody", "query")


@dataclass(frozen=True)
class ExportOptions:
    pin_ids: bool = True
    """Write `id:` for projects and apps, so renaming a slug key later renames the
    object (updateProject/updateApp) instead of deleting and re-creating it."""
    factor_defaults: bool = True
    """Write what both environments of an app share once, under `defaults`."""
    templates: bool = False
    """Write what several apps share once, as templates they extend (export/templates.py)."""


class ExportNotes(list[str]):
    """What an export left out because no manifest can hold it, one sentence each (the CLI
    prints them on stderr)."""


def project_entry(
    project: ExportedProject,
    names: SecretNames,
    options: ExportOptions = ExportOptions(),
    notes: ExportNotes | None = None,
) -> dict[str, Any]:
    notes = ExportNotes() if notes is None else notes
    live = project.live
    entry = _named_entry(live, options)
    _note_unknown(notes, f"project {project.slug}", live.raw, PROJECT)
    apps = {app.slug: app_entry(project.slug, app, names, options, notes) for app in project.apps}
    if apps:
        entry["apps"] = apps
    return entry


def _note_unknown(notes: ExportNotes, what: str, resource: JsonObject, shape: Shape) -> None:
    """A project's or an app's members this reconciler does not know: `updateProject` and
    `updateApp` leave out what they are not sent, so they stay as they are, unmanaged."""
    unknown = unknown_members(resource, shape) + unknown_values(resource, shape)
    if unknown:
        notes.append(
            f"{what}: {', '.join(unknown)} not exported (members or values this reconciler "
            "does not know; plans leave them as they are)"
        )


def app_entry(
    project: str,
    app: ExportedApp,
    names: SecretNames,
    options: ExportOptions = ExportOptions(),
    notes: ExportNotes | None = None,
) -> dict[str, Any]:
    notes = ExportNotes() if notes is None else notes
    live = app.live
    entry = _named_entry(live, options)
    entry.update(_source(live))
    _note_unknown(notes, f"app {TreePath.of(project, app.slug)}", live.raw, APP)
    environments: dict[str, Any] = {}
    for slug in app.other_environments:
        notes.append(
            f"app {TreePath.of(project, app.slug)} has an environment {slug!r}, neither "
            "production nor preview: not exported (reconciler manages only those two; plans "
            "leave it alone)"
        )
    for env in app.environments:
        env_entry = environment_entry(project, app.slug, env, names, notes)
        if env_entry:
            environments[env.slug] = env_entry
    if options.factor_defaults:
        defaults, environments = factor_defaults(environments)
        if defaults:
            entry["defaults"] = defaults
    if environments:
        entry["environments"] = environments
    return entry


def _named_entry(live: LiveProject | LiveApp, options: ExportOptions) -> dict[str, Any]:
    """What a project and an app write first: name, the pinned ID, delete protection."""
    entry: dict[str, Any] = {"name": live.slug if live.name is None else live.name}
    if options.pin_ids:
        entry["id"] = live.id
    if live.delete_protection:
        entry["deleteProtection"] = True
    return entry


FACTORED_MEMBERWISE = ("build", "runtime", "variables")  # field by field, variable by variable
FACTORED_WHOLE = ("regions", "policies")  # lists: the loader replaces them, never merges


def factor_defaults(
    environments: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """What production and preview say alike, moved to `defaults` (which the loader merges
    back into both), and what is left of each environment.

    Only whole values move: a build or runtime field, a whole regions or policies list, a
    whole variable entry. So the merge (mappings deep-merged, lists replaced, variables by
    key, the environment wins) rebuilds each environment exactly. Domains never move: a
    host belongs to one environment."""
    envs = {name: dict(entry) for name, entry in environments.items()}
    if set(envs) != set(ENVIRONMENT_NAMES):
        return {}, envs
    production, preview = envs["production"], envs["preview"]
    defaults: dict[str, Any] = {}
    for section in FACTORED_WHOLE:
        if section in production and production.get(section) == preview.get(section):
            defaults[section] = production.pop(section)
            del preview[section]
    for section in FACTORED_MEMBERWISE:
        left, right = production.get(section, {}), preview.get(section, {})
        common = {k: v for k, v in left.items() if k in right and right[k] == v}
        if not common:
            continue
        defaults[section] = common
        for env in (production, preview):
            rest = {k: v for k, v in env[section].items() if k not in common}
            if rest:
                env[section] = rest
            else:
                del env[section]
    defaults = {k: defaults[k] for k in ENVIRONMENT_KEY_ORDER if k in defaults}
    return defaults, {name: entry for name, entry in envs.items() if entry}


def _source(app: LiveApp) -> dict[str, dict[str, str]]:
    if app.oci is not None and app.oci.image:
        return {"oci": {"image": app.oci.image}}
    git = app.git
    if git is not None and isinstance(git.repository, str) and git.repository:
        source = {"repository": git.repository}
        branch = git.default_branch
        if isinstance(branch, str) and branch:  # the repository's own default is unknown: say it
            source["defaultBranch"] = branch
        return {"git": source}
    # A repository app with nothing connected yet (or an old app without a source):
    # leaving the source out keeps it unmanaged, which matches live exactly.
    return {}


def environment_entry(
    project: str,
    app: str,
    env: ExportedEnvironment,
    names: SecretNames,
    notes: ExportNotes | None = None,
) -> dict[str, Any]:
    notes = ExportNotes() if notes is None else notes
    resource = env.live.answer
    where = TreePath.of(project, app, env.slug)
    entry: dict[str, Any] = {}
    settings = env.settings
    build = _section(resource, "build", settings.build, _written(settings.build))
    if build:
        entry["build"] = build
    runtime = _section(
        resource, "runtime", settings.runtime, _runtime(settings.runtime, where, notes)
    )
    if runtime:
        entry["runtime"] = runtime
    regions = () if settings.regions is UNSET else settings.regions
    if regions:
        entry["regions"] = [_region(r) for r in regions]
    listed = sorted(env.variables, key=lambda v: v.key)
    for variable in listed:
        if variable.kind not in VARIABLE_KINDS:
            notes.append(
                f"variable {where.child(variable.key)} is of kind {variable.kind!r}, "
                "which this reconciler does not know: not exported (plans never remove or "
                "replace it without saying so)"
            )
    variables = {
        v.key: _variable(v, names, project, app, env.slug)
        for v in listed
        if v.kind in VARIABLE_KINDS
    }
    if variables:
        entry["variables"] = variables
    hosts = sorted({d.host for d in env.domains})
    if hosts:
        entry["domains"] = hosts
    if env.policies:
        entry["policies"] = [policy_entry(p) for p in env.policies]
    if settings.opaque:
        entry[OPAQUE] = thaw(settings.opaque)
    return entry


def _section(
    resource: JsonObject,
    section: str,
    block: Managed[Build] | Managed[Runtime],
    picked: dict[str, Any],
) -> dict[str, Any]:
    """A build or runtime entry with its `opaque` block: the members of the live section this
    reconciler does not know (as the settings kind read them into `block`), and values of
    known ones it does not know (taken out of the entry: the manifest's field would refuse
    them)."""
    live = resource.get(section)
    if block is UNSET or not isinstance(live, Mapping):
        return picked
    shape = ENVIRONMENT.fields[section]
    opaque: dict[str, Any] = thaw(block.opaque)
    for path in unknown_values(live, shape):
        if "." not in path:  # a flat member; the health check's are handled with it
            opaque[path] = picked.pop(path, live[path])
    if section == "runtime":
        check = opaque.get("healthcheck")
        if check is not None and "healthcheck" not in picked:
            del opaque["healthcheck"]  # left out whole (its method is unknown): unmanaged
    if opaque:
        picked[OPAQUE] = opaque
    return picked


def _written(block: Managed[Build] | Managed[Runtime] | Healthcheck | None) -> dict[str, Any]:
    """The settings of a live block (in the model) as a manifest writes them: the ones the live
    state holds, left out when empty or the value the spec states means nothing set or the
    server's default (omitted means unmanaged, so leaving them out never causes a diff). What
    the platform fills in when settings are first written (a root directory of `.`, no watch
    paths, no command) is not stated by the spec, so it is written as read."""
    if block is UNSET or block is None:
        return {}
    written: dict[str, Any] = {}
    for field in declared_fields(type(block)):
        value = getattr(block, field.attribute)
        if value is UNSET or value is None or value == "" or value == field.neutral:
            continue
        if field.form == "object":
            nested = _written(value)
            if nested:
                written[field.name] = nested
        else:
            data = field.data(value)
            written[field.name] = display_number(data) if field.form == "number" else data
    return written


def _runtime(runtime: Managed[Runtime], where: TreePath, notes: ExportNotes) -> dict[str, Any]:
    written = _written(runtime)
    check = written.get("healthcheck")
    if check is not None and unknown_values(check, HEALTHCHECK):
        # a method this reconciler does not know: the manifest cannot write this check
        notes.append(
            f"the health check of {where} has a method this reconciler does not know "
            f"({check.get('method')!r}): not exported (plans leave it as it is)"
        )
        del written["healthcheck"]
    return written


def _region(region: Region) -> dict[str, Any]:
    entry = to_data(region)
    if region.opaque:
        entry[OPAQUE] = thaw(region.opaque)
    return entry


def _variable(
    variable: LiveVariable, names: SecretNames, project: str, app: str, environment: str
) -> str | dict[str, str]:
    description = user_description(variable.description)
    if variable.kind == "recoverable" and variable.value is not None:
        if description is None:
            return variable.value
        return {"value": variable.value, "description": description}
    entry = {"fromEnv": names.name_for(project, app, environment, variable.key)}
    if description is not None:
        entry["description"] = description
    return entry


def user_description(description: str | None) -> str | None:
    """The description a person wrote, without reconciler's fingerprint marker."""
    if not description:
        return None
    user, _fingerprint = split_fingerprint(description)
    return user or None


def policy_entry(policy: LivePolicy) -> dict[str, Any]:
    """A live policy in the manifest's form: the plan engine's normal form (no ID, no
    false booleans, no empty match), with keys in the order of the docs, and what this
    reconciler does not know in `opaque` blocks (the policy's, each match item's)."""
    normal = policy.canonical
    rules = [kind for kind in ("firewall", "logging") if kind in normal]
    extra = [k for k in normal if k not in POLICY.fields]
    if not rules and not extra:
        raise ExportError(
            f'gateway.listPolicies returned policy "{policy.name}" with neither a '
            "rule nor any member this reconciler does not know; cannot export it"
        )
    entry: dict[str, Any] = {"name": normal["name"], "enabled": normal["enabled"]}
    match = normal.get("match")
    if isinstance(match, list) and match:
        entry["match"] = [_match_item(item) for item in match]
    opaque = {k: normal[k] for k in extra}
    for kind in rules:
        rule = normal[kind]
        if unknown_values(rule, POLICY.fields[kind]):
            opaque = deep_merge(opaque, {kind: rule})  # a value its field would refuse
            continue
        known = known_part(rule, POLICY.fields[kind])
        entry[kind] = (
            {k: known[k] for k in LOGGING_FIELDS if known.get(k)} if kind == ("logging") else known
        )
        unknown = unknown_part(rule, POLICY.fields[kind])
        if unknown:
            opaque = deep_merge(opaque, {kind: unknown})
    if opaque:
        entry[OPAQUE] = opaque
    return entry


def _match_item(item: JsonValue) -> dict[str, JsonValue]:
    """A match condition: the members this reconciler knows in the spec's order, what it does
    not know (members, and members of members) in the item's `opaque` block."""
    known = known_part(item, MATCH_ITEM)
    entry = {member: _ordered(known[member]) for member in _key_order(known, MATCH_MEMBER_ORDER)}
    opaque = unknown_part(item, MATCH_ITEM)
    if opaque:
        entry[OPAQUE] = opaque
    return entry


def _ordered(value: JsonValue) -> JsonValue:
    """Members in the spec's order (`name` before `present`/`value`, `exact`/`prefix`/`regex`
    before `ignoreCase`, `in` before `notIn`); unknown keys kept after them."""
    if isinstance(value, Mapping):
        return {k: _ordered(value[k]) for k in _key_order(value, MEMBER_KEY_ORDER)}
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def _key_order(mapping: Mapping[str, object], order: Sequence[str]) -> list[str]:
    return [k for k in order if k in mapping] + sorted(k for k in mapping if k not in order)
