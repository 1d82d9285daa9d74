"""A validated document -> the immutable desired-state model (model.py).

Only called once validation found nothing wrong, so the data has the shapes
the schema promises. This is where the manifest's conveniences become the
model's plain meaning: `defaults` merged into both environments, variable
shorthands expanded and kinds defaulted, healthcheck server defaults filled,
hosts normalised, policies normalised to the API's shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from reconciler.manifest.document import Document
from reconciler.manifest.layers import COMBINED_LISTS, Layered
from reconciler.manifest.model import (
    UNSET,
    App,
    Build,
    ChecksSettings,
    Domain,
    Environment,
    EnvironmentName,
    FromEnv,
    GitSource,
    LiteralValue,
    Manifest,
    OciSource,
    Policy,
    PolicyTest,
    Position,
    Project,
    Prune,
    Region,
    Runtime,
    Scope,
    SourceFile,
    Variable,
    VariableSource,
    Waiver,
    freeze,
)
from reconciler.manifest.opaque import OPAQUE, merge_opaque
from reconciler.manifest.policy_rules import STRING_MATCH_KINDS
from reconciler.manifest.problems import Path
from reconciler.manifest.secret_sources import from_file
from reconciler.manifest.semantic import normalise_host
from reconciler.manifest.settings import declared_fields, from_data

Block = TypeVar("Block", Build, Runtime)


def build_manifest(document: Document, base_dir: str = ".") -> Manifest:
    prune = document.prune
    return Manifest(
        version=1,
        prune=Prune(
            variables=prune.get("variables", True),
            domains=prune.get("domains", True),
            apps=prune.get("apps", False),
        ),
        projects=tuple(
            _project(document, slug, project) for slug, project in document.projects.items()
        ),
        sources=tuple(SourceFile(f.display, f.sha256) for f in document.files),
        base_dir=base_dir,
        checks=_checks_settings(document),
    )


def _checks_settings(document: Document) -> ChecksSettings:
    rules = document.blocks.get("checks", {})
    limits = document.blocks.get("limits", {})
    positions = {
        f"{block}.{key}": document.block_at((block, key))
        for block, data in (("checks", rules), ("limits", limits))
        for key in data
    }
    return ChecksSettings(
        rules=freeze(rules),
        limits=freeze(limits),
        waivers=MappingProxyType(_waivers(document)),
        positions=MappingProxyType(positions),
        tested_environments=frozenset(
            (str(path[1]), app_slug, name)
            for path, app_slug, _ in document.apps()
            for name, layered in document.environments(path)
            if layered.items("policyTests") is not None
        ),
    )


def _waivers(document: Document) -> dict[Scope, Mapping[str, Waiver]]:
    """Every object's `checks:` waivers by its scope; an environment's include its app's
    `defaults` (the environment wins, rule by rule)."""
    found: dict[Scope, Mapping[str, Waiver]] = {}

    def add(scope: Scope, layered: Layered | None) -> None:
        if layered is None:
            return
        waivers = {}
        for rule in layered.names():
            top = layered.top(rule)
            assert top is not None  # names() lists only keys some layer has
            waivers[rule] = Waiver(top[0]["reason"], document.key_at(top[1]))
        if waivers:
            found[scope] = MappingProxyType(waivers)

    for slug, project in document.projects.items():
        add((slug,), Layered([(project, ("projects", slug))]).child("checks"))
    for path, app_slug, app in document.apps():
        scope = (str(path[1]), app_slug)
        add(scope, Layered([(app, path)]).child("checks"))
        for name, layered in document.environments(path):
            add((*scope, name), layered.child("checks"))
    return found


def _positions(document: Document, path: Path, data: dict[str, Any]) -> dict[str, Position]:
    return {key: document.at((*path, key)) for key in data}


def _project(document: Document, slug: str, project: dict[str, Any]) -> Project:
    path: Path = ("projects", slug)
    apps = project.get("apps")
    return Project(
        slug=slug,
        id=project.get("id"),
        name=project.get("name", UNSET),
        delete_protection=project.get("deleteProtection", UNSET),
        apps=UNSET
        if apps is None
        else tuple(_app(document, (*path, "apps", s), s, a) for s, a in apps.items()),
        pos=document.key_at(path),
        positions=_positions(document, path, project),
    )


def _app(document: Document, path: Path, slug: str, app: dict[str, Any]) -> App:
    git: Any = UNSET
    if "git" in app:
        raw = app["git"]
        git = None
        if raw is not None:
            git = GitSource(
                repository=raw.get("repository", UNSET),
                default_branch=raw.get("defaultBranch", UNSET),
                pos=document.at((*path, "git")),
            )
    oci: Any = UNSET
    if app.get("oci") is not None:
        oci = OciSource(image=app["oci"]["image"], pos=document.at((*path, "oci")))
    return App(
        slug=slug,
        id=app.get("id"),
        name=app.get("name", UNSET),
        delete_protection=app.get("deleteProtection", UNSET),
        git=git,
        oci=oci,
        environments=tuple(
            _environment(document, name, layered) for name, layered in document.environments(path)
        ),
        pos=document.key_at(path),
        positions=_positions(document, path, app),
    )


def _environment(document: Document, name: EnvironmentName, layered: Layered) -> Environment:
    build = layered.child("build")
    runtime = layered.child("runtime")
    return Environment(
        name=name,
        build=UNSET if build is None else _settings_block(document, Build, build),
        runtime=UNSET if runtime is None else _settings_block(document, Runtime, runtime),
        regions=_listed(layered, "regions", lambda v, p: _region(document, v, p)),
        variables=_variables(document, layered),
        domains=_listed(layered, "domains", lambda v, p: Domain(normalise_host(v), document.at(p))),
        policies=_listed(layered, "policies", lambda v, p: _policy(document, v, p)),
        policy_tests=_listed(layered, "policyTests", lambda v, p: _policy_test(document, v, p))
        or (),
        opaque=_opaque(layered),
        pos=document.key_at(layered.path),
        positions=_field_positions(document, layered),
    )


def _listed(layered: Layered, key: str, make: Any) -> Any:
    found = layered.items(key)
    if found is None:
        return UNSET
    return tuple(make(item, path) for item, path in found[0])


def _field_positions(document: Document, layered: Layered) -> dict[str, Position]:
    return {key: document.at(path) for key in layered.names() if (path := _where(layered, key))}


def _where(layered: Layered, key: str) -> Path | None:
    """Where the value of `key` is written (a combined list: where its own items are)."""
    found = layered.items(key) if key in COMBINED_LISTS else layered.top(key)
    return None if found is None else found[1]


def _opaque(layered: Layered) -> Any:
    """The block's `opaque` members, merged across the layers as any mapping is."""
    merged = layered.value(OPAQUE)
    return freeze(merged) if isinstance(merged, dict) and merged else MappingProxyType({})


