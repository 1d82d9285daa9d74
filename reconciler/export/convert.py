"""One live project -> the manifest's plain-data form.

Only what differs from a default the spec states is written (omitted means unmanaged, so
leaving a field out can never cause a diff), with keys in the order a person writes them.
Write-only variables become `fromEnv` references with generated names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.errors import ExportError
from reconciler.export.live import ENVIRONMENT_ORDER, LiveApp, LiveEnvironment, LiveProject
from reconciler.export.secret_names import SecretNames
from reconciler.plan.kinds.base import display_number
from reconciler.plan.kinds.policies import normalise_policy
from reconciler.plan.kinds.settings import FIELDS, HEALTHCHECK_DEFAULTS
from reconciler.plan.secrets import split_fingerprint

ENVIRONMENT_KEY_ORDER = ("build", "runtime", "regions", "variables", "domains", "policies")

# The settings fields, in the plan engine's (the spec's) order, so export and plan agree on
# what a setting is.
BUILD_FIELDS = tuple(f.api for f in FIELDS if f.section == "build")
RUNTIME_FIELDS = tuple(f.api for f in FIELDS if f.section == "runtime")
# Values the spec itself states as the default or as "nothing set" (storage: "0 means
# none"; healthcheck 10/5/3/0, the plan engine's own table): a field holding one is left
# out (omitted means unmanaged, so leaving it out can never cause a diff). What the platform
# fills in when settings are first written (a root directory of `.`, no watch paths, no
# command) is not stated by the spec, so it is written as read.
NEUTRAL_RUNTIME: Mapping[str, Any] = {"storageMib": 0}
HEALTHCHECK_FIELDS = ("method", "path", *HEALTHCHECK_DEFAULTS)
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


def project_entry(
    project: LiveProject, names: SecretNames, options: ExportOptions = ExportOptions()
) -> dict[str, Any]:
    entry = _named_entry(project.resource, project.slug, options)
    apps = {app.slug: app_entry(project.slug, app, names, options) for app in project.apps}
    if apps:
        entry["apps"] = apps
    return entry


def app_entry(
    project: str, app: LiveApp, names: SecretNames, options: ExportOptions = ExportOptions()
) -> dict[str, Any]:
    entry = _named_entry(app.resource, app.slug, options)
    entry.update(_source(app.resource))
    environments: dict[str, Any] = {}
    for env in app.environments:
        env_entry = environment_entry(project, app.slug, env, names)
        if env_entry:
            environments[env.slug] = env_entry
    if options.factor_defaults:
        defaults, environments = factor_defaults(environments)
        if defaults:
            entry["defaults"] = defaults
    if environments:
        entry["environments"] = environments
    return entry


def _named_entry(resource: Mapping[str, Any], slug: str, options: ExportOptions) -> dict[str, Any]:
    """What a project and an app write first: name, the pinned ID, delete protection."""
    entry: dict[str, Any] = {"name": resource.get("name", slug)}
    if options.pin_ids:
        entry["id"] = resource["id"]
    if resource.get("deleteProtection"):
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
    if set(envs) != set(ENVIRONMENT_ORDER):
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


def _source(app: Mapping[str, Any]) -> dict[str, Any]:
    oci, git = app.get("oci"), app.get("git")
    if isinstance(oci, Mapping) and oci.get("image"):
        return {"oci": {"image": oci["image"]}}
    if isinstance(git, Mapping) and git.get("repository"):
        source = {"repository": git["repository"]}
        if git.get("defaultBranch"):  # the repository's own default is unknown: say it
            source["defaultBranch"] = git["defaultBranch"]
        return {"git": source}
    # A repository app with nothing connected yet (or an old app without a source):
    # leaving the source out keeps it unmanaged, which matches live exactly.
    return {}


def environment_entry(
    project: str, app: str, env: LiveEnvironment, names: SecretNames
) -> dict[str, Any]:
    resource = env.resource
    entry: dict[str, Any] = {}
    build = _pick(resource.get("build"), BUILD_FIELDS)
    if build:
        entry["build"] = build
    runtime = _runtime(resource.get("runtime"))
    if runtime:
        entry["runtime"] = runtime
    if resource.get("regions"):
        entry["regions"] = [_region(r) for r in resource["regions"]]
    variables = {
        v["key"]: _variable(v, names, project, app, env.slug)
        for v in sorted(env.variables, key=lambda v: str(v.get("key")))
    }
    if variables:
        entry["variables"] = variables
    hosts = sorted({str(d["domain"]).lower().rstrip(".") for d in env.domains})
    if hosts:
        entry["domains"] = hosts
    if env.policies:
        entry["policies"] = [policy_entry(p) for p in env.policies]
    return entry


def _pick(
    settings: Any, fields: Sequence[str], neutral: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    neutral = neutral or {}
    if not isinstance(settings, Mapping):
        return {}
    picked = {}
    for name in fields:
        value = settings.get(name)
        if value is None or value == "" or (name in neutral and value == neutral[name]):
            continue
        picked[name] = list(value) if isinstance(value, list) else value
    return picked


def _runtime(runtime: Any) -> dict[str, Any]:
    picked = _pick(runtime, RUNTIME_FIELDS, NEUTRAL_RUNTIME)
    if "vCpus" in picked:
        picked["vCpus"] = display_number(picked["vCpus"])
    if "healthcheck" in picked:
        check = _pick(picked["healthcheck"], HEALTHCHECK_FIELDS, HEALTHCHECK_DEFAULTS)
        if check:
            picked["healthcheck"] = check
        else:
            del picked["healthcheck"]
    return picked


def _region(region: Mapping[str, Any]) -> dict[str, Any]:
    replicas = region.get("replicas") or {}
    return {"name": region["name"], "replicas": {"min": replicas["min"], "max": replicas["max"]}}


def _variable(
    variable: Mapping[str, Any], names: SecretNames, project: str, app: str, environment: str
) -> Any:
    description = user_description(variable.get("description"))
    if variable.get("kind") == "recoverable" and isinstance(variable.get("value"), str):
        if description is None:
            return variable["value"]
        return {"value": variable["value"], "description": description}
    entry: dict[str, Any] = {"fromEnv": names.name_for(project, app, environment, variable["key"])}
    if description is not None:
        entry["description"] = description
    return entry


def user_description(description: Any) -> str | None:
    """The description a person wrote, without reconciler's fingerprint marker."""
    if not isinstance(description, str) or not description:
        return None
    user, _fingerprint = split_fingerprint(description)
    return user or None


