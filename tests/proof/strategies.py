"""Hypothesis strategies for the proof suites: manifests within the spec's bounds, and live
states built through the platform API that overlap them.

A `Scenario` holds a manifest document (plain data, dumped to YAML by the test), the process
environment its `fromEnv` variables read, and the API calls (`SeedCall`) that build the initial
live state: some objects the manifest names already present with other values, extra variables,
domains and apps the manifest does not list, and a project outside the manifest.

Names come from small fixed pools so manifests and live states collide often:
- projects `shop` and `blog` may be in the manifest, `outside` never is;
- apps `web` and `api` may be in the manifest, `legacy` never is;
- hosts carry their project, app and environment (`www.web-production.shop.example.com`), so a
  host is only ever wanted in one environment and live extras never clash with manifest hosts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from reconciler.checks.registry import RULES

ENVIRONMENTS = ("production", "preview")
MANIFEST_PROJECTS = ("shop", "blog")
OUTSIDE_PROJECT = "outside"
MANIFEST_APPS = ("web", "api")
UNLISTED_APP = "legacy"
VARIABLE_KEYS = ("NODE_ENV", "API_URL", "TOKEN", "LOG_LEVEL")
EXTRA_VARIABLE_KEYS = ("OLD_FLAG", "LEGACY_SECRET")
REGIONS = ("iad", "fra", "lhr", "sfo")
REGEXES = ("^/api/.*", "^/v[0-9]+/", "(?i)^/admin")
IP_RANGES = ("10.0.0.0/8", "203.0.113.7", "2001:db8::/32", "192.168.1.0/24")

Document = dict[str, Any]


@dataclass(frozen=True)
class SeedCall:
    """One platform API call that builds the initial live state."""

    operation: str
    body: dict[str, Any]


@dataclass
class Scenario:
    manifest: Document
    env: dict[str, str] = field(default_factory=dict)
    seed: list[SeedCall] = field(default_factory=list)


def host(prefix: str, project: str, app: str, environment: str) -> str:
    return f"{prefix}.{app}-{environment}.{project}.example.com"


def shared_host(project: str, app: str) -> str:
    """A host the manifest may want in either environment of one app (never in both)."""
    return f"shared.{app}.{project}.example.com"


def spelled(name: str) -> Any:
    """The ways a manifest may write one host: as is, upper-cased, with a trailing dot."""
    return st.sampled_from([name, name.upper(), name + "."])


BULK_KEYS = tuple(f"BULK_{i:02d}" for i in range(60))


# --- leaves ------------------------------------------------------------------------------------

WORDS = st.text(alphabet="abcdefxyz0123456789-_ ./:", min_size=1, max_size=12)
NAMES = st.text(alphabet="abcdefghij ABC-", min_size=1, max_size=16)
DESCRIPTIONS = NAMES | st.sampled_from(["", " ", "note ", " spaced  "])
LOWER = st.text(alphabet="abcdefxyz0123456789-", min_size=1, max_size=10)


def _subset(draw: Any, members: dict[str, Any]) -> dict[str, Any]:
    """A random subset of `members` (name -> strategy), each drawn."""
    chosen = draw(st.sets(st.sampled_from(sorted(members)), max_size=len(members)))
    return {name: draw(members[name]) for name in sorted(chosen)}


@st.composite
def healthchecks(draw: Any) -> dict[str, Any]:
    check = {"method": draw(st.sampled_from(["GET", "POST"])), "path": "/" + draw(LOWER)}
    check.update(
        _subset(
            draw,
            {
                "intervalSeconds": st.integers(1, 3600),
                "timeoutSeconds": st.integers(1, 3600),
                "failureThreshold": st.integers(1, 100),
                "initialDelaySeconds": st.integers(0, 3600),
            },
        )
    )
    return check


def runtime_members() -> dict[str, Any]:
    return {
        "port": st.integers(1, 65535),
        "vCpus": st.integers(1, 32).map(lambda q: q / 4) | st.integers(1, 8),
        "memoryMib": st.integers(1, 16).map(lambda n: n * 256),
        "storageMib": st.integers(0, 8).map(lambda n: n * 512),
        "command": st.lists(WORDS, max_size=3),
        "healthcheck": st.none() | healthchecks(),
        "shutdownSignal": st.sampled_from(["SIGTERM", "SIGINT", "SIGQUIT", "SIGKILL"]),
        "upstreamProtocol": st.sampled_from(["http1", "h2c"]),
        "openapiSpecPath": st.none() | LOWER.map(lambda s: f"/{s}.json"),
    }


def build_members() -> dict[str, Any]:
    return {
        "dockerfile": st.none() | LOWER.map(lambda s: f"{s}.Dockerfile"),
        "rootDirectory": st.just(".") | LOWER,
        "buildCommand": st.none() | LOWER.map(lambda s: f"make {s}"),
        "watchPaths": st.lists(LOWER.map(lambda s: f"src/{s}/**"), max_size=3, unique=True),
        "autoDeploy": st.booleans(),
    }


@st.composite
def regions(draw: Any, least_max: int = 1) -> list[dict[str, Any]]:
    """Regions; the manifest wants at least one instance at most (`max` 1), the API allows 0."""
    names = draw(st.lists(st.sampled_from(REGIONS), min_size=1, max_size=3, unique=True))
    result = []
    for name in names:
        low = draw(st.integers(0, 3))
        high = max(least_max, low + draw(st.integers(0, 3)))
        result.append({"name": name, "replicas": {"min": low, "max": high}})
    return result


@st.composite
def string_matches(draw: Any) -> dict[str, Any]:
    """`{exact | prefix | regex, ignoreCase?}` as path and header/query values take it."""
    kind = draw(st.sampled_from(["exact", "prefix", "regex"]))
    value = draw(st.sampled_from(REGEXES)) if kind == "regex" else "/" + draw(LOWER)
    match: dict[str, Any] = {kind: value}
    if draw(st.booleans()):
        match["ignoreCase"] = draw(st.booleans())
    return match


@st.composite
def named_conditions(draw: Any, name: str) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"name": name, "present": True}
    return {"name": name, "value": draw(string_matches())}


@st.composite
def match_items(draw: Any) -> dict[str, Any]:
    """One match condition holding one or more members (every member of the spec can appear)."""
    members = {
        "path": string_matches().map(lambda m: {"path": m}),
        "method": st.lists(
            st.sampled_from(["GET", "POST", "PUT", "DELETE"]), min_size=1, max_size=3, unique=True
        ).map(lambda methods: {"methods": methods}),
        "header": named_conditions("X-Token"),
        "queryParam": named_conditions("debug"),
        "remoteIp": st.builds(
            lambda side, ips: {side: ips},
            st.sampled_from(["in", "notIn"]),
            st.lists(st.sampled_from(IP_RANGES), min_size=1, max_size=3, unique=True),
        ),
    }
    chosen = draw(st.sets(st.sampled_from(sorted(members)), min_size=1, max_size=2))
    return {name: draw(members[name]) for name in sorted(chosen)}


@st.composite
def policies(draw: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"name": draw(NAMES), "enabled": draw(st.booleans())}
    match = draw(st.lists(match_items(), max_size=3))
    if match or draw(st.booleans()):
        policy["match"] = match
    if draw(st.booleans()):
        policy["firewall"] = {"action": "ACTION_DENY"}
    else:
        flags = ("requestHeaders", "responseHeaders", "requestBody", "responseBody", "query")
        policy["logging"] = _subset(draw, dict.fromkeys(flags, st.booleans()))
    return policy


# --- manifest ----------------------------------------------------------------------------------


@st.composite
def manifest_variables(draw: Any, env: dict[str, str]) -> dict[str, Any]:
    """Literals (text, integers, `{value}` with kind/description) and `fromEnv` (env set)."""
    keys = draw(st.lists(st.sampled_from(VARIABLE_KEYS), max_size=3, unique=True))
    variables: dict[str, Any] = {}
    if draw(st.integers(0, 9)) == 0:  # more than one call's worth (50): sent in batches
        variables.update(
            {key: f"v{i}" for i, key in enumerate(BULK_KEYS[: draw(st.integers(45, 60))])}
        )
    for key in keys:
        form = draw(st.sampled_from(["text", "int", "value", "fromEnv"]))
        if form == "text":
            variables[key] = draw(WORDS)
        elif form == "int":
            variables[key] = draw(st.integers(0, 10**6))
        elif form == "value":
            entry: dict[str, Any] = {"value": draw(WORDS)}
            entry.update(
                _subset(
                    draw,
                    {
                        "kind": st.sampled_from(["recoverable", "writeonly"]),
                        "description": DESCRIPTIONS,
                    },
                )
            )
            variables[key] = entry
        else:
            name = f"PROOF_SECRET_{len(env)}"
            env[name] = draw(WORDS)
            entry = {"fromEnv": name}
            if draw(st.booleans()):
                entry["description"] = draw(DESCRIPTIONS)
            variables[key] = entry
    return variables


@st.composite
def environment_blocks(
    draw: Any, project: str, app: str, environment: str | None, env: dict[str, str]
) -> dict[str, Any]:
    """An environment block (or, with `environment=None`, an app's `defaults`)."""
    members: dict[str, Any] = {
        "runtime": st.builds(lambda: None),
        "build": st.builds(lambda: None),
        "regions": regions(),
        "variables": manifest_variables(env),
        "policies": st.lists(policies(), max_size=3),
    }
    if environment is not None:
        pool = [host(p, project, app, environment) for p in ("www", "api", "static")]
        if environment == "production":
            pool.append(shared_host(project, app))
        members["domains"] = st.lists(st.sampled_from(pool), max_size=2, unique=True).flatmap(
            lambda hosts: st.tuples(*(spelled(h) for h in hosts)).map(list)
        )
    block = _subset(draw, members)
    if "runtime" in block:
        block["runtime"] = _subset(draw, runtime_members())
    if "build" in block:
        block["build"] = _subset(draw, build_members())
    return block


@st.composite
def manifest_apps(draw: Any, project: str, slug: str, env: dict[str, str]) -> dict[str, Any]:
    app: dict[str, Any] = {}
    if draw(st.booleans()):
        app["name"] = draw(NAMES)
    if draw(st.booleans()):
        app["deleteProtection"] = draw(st.booleans())
    if slug == "web":  # `web` is a repository app, `api` an image app (live apps match them)
        git: dict[str, Any] = {"repository": f"acme/{draw(LOWER.filter(_owner_ok))}"}
        if draw(st.booleans()):
            git["defaultBranch"] = draw(st.sampled_from(["main", "develop", "release/1"]))
        app["git"] = None if draw(st.integers(0, 5)) == 0 else git
    else:
        app["oci"] = {"image": f"ghcr.io/acme/{slug}:{draw(st.integers(1, 9))}.0"}
    if draw(st.integers(0, 3)) == 0:
        app["defaults"] = draw(environment_blocks(project, slug, None, env))
    environments = draw(st.sets(st.sampled_from(ENVIRONMENTS), max_size=2))
    if environments:
        app["environments"] = {
            name: draw(environment_blocks(project, slug, name, env))
            for name in sorted(environments)
        }
    return app


def _owner_ok(text: str) -> bool:
    return text[0].isalnum() and text[-1].isalnum()


@st.composite
def manifests(draw: Any, env: dict[str, str]) -> Document:
    projects = draw(st.sets(st.sampled_from(MANIFEST_PROJECTS), min_size=1, max_size=2))
    # The proofs are about the platform and convergence; the built-in checks are guardrails of
    # their own (proven in tests/checks), and apply refuses what an error rule finds, such as
    # request bodies logged in production, which these manifests draw freely.
    document: Document = {"version": 1, "checks": {rule.id: "off" for rule in RULES}}
    prune = _subset(draw, dict.fromkeys(("variables", "domains", "apps"), st.booleans()))
    if prune:
        document["prune"] = prune
    document["projects"] = {}
    for slug in sorted(projects):
        project: dict[str, Any] = {}
        if draw(st.booleans()):
            project["name"] = draw(NAMES)
        if draw(st.booleans()):
            project["deleteProtection"] = draw(st.booleans())
        apps = draw(st.sets(st.sampled_from(MANIFEST_APPS), max_size=2))
        project["apps"] = {a: draw(manifest_apps(slug, a, env)) for a in sorted(apps)}
        document["projects"][slug] = project
    return document


# --- live state --------------------------------------------------------------------------------


@st.composite
def live_environment(
    draw: Any, project: str, app: str, environment: str, used_hosts: set[str]
) -> list[SeedCall]:
    """Settings, variables (write-only and recoverable), domains and policies already live."""
    target = {"project": project, "app": app, "environment": environment}
    calls: list[SeedCall] = []
    fields = _subset(draw, {**runtime_members(), **build_members()})
    if draw(st.booleans()):
        fields["regions"] = draw(regions(least_max=0))
    if fields:
        calls.append(SeedCall("environments.updateSettings", {**target, **fields}))
    keys = draw(
        st.lists(st.sampled_from(VARIABLE_KEYS + EXTRA_VARIABLE_KEYS), max_size=4, unique=True)
    )
    if keys:
        variables = []
        for key in keys:
            variable = {
                "key": key,
                "value": draw(WORDS),
                "kind": draw(st.sampled_from(["recoverable", "writeonly"])),
            }
            if draw(st.booleans()):
                variable["description"] = draw(DESCRIPTIONS)
            variables.append(variable)
        if draw(st.integers(0, 9)) == 0:  # more than one removal call's worth (50)
            variables += [{"key": f"STALE_{i:02d}", "value": "x"} for i in range(55)]
        for start in range(0, len(variables), 50):  # the API takes at most 50 a call
            batch = variables[start : start + 50]
            calls.append(
                SeedCall("environments.setEnvironmentVariables", {**target, "variables": batch})
            )
    pool = [host(p, project, app, environment) for p in ("www", "api", "old", "legacy")]
    if shared_host(project, app) not in used_hosts:  # at most one environment holds it
        pool.append(shared_host(project, app))
    for name in draw(st.lists(st.sampled_from(pool), max_size=2, unique=True)):
        used_hosts.add(name)
        calls.append(SeedCall("domains.createDomain", {**target, "domain": name}))
    if draw(st.booleans()):
        calls.append(
            SeedCall(
                "gateway.setPolicies",
                {**target, "policies": draw(st.lists(policies(), min_size=1, max_size=2))},
            )
        )
    return calls


@st.composite
def live_app(
    draw: Any, project: str, slug: str, *, protected_ok: bool, preview_domains_managed: bool
) -> list[SeedCall]:
    body: dict[str, Any] = {"project": project, "name": draw(NAMES), "slug": slug}
    if slug == "api":
        body["oci"] = {"image": f"ghcr.io/acme/{slug}:0.{draw(st.integers(1, 9))}"}
    else:
        body["git"] = {"repository": f"acme/live-{slug}", "defaultBranch": "main"}
    calls = [SeedCall("apps.createApp", body)]
    if protected_ok and draw(st.booleans()):
        calls.append(
            SeedCall("apps.updateApp", {"project": project, "app": slug, "deleteProtection": True})
        )
    # the shared host may wait in preview only where the manifest can move it from there (from
    # an unmanaged environment a move is refused by design: a precise error, not convergence)
    used: set[str] = set()
    for environment in sorted(draw(st.sets(st.sampled_from(ENVIRONMENTS), max_size=2))):
        blocked = set(used)
        if environment == "preview" and not preview_domains_managed:
            blocked.add(shared_host(project, slug))
        made = draw(live_environment(project, slug, environment, blocked))
        used |= {c.body["domain"] for c in made if c.operation == "domains.createDomain"}
        calls += made
    return calls


@st.composite
def live_states(draw: Any, manifest: Document) -> list[SeedCall]:
    """Calls that build a live state overlapping `manifest` and reaching beyond it.

    Unlisted apps are only protected when `prune.apps` is off (a protected app the manifest
    would prune is a blocked change: the plan never empties, which is not convergence's question).
    """
    prune_apps = manifest.get("prune", {}).get("apps", False)
    calls: list[SeedCall] = []
    for project in (*MANIFEST_PROJECTS, OUTSIDE_PROJECT):
        if project != OUTSIDE_PROJECT and not draw(st.booleans()):
            continue
        calls.append(SeedCall("projects.createProject", {"name": draw(NAMES), "slug": project}))
        if draw(st.booleans()):
            calls.append(
                SeedCall("projects.updateProject", {"project": project, "deleteProtection": True})
            )
        for app in (*MANIFEST_APPS, UNLISTED_APP):
            always = app == UNLISTED_APP and project == OUTSIDE_PROJECT
            if always or draw(st.booleans()):
                protected_ok = not (prune_apps and project in manifest["projects"])
                listed_app = manifest["projects"].get(project, {}).get("apps", {}).get(app, {})
                preview = listed_app.get("environments", {}).get("preview", {})
                calls += draw(
                    live_app(
                        project,
                        app,
                        protected_ok=protected_ok,
                        preview_domains_managed="domains" in preview,
                    )
                )
    return calls


@st.composite
def scenarios(draw: Any) -> Scenario:
    env: dict[str, str] = {}
    manifest = draw(manifests(env))
    return Scenario(manifest=manifest, env=env, seed=draw(live_states(manifest)))
