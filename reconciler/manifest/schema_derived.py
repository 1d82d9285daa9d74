"""The manifest schema's derived definitions: `appDefaults` and templates, made from `settings`.

Shared blocks hold the settings of an environment, with two differences that a schema must
say and editors must see: their lists may be `{prepend: [...], append: [...]}` (combined with
the list of the blocks above them instead of replaced), and a template's values may be text
holding `${param}` where the field takes another type or a pattern (`port: ${port}`,
`domains: ["${app}.example.com"]`). Writing those definitions by hand would copy every field
of `settings` and every definition below it, so they are made from them here:

    .venv/bin/python -m tests.manifest.regenerate_schema    # rewrite them in the schema file

tests/manifest/test_schema.py checks that schemas/manifest.schema.json holds what this makes,
so a field added to `settings` reaches templates with the same rules.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

from reconciler.manifest.layers import COMBINED_LISTS
from reconciler.manifest.schema_settings import with_settings

PLACEHOLDER = {"$ref": "#/$defs/parameterText"}
META = ("title", "description", "examples")
NOT_SUBSTITUTED = ("extends", "checks")
"""Template names and parameters, and waivers (each a reason written for one object), are
never parameters."""
NOT_COPIED = ("extends", "templateName", "parameterText", "waivers", "waiver", "opaque")
GENERATED = (
    "Generated from #/$defs/settings by reconciler/manifest/schema_derived.py: edit `settings` (or "
    "that module) and run `python -m tests.manifest.regenerate_schema`."
)


def derived_definitions(schema: dict[str, Any]) -> dict[str, Any]:
    """Every derived definition by name, in the order they are written."""
    defs = schema["$defs"]
    settings = defs["settings"]
    copies = list(_reachable(defs, "settings"))
    out: dict[str, Any] = {
        "sharedSettings": _shared_settings(settings),
        "appDefaults": _app_level(
            "sharedSettings",
            settings,
            title="App defaults",
            description="Settings under the apps of a scope (the workspace or a project): its "
            "own settings go to both environments of each app, `environments` to each one. Its "
            "lists may be `{prepend: [...], append: [...]}`.",
            example={"environments": {"production": {"runtime": {"vCpus": 1}}}},
        ),
    }
    for name in copies:
        out[_copy_name(name)] = _tolerant(defs[name], copies)
    out["templateSettings"] = _template_settings(settings, copies)
    template = _app_level(
        "templateSettings",
        settings,
        title="Template",
        description="A named block of settings (`templates.<name>`), reused with `extends` "
        "from any file: its own settings go to both environments (or to the one block that "
        "extends it), `environments` to each environment of an app that extends it.",
        example={"runtime": {"port": "${port}"}, "params": {"port": {"type": "integer"}}},
    )
    properties = template["properties"]
    properties["params"] = {
        "title": "Template parameters",
        "type": "object",
        "description": "The parameters every use gives (`params:` beside the template's name "
        "in `extends`), by name.",
        "examples": [{"host": {"type": "string"}, "replicas": {"type": "integer", "default": 2}}],
        "propertyNames": copy.deepcopy(
            defs["extends"]["items"]["anyOf"][1]["properties"]["params"]["propertyNames"]
        ),
        "additionalProperties": {"$ref": "#/$defs/parameterDeclaration"},
    }
    properties["description"] = {
        "title": "Template description",
        "type": "string",
        "maxLength": 1000,
        "description": "What the template is for (for people; reconciler ignores it).",
        "examples": ["Node.js services: port 3000 and the health check at /healthz"],
    }
    out["template"] = template
    for node in out.values():
        node["$comment"] = GENERATED
    return out


def _shared_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with lists that may be combined: every field refers to its own."""
    properties = {}
    for key, sub in settings["properties"].items():
        ref = f"#/$defs/settings/properties/{key}"
        if key in COMBINED_LISTS:
            properties[key] = {**_meta(sub), "anyOf": [{"$ref": ref}, _combination(ref, sub)]}
        else:
            properties[key] = {**_meta(sub), "$ref": ref}
    return {
        **_outline(settings),
        "title": "Shared settings",
        "description": "Environment settings in `appDefaults`: lists may be "
        "`{prepend: [...], append: [...]}` to be combined with the list of the blocks above "
        "instead of replaced.",
        "properties": properties,
    }


def _template_settings(settings: dict[str, Any], copies: list[str]) -> dict[str, Any]:
    """`settings` in a template: `${param}` text anywhere, lists that may be combined."""
    properties = {}
    for key, sub in settings["properties"].items():
        if key in NOT_SUBSTITUTED:
            properties[key] = {**_meta(sub), "$ref": f"#/$defs/settings/properties/{key}"}
        elif key in COMBINED_LISTS:
            own = f"#/$defs/templateSettings/properties/{key}/anyOf/0"
            listed = _tolerant(_without_meta(sub), copies)
            properties[key] = {**_meta(sub), "anyOf": [listed, PLACEHOLDER, _combination(own, sub)]}
        else:
            properties[key] = _wrapped(sub, copies)
    return {
        **_outline(settings),
        "title": "Template settings",
        "description": "Environment settings in a template: any value may be text holding "
        "`${param}`, and lists may be `{prepend: [...], append: [...]}`.",
        "properties": properties,
    }