def policy_entry(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A live policy in the manifest's form: the plan engine's normal form (no ID, no
    false booleans, no empty match), with keys in the order of the docs."""
    if not isinstance(policy.get("firewall"), Mapping) and not isinstance(
        policy.get("logging"), Mapping
    ):
        raise ExportError(
            f'gateway.listPolicies returned policy "{policy.get("name")}" with neither a '
            "firewall nor a logging rule; cannot export it"
        )
    normal = normalise_policy(policy)
    entry: dict[str, Any] = {"name": normal["name"], "enabled": normal["enabled"]}
    if normal.get("match"):
        entry["match"] = [_match_item(item) for item in normal["match"]]
    if "firewall" in normal:
        entry["firewall"] = normal["firewall"]
    else:
        entry["logging"] = {k: True for k in LOGGING_FIELDS if normal["logging"].get(k)}
        entry["logging"].update({k: True for k in normal["logging"] if k not in LOGGING_FIELDS})
    return entry


def _match_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {member: _ordered(item[member]) for member in _key_order(item, MATCH_MEMBER_ORDER)}


def _ordered(value: Any) -> Any:
    """Members in the spec's order (`name` before `present`/`value`, `exact`/`prefix`/`regex`
    before `ignoreCase`, `in` before `notIn`); unknown keys kept after them."""
    if isinstance(value, Mapping):
        return {k: _ordered(value[k]) for k in _key_order(value, MEMBER_KEY_ORDER)}
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def _key_order(mapping: Mapping[str, Any], order: Sequence[str]) -> list[str]:
    return [k for k in order if k in mapping] + sorted(k for k in mapping if k not in order)
