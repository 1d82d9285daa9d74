"""Live state -> manifest: `reconciler export`.

Three steps, each usable alone:

1. `read_workspace` reads the live objects with the fewest calls (apps per
   project, both environments of an app in one call, domains workspace-wide
   or per project and grouped locally), concurrently; the client bounds how
   many requests are in flight.
2. `project_entry` turns one live project into the manifest's plain-data form,
   writing only what differs from the platform's defaults and putting keys in
   the order a person writes them. Write-only variables become `fromEnv`
   references with generated environment-variable names.
3. `dump_manifest` renders YAML that `reconciler validate` accepts.

The result round-trips: planning the exported manifest against the same live
state reports no changes (write-only values are compared by presence).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from reconciler.errors import ReconcilerError
from reconciler.platform.errors import NotFound
from reconciler.resources.common import display_number
from reconciler.resources.policies import normalise_policy
from reconciler.resources.settings import HEALTHCHECK_DEFAULTS
from reconciler.secrets import split_fingerprint

ENVIRONMENT_ORDER = ("production", "preview")
ENVIRONMENT_KEY_ORDER = ("build", "runtime", "regions", "variables", "domains", "policies")

# Values the spec itself defines as the default or as "nothing set"; a field
# holding one of them is left out of the export (omitted means unmanaged, so
# leaving it out can never cause a diff). Healthcheck defaults and the policy
# normalisation are the plan engine's own, so both sides agree on "default".
NEUTRAL_BUILD: Mapping[str, Any] = {"rootDirectory": ".", "watchPaths": []}
NEUTRAL_RUNTIME: Mapping[str, Any] = {"storageMib": 0, "command": []}

BUILD_FIELDS = ("dockerfile", "rootDirectory", "buildCommand", "watchPaths", "autoDeploy")
RUNTIME_FIELDS = (
    "port",
    "vCpus",
    "memoryMib",
    "storageMib",
    "command",
    "healthcheck",
    "shutdownSignal",
    "upstreamProtocol",
    "openapiSpecPath",
)
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


class ExportError(ReconcilerError):
    """The live state could not be read or has a shape export cannot write."""


class Client(Protocol):
    """What export needs from `reconciler.platform.client.PlatformClient`."""

    async def call(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> Any: ...

    async def list_all(
        self, operation: str, body: Mapping[str, Any], *, object_id: str | None = None
    ) -> list[dict]: ...


# --- live state -------------------------------------------------------------


@dataclass
class LiveEnvironment:
    resource: dict[str, Any]
    variables: list[dict[str, Any]] = field(default_factory=list)
    policies: list[dict[str, Any]] = field(default_factory=list)
    domains: list[dict[str, Any]] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return str(self.resource["slug"])


@dataclass
class LiveApp:
    resource: dict[str, Any]
    environments: list[LiveEnvironment] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return str(self.resource["slug"])


@dataclass
class LiveProject:
    resource: dict[str, Any]
    apps: list[LiveApp] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return str(self.resource["slug"])


async def read_workspace(client: Client, project_slugs: Sequence[str] = ()) -> list[LiveProject]:
    """Every project (or the named ones) with its apps, environments, variables,
    policies and domains. Domains come from one workspace-wide list when every
    project is exported, else one filtered list per project."""
    if project_slugs:
        operation = "projects.getProject"
        resources = await asyncio.gather(
            *(_get_project(client, slug) for slug in dict.fromkeys(project_slugs))
        )
    else:
        operation = "projects.listProjects"
        resources = await client.list_all(operation, {})
    projects = [LiveProject(_checked(p, operation, "slug", "id")) for p in resources]
    domains_task = _read_domains(client, [p.slug for p in projects], everything=not project_slugs)
    _, domains = await asyncio.gather(
        asyncio.gather(*(_read_project(client, p) for p in projects)), domains_task
    )
    _attach_domains(projects, domains)
    return sorted(projects, key=lambda p: p.slug)


async def _get_project(client: Client, slug: str) -> dict[str, Any]:
    try:
        return await client.call("projects.getProject", {"project": slug})
    except NotFound:
        raise ExportError(
            f'project "{slug}" does not exist in this workspace',
            hint="check the slug with `reconciler export` (all projects) or the dashboard",
        ) from None


async def _read_project(client: Client, project: LiveProject) -> None:
    apps = await client.list_all("apps.listApps", {"project": project.slug})
    project.apps = [LiveApp(_checked(a, "apps.listApps", "slug", "id")) for a in apps]
    project.apps.sort(key=lambda a: a.slug)
    await asyncio.gather(*(_read_app(client, project.slug, app) for app in project.apps))


async def _read_app(client: Client, project: str, app: LiveApp) -> None:
    body = {"project": project, "app": app.slug}
    environments = await client.list_all("environments.listEnvironments", body)
    app.environments = [
        LiveEnvironment(_checked(e, "environments.listEnvironments", "slug", "id"))
        for e in environments
    ]
    app.environments.sort(key=lambda e: _environment_rank(e.slug))
    await asyncio.gather(*(_read_environment(client, body, env) for env in app.environments))


async def _read_environment(client: Client, app_body: dict[str, str], env: LiveEnvironment) -> None:
    body = {**app_body, "environment": env.slug}
    env_id = str(env.resource["id"])  # a 403 then names the ID-specific permission
    env.variables, env.policies = await asyncio.gather(
        client.list_all("environments.listEnvironmentVariables", body, object_id=env_id),
        client.list_all("gateway.listPolicies", body, object_id=env_id),
    )


async def _read_domains(
    client: Client, project_slugs: Sequence[str], *, everything: bool
) -> list[dict[str, Any]]:
    if everything:
        return await client.list_all("domains.listDomains", {}) if project_slugs else []
    pages = await asyncio.gather(
        *(client.list_all("domains.listDomains", {"project": slug}) for slug in project_slugs)
    )
    return [domain for page in pages for domain in page]


def _attach_domains(projects: Iterable[LiveProject], domains: Iterable[dict[str, Any]]) -> None:
    by_environment: dict[str, list[dict[str, Any]]] = {}
    for domain in domains:
        by_environment.setdefault(str(domain.get("environmentId")), []).append(domain)
    for project in projects:
        for app in project.apps:
            for env in app.environments:
                env.domains = by_environment.get(str(env.resource["id"]), [])


def _checked(resource: Any, operation: str, *required: str) -> dict[str, Any]:
    if not isinstance(resource, dict) or any(
        not isinstance(resource.get(name), str) for name in required
    ):
        raise ExportError(
            f"{operation} returned an object without {' or '.join(required)}; "
            "cannot export it (is the base URL a platform API?)"
        )
    return resource


def _environment_rank(slug: str) -> int:
    return ENVIRONMENT_ORDER.index(slug) if slug in ENVIRONMENT_ORDER else len(ENVIRONMENT_ORDER)


# --- generated names for write-only values ----------------------------------


@dataclass(frozen=True)
class SecretInput:
    """A write-only variable exported as `fromEnv: env_name`: its value must be provided."""

    env_name: str
    project: str
    app: str
    environment: str
    key: str

    @property
    def address(self) -> str:
        return f"variable.{self.project}/{self.app}/{self.environment}/{self.key}"


class SecretNames:
    """Hands out unique environment-variable names like SHOP_WEB_PRODUCTION_STRIPE_KEY."""

    def __init__(self) -> None:
        self.inputs: list[SecretInput] = []
        self._taken: set[str] = set()

    def name_for(self, project: str, app: str, environment: str, key: str) -> str:
        base = re.sub(r"[^A-Z0-9]", "_", f"{project}_{app}_{environment}_{key}".upper())
        if base[0].isdigit():
            base = f"_{base}"  # an environment-variable name cannot start with a digit
        name, suffix = base, 2
        while name in self._taken:  # `a-b/c` and `a/b-c` would otherwise collide
            name, suffix = f"{base}_{suffix}", suffix + 1
        self._taken.add(name)
        self.inputs.append(SecretInput(name, project, app, environment, key))
        return name


# --- live resource -> manifest data -----------------------------------------


@dataclass(frozen=True)
class ExportOptions:
    pin_ids: bool = True
    """Write `id:` for projects and apps, so renaming a slug key later renames the
    object (updateProject/updateApp) instead of deleting and re-creating it."""
    factor_defaults: bool = True
    """Write what both environments of an app share once, under `defaults`."""


def manifest_document(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A whole manifest file holding the given `projects` entries (prune left at its defaults)."""
    return {"version": 1, "projects": dict(entries)}