def _settings_block(document: Document, model: type[Block], layered: Layered) -> Block:
    """A `build` or `runtime` block: each setting its model declares, as the top layer that
    writes it gives it (an object, a health check, merged across the layers)."""
    values: dict[str, Any] = {}
    for field in declared_fields(model):
        top = layered.top(field.name)
        if top is not None:
            written = layered.value(field.name) if field.form == "object" else top[0]
            values[field.attribute] = field.read(written)
    return model(**values, opaque=_opaque(layered), positions=_field_positions(document, layered))


def _region(document: Document, region: dict[str, Any], path: Path) -> Region:
    return from_data(Region, region, opaque=freeze(region.get(OPAQUE) or {}), pos=document.at(path))


def _variables(document: Document, layered: Layered) -> Any:
    variables = layered.child("variables")
    if variables is None:
        return UNSET if layered.top("variables") is None else ()
    result = []
    for key in variables.names():
        found = variables.top(key)
        assert found is not None  # names() lists only keys some layer has
        result.append(_variable(document, key, *found))
    return tuple(result)


def _variable(document: Document, key: str, raw: Any, path: Path) -> Variable:
    pos = document.key_at(path)
    if not isinstance(raw, dict):
        return Variable(key, LiteralValue(str(raw)), "recoverable", pos=pos)
    source: VariableSource
    if "value" in raw:
        source = LiteralValue(str(raw["value"]))
    elif "fromEnv" in raw:
        source = FromEnv(raw["fromEnv"])
    else:
        directory = document.directory_of(document.at((*path, "fromFile")))
        source = from_file(raw["fromFile"], directory)
    default_kind = "recoverable" if isinstance(source, LiteralValue) else "writeonly"
    return Variable(
        key=key,
        source=source,
        kind=raw.get("kind", default_kind),
        description=raw.get("description", UNSET),
        pos=pos,
    )