def _combination(ref: str, plain: dict[str, Any]) -> dict[str, Any]:
    """`{prepend: [...], append: [...]}`, each a list as `ref` describes."""
    return {
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {
            where: {
                "title": f"{plain['title']} {where}ed",
                "description": f"{text} the list of the blocks above this one.",
                "examples": plain["examples"],
                "$ref": ref,
            }
            for where, text in (("prepend", "Put before"), ("append", "Put after"))
        },
    }


def _app_level(
    ref: str, settings: dict[str, Any], *, title: str, description: str, example: Any
) -> dict[str, Any]:
    """A block with the settings of definition `ref` and per-environment blocks of them."""
    properties = {
        key: {**_meta(sub), "$ref": f"#/$defs/{ref}/properties/{key}"}
        for key, sub in settings["properties"].items()
    }
    properties["environments"] = {
        "title": f"{title}: per environment",
        "type": "object",
        "description": "Settings for one environment only; above the block's own settings.",
        "examples": [{"production": {"runtime": {"vCpus": 1}}}],
        "additionalProperties": False,
        "properties": {
            name: {
                "title": f"{title}: {name}",
                "$ref": f"#/$defs/{ref}",
                "description": f"Settings for {name} only.",
                "examples": [{"runtime": {"vCpus": 1}}],
            }
            for name in ("production", "preview")
        },
    }
    return {
        **_outline(settings),
        "title": title,
        "description": description,
        "examples": [example],
        "properties": properties,
    }


def _outline(node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in ("properties", *META)}


def _meta(node: dict[str, Any]) -> dict[str, Any]:
    return {k: node[k] for k in META if k in node}


def _reachable(defs: dict[str, Any], start: str) -> Iterator[str]:
    """The definitions `start` refers to, directly or not, in the file's order."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        for ref in _refs(defs[pending.pop()]):
            if ref not in seen and ref not in NOT_COPIED:
                seen.add(ref)
                pending.append(ref)
    yield from (name for name in defs if name in seen)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"].removeprefix("#/$defs/").split("/")[0]
        for key, value in node.items():
            if key not in ("examples", "enum", "const"):
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _copy_name(name: str) -> str:
    return "template" + name[0].upper() + name[1:]


def _tolerant(node: Any, copies: list[str]) -> Any:
    """`node` with `${param}` text accepted wherever a value could not be such text."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {
                name: sub if name in NOT_SUBSTITUTED else _wrapped(sub, copies)
                for name, sub in value.items()
            }
        elif key == "items" or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = _wrapped(value, copies)
        elif key in ("anyOf", "oneOf"):
            out[key] = [_tolerant(b, copies) if _describes_a_value(b) else b for b in value]
        elif key == "$ref":
            name = value.removeprefix("#/$defs/")
            out[key] = f"#/$defs/{_copy_name(name)}" if name in copies else value
        else:
            out[key] = value
    return out


def _wrapped(node: dict[str, Any], copies: list[str]) -> dict[str, Any]:
    inner = _tolerant(node, copies)
    if not _refuses_placeholders(node):
        return dict(inner)
    return {**_meta(node), "anyOf": [_without_meta(inner), PLACEHOLDER]}


def _refuses_placeholders(node: dict[str, Any]) -> bool:
    """Whether text such as `${host}` fails the node where a parameter could stand: a value
    of another type, a pattern or a set (a parameter never stands for a mapping, so objects
    keep their own errors where they are)."""
    if "$ref" in node:
        return False  # the definitions settings refer to are objects
    if "anyOf" in node and "type" not in node:
        return not any(
            _describes_a_value(b) and not _refuses_placeholders(b) for b in node["anyOf"]
        )
    types = node.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "object" in types:
        return False
    if "string" not in types:
        return True
    return any(key in node for key in ("pattern", "enum", "const", "format"))


def _describes_a_value(node: Any) -> bool:
    """An anyOf branch that is a schema of its own (not a rule such as `{required: [...]}`)."""
    return isinstance(node, dict) and ("type" in node or "$ref" in node or "anyOf" in node)


def _without_meta(node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in META}


def with_derived(schema: dict[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with its derived parts made again: the settings' members from their
    declaration and the platform's `spec` (schema_settings.py), then the definitions made
    from `settings`."""
    result = copy.deepcopy(schema)
    with_settings(result, spec)
    defs = {k: v for k, v in result["$defs"].items() if v.get("$comment") != GENERATED}
    defs.update(derived_definitions(result))
    result["$defs"] = defs
    return result


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