def project_entry(
    project: LiveProject, names: SecretNames, options: ExportOptions = ExportOptions()
) -> dict[str, Any]:
    resource = project.resource
    entry: dict[str, Any] = {"name": resource.get("name", project.slug)}
    if options.pin_ids:
        entry["id"] = resource["id"]
    if resource.get("deleteProtection"):
        entry["deleteProtection"] = True
    apps = {app.slug: app_entry(project.slug, app, names, options) for app in project.apps}
    if apps:
        entry["apps"] = apps
    return entry


def app_entry(
    project: str, app: LiveApp, names: SecretNames, options: ExportOptions = ExportOptions()
) -> dict[str, Any]:
    resource = app.resource
    entry: dict[str, Any] = {"name": resource.get("name", app.slug)}
    if options.pin_ids:
        entry["id"] = resource["id"]
    if resource.get("deleteProtection"):
        entry["deleteProtection"] = True
    entry.update(_source(resource))
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
    build = _pick(resource.get("build"), BUILD_FIELDS, NEUTRAL_BUILD)
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


# --- whole exports ----------------------------------------------------------


@dataclass
class Export:
    """The manifest data per project slug, and the secrets a user must provide."""

    projects: dict[str, dict[str, Any]]
    secrets: list[SecretInput]
    options: ExportOptions = field(default_factory=ExportOptions)

    def single_document(self) -> dict[str, Any]:
        return manifest_document(self.projects)

    def documents_by_project(self) -> dict[str, dict[str, Any]]:
        return {slug: manifest_document({slug: entry}) for slug, entry in self.projects.items()}

    def render(self) -> str:
        """One manifest holding every project."""
        return dump_manifest(self.single_document(), header=self._header(self.secrets))

    def render_by_project(self) -> dict[str, str]:
        """One manifest per project slug, each naming the secrets it needs."""
        return {
            slug: dump_manifest(
                document, header=self._header([s for s in self.secrets if s.project == slug])
            )
            for slug, document in self.documents_by_project().items()
        }

    def _header(self, secrets: Sequence[SecretInput]) -> list[str]:
        return header_lines(pinned_ids=self.options.pin_ids, secrets=secrets)