def _policy(document: Document, policy: dict[str, Any], path: Path) -> Policy:
    """A policy's rule is its `firewall` or `logging`; a policy of a kind this reconciler
    does not know has neither, and its `opaque` block gives the rule."""
    rule_kind: Literal["firewall", "logging"] | None = next(
        (kind for kind in ("firewall", "logging") if kind in policy), None
    )
    rule = (policy[rule_kind] or {}) if rule_kind is not None else {}
    if rule_kind == "logging":
        rule = {flag: True for flag, on in rule.items() if on is True}
    return Policy(
        name=policy["name"],
        enabled=policy["enabled"],
        match=freeze([_match_item(merge_opaque(item)) for item in policy.get("match") or ()]),
        rule_kind=rule_kind,
        rule=freeze(dict(rule)),
        pos=document.at(path),
        opaque=freeze(policy.get(OPAQUE) or {}),
    )


def _match_item(item: dict[str, Any]) -> dict[str, Any]:
    """A match item in the API's shape (its `opaque` members already merged in): string
    conditions normalised, every member and key this reconciler does not know kept."""
    normalised: dict[str, Any] = {}
    for member, body in item.items():
        if member == "path" and isinstance(body, dict) and isinstance(body.get("path"), dict):
            normalised[member] = {**body, "path": _string_match(body["path"])}
        elif member in ("header", "queryParam") and isinstance(body, dict):
            body = dict(body)
            if isinstance(body.get("value"), dict):
                body["value"] = _string_match(body["value"])
            normalised[member] = body
        else:
            normalised[member] = body
    return normalised


def _string_match(condition: dict[str, Any]) -> dict[str, Any]:
    """The API's shape with `ignoreCase` only when true (false is its default); members this
    reconciler does not know (merged from `opaque`) kept after the ones it does."""
    result = {k: condition[k] for k in STRING_MATCH_KINDS if k in condition}
    if condition.get("ignoreCase") is True:
        result["ignoreCase"] = True
    result.update(
        (k, v) for k, v in condition.items() if k not in STRING_MATCH_KINDS and k != "ignoreCase"
    )
    return result


def _policy_test(document: Document, test: dict[str, Any], path: Path) -> PolicyTest:
    request = test["request"]
    logged_by = test.get("loggedBy")
    return PolicyTest(
        name=test["name"],
        method=request["method"],
        path=request["path"],
        client_ip=request["clientIp"],
        expect=test["expect"],
        query=freeze(_values(request.get("query") or {})),
        headers=freeze(_values(request.get("headers") or {})),
        decided_by=test.get("decidedBy"),
        logged_by=None if logged_by is None else tuple(logged_by),
        pos=document.at(path),
    )


def _values(table: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """name -> its values: one value written alone is a list of one."""
    return {name: (v,) if isinstance(v, str) else tuple(v) for name, v in table.items()}