def build_export(
    projects: Sequence[LiveProject], options: ExportOptions = ExportOptions()
) -> Export:
    names = SecretNames()
    entries = {}
    for project in projects:
        try:
            entries[project.slug] = project_entry(project, names, options)
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            # The client checks envelopes, not every member: a response missing one is
            # reported with the project it belongs to, never as a traceback.
            raise ExportError(
                f'project "{project.slug}": the platform returned an object this export cannot '
                f"read ({type(error).__name__}: {error})",
                hint="is the base URL the platform API? rerun with -v to see the calls",
            ) from None
    return Export(entries, names.inputs, options)


async def export_workspace(
    client: Client, project_slugs: Sequence[str] = (), options: ExportOptions = ExportOptions()
) -> Export:
    return build_export(await read_workspace(client, project_slugs), options)


# --- YAML -------------------------------------------------------------------


def header_lines(*, pinned_ids: bool, secrets: Sequence[SecretInput]) -> list[str]:
    """The comment an exported file starts with: what was left out, and what to provide."""
    lines = ["Exported by `reconciler export`: fields at the platform's defaults are left out."]
    if pinned_ids:
        lines.append("`id:` pins each project and app: a changed slug key renames it in place.")
    if secrets:
        lines.append("Write-only values cannot be read back; set these before plan/apply:")
        lines += [f"  {s.env_name}" for s in secrets]
    return lines


FLOW_WIDTH = 64  # JSON length; the YAML form is shorter, so lines stay under 100


class _FlowMap(dict):
    pass


class _FlowList(list):
    pass


class _ManifestDumper(yaml.SafeDumper):
    """Block style for structure, flow style for short leaf maps and lists,
    literal blocks for multi-line strings; no tags, keys in insertion order."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Indent list items under their key, as people (and the docs) write them.
        return super().increase_indent(flow, False)


# Line breaks YAML normalises or folds (and PyYAML mis-quotes) and control characters: only
# a double-quoted scalar, with escapes, keeps them exactly.
_NEEDS_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\r]")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if _NEEDS_ESCAPES.search(value):
        style: str | None = '"'
    elif "\n" in value:
        style = "|" if _reads_well_as_block(value) else '"'
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _reads_well_as_block(value: str) -> bool:
    """A plain `|` block: no indentation or chomping indicators, nothing invisible at line ends
    (a PEM file or a script reads well; leading spaces or blank tails are clearer quoted)."""
    lines = value.removesuffix("\n").split("\n")
    return (
        bool(value.strip())
        and not value[0].isspace()
        and not value.endswith("\n\n")
        and not any(line != line.rstrip() for line in lines)
    )


def _represent_flow_map(dumper: yaml.SafeDumper, value: dict) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=True)


def _represent_flow_list(dumper: yaml.SafeDumper, value: list) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


_ManifestDumper.add_representer(str, _represent_str)
_ManifestDumper.add_representer(_FlowMap, _represent_flow_map)
_ManifestDumper.add_representer(_FlowList, _represent_flow_list)


# The structural levels a person writes in block style; everything below them
# (settings, regions, match items, small lists) is written in flow style when short.
_BLOCK_LEVELS: Mapping[str, Mapping[str, str]] = {
    "root": {"projects": "projects"},
    "projects": {"*": "project"},
    "project": {"apps": "apps"},
    "apps": {"*": "app"},
    "app": {"environments": "environments", "defaults": "environment"},
    "environments": {"*": "environment"},
    "environment": {"variables": "variables", "policies": "policies"},
    "variables": {},
    "policies": {"*": "policy"},
    "policy": {},
}


def _styled(value: Any, level: str | None = "root") -> Any:
    """Mark short collections below the structural levels for flow style."""
    children = _BLOCK_LEVELS.get(level or "", {})
    if isinstance(value, dict):
        inner = {k: _styled(v, children.get(k, children.get("*"))) for k, v in value.items()}
        return inner if level or not _fits_one_line(inner) else _FlowMap(inner)
    if isinstance(value, list):
        items = [_styled(v, children.get("*")) for v in value]
        return items if level or not _fits_one_line(items) else _FlowList(items)
    return value


def _fits_one_line(collection: dict[str, Any] | list[Any]) -> bool:
    values = list(collection.values()) if isinstance(collection, dict) else collection
    if any(isinstance(v, str) and "\n" in v for v in values):
        return False
    if not all(_is_scalar(v) or isinstance(v, _FlowMap | _FlowList) for v in values):
        return False
    return len(json.dumps(collection)) <= FLOW_WIDTH


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def dump_manifest(document: Mapping[str, Any], *, header: Sequence[str] = ()) -> str:
    """YAML for a manifest document, after `header` as `#` comment lines."""
    text = yaml.dump(
        _styled(dict(document)),
        Dumper=_ManifestDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return "".join(f"# {line}\n" for line in header) + text
