"""The manifest schema's environment settings, made from their one declaration.

Each member of `build`, `runtime` (with its `healthcheck`), a region and `regions` is a
dataclass field of model.py (settings.py reads them): its name is the declared API name, its
JSON type comes from the field's annotation (`Clearable` adds `null`, a tuple is an array, a
dataclass an object), its bounds and enumerations from the platform's own field of
`environments.updateSettings` in the vendored OpenAPI document, and its title, text and examples
from the declaration's `Doc`. Written into the schema files by

    .venv/bin/python -m tests.manifest.regenerate_schema

and held equal to them by tests/manifest/test_schema.py, so that adding a setting is adding its
dataclass field (and the platform's spec naming it). What the schema's blocks say of
themselves (`build`'s title, its `opaque` member) stays written in the schema file.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from reconciler.manifest.model import UNSET, Doc, Environment, Region
from reconciler.manifest.settings import SECTIONS, SettingField, declared_fields

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

UPDATE_SETTINGS = "/v1/environments.updateSettings"
"""The operation whose request body names every setting (its fields are flat: `port`, `regions`)."""

BOUNDS = ("enum", "minLength", "maxLength", "minimum", "maximum", "multipleOf", "minItems")
BOUNDS_AROUND_ITEMS = ("maxItems", "pattern")
"""What the spec says of a value that the manifest's schema checks the same way (with
`BOUNDS_AROUND_ITEMS`, which the schema file writes around `items`)."""

ORDER = (*BOUNDS, "maxItems", "items", "pattern", "patternErrorMessage")
"""The order of a member's keys between its type and its text (the schema file's)."""

NOT_CHECKED: Mapping[str, tuple[str, ...]] = {"build.watchPaths[]": ("maxLength",)}
"""Bounds of the spec the manifest's schema has never checked (a watch path's 1024 characters):
kept out so that the schema accepts what it accepted before it was generated."""

JSON_TYPES: Mapping[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}

SETTINGS_DEF = "settings"
OBJECT_DEFS: Mapping[type[Any], str] = {Region: "region"}
"""The schema's definitions of the objects of a list of objects (`regions` items)."""


class DeclarationError(Exception):
    """The declarations and the platform's spec disagree, or a setting lacks what the schema
    needs (a `Doc`): a mistake in the source, found when the schema is made."""


def update_settings_fields(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields of `environments.updateSettings`'s request body, by name."""
    body = spec["paths"][UPDATE_SETTINGS]["post"]["requestBody"]["content"]["application/json"]
    fields: Mapping[str, Any] = body["schema"]["properties"]
    return fields


def with_settings(schema: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Write the declared settings' members into `schema` (in place): each block keeps its own
    title and text and the members nobody declares (`opaque`), in its order.

    An object in a list (a region) is written whole, so it requires what the spec requires; a
    single object (`healthcheck`) is merged across blocks (`appDefaults`, templates) and its
    required members are checked once merged (manifest/semantic.py), not here."""
    fields = update_settings_fields(spec)
    defs = schema["$defs"]
    blocks = defs[SETTINGS_DEF]["properties"]
    for section, model in SECTIONS.items():
        _replace(blocks[section], _members(model, fields, section))
    _replace(defs[SETTINGS_DEF], _members(Environment, fields, ""))
    for model, name in OBJECT_DEFS.items():
        spec_items = fields[_list_of(model)]["items"]
        members = _members(model, spec_items["properties"], f"{_list_of(model)}[]")
        _replace(defs[name], members)
        defs[name]["required"] = [m for m in spec_items.get("required", ()) if m in members]


def _list_of(model: type[Any]) -> str:
    (found,) = [f.name for f in declared_fields(Environment) if f.nested is model]
    return found


def _replace(node: dict[str, Any], members: dict[str, Any]) -> None:
    """`node`'s properties with `members`, in their declared order, where the first declared
    one stood (else before `opaque`, else at the end); the undeclared ones keep their places."""
    old = node["properties"]
    others = [name for name in old if name not in members]
    first = next((i for i, name in enumerate(old) if name in members), None)
    if first is None:
        at = others.index("opaque") if "opaque" in others else len(others)
    else:
        at = sum(1 for name in list(old)[:first] if name not in members)
    order = [*others[:at], *members, *others[at:]]
    node["properties"] = {name: members[name] if name in members else old[name] for name in order}


def _members(model: type[DataclassInstance], spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The schema's members for the declared fields of `model`; a dotted name (`replicas.min`)
    is a member of an object named by its first step."""
    hints = typing.get_type_hints(model)
    out: dict[str, Any] = {}
    for field in declared_fields(model):
        path = f"{where}.{field.name}" if where else field.name
        outer, _, inner = field.name.rpartition(".")
        if not outer:
            out[field.name] = _member(
                field, hints[field.attribute], _spec(spec, path, field.name), path
            )
            continue
        if outer not in out:
            within = field.declared.within
            if within is None:
                raise DeclarationError(f"{path}: the first member of `{outer}` gives `within`")
            out[outer] = {
                "title": within.title,
                "type": "object",
                "description": within.description,
                "examples": list(within.examples),
                "additionalProperties": False,
                "properties": {},
            }
        group = out[outer]
        member_spec = _spec(spec, path, field.name)
        group["properties"][inner] = _member(field, hints[field.attribute], member_spec, path)
        required = _spec(spec, path, outer).get("required", ())
        group["required"] = [m for m in required if m in group["properties"]]
    return out


def _spec(spec: Mapping[str, Any], path: str, name: str) -> Mapping[str, Any]:
    """The platform's schema of a member at a dotted `name`."""
    found: Mapping[str, Any] = {"properties": spec}
    for step in name.split("."):
        member = found.get("properties", {}).get(step)
        if not isinstance(member, Mapping):
            raise DeclarationError(f"{path}: updateSettings has no field `{name}`")
        found = member
    return found


def _member(
    field: SettingField, hint: object, spec: Mapping[str, Any], path: str
) -> dict[str, Any]:
    value = _unwrapped(hint)
    return _node(value, field.declared.doc, field.declared.item, field.clearable, spec, path)


def _node(
    hint: object,
    doc: Doc | None,
    item: Doc | None,
    nullable: bool,
    spec: Mapping[str, Any],
    path: str,
) -> dict[str, Any]:
    """The schema of a value of type `hint`, bounded as `spec` says, documented by `doc`."""
    if doc is None:
        raise DeclarationError(f"{path}: a list's items need `item=Doc(...)`")
    kind = _json_type(hint, path)
    declared_type = [kind, "null"] if nullable else kind
    spec_type = spec.get("type")
    if spec_type is not None and spec_type not in (kind, [kind, "null"], [kind]):
        raise DeclarationError(f"{path}: declared {kind}, the platform's spec says {spec_type}")
    node: dict[str, Any] = {"title": doc.title, "type": declared_type}
    if kind == "object":
        assert isinstance(hint, type)
        node |= {"description": doc.description, "examples": list(doc.examples)}
        node["additionalProperties"] = False
        node["properties"] = _members(hint, spec.get("properties", {}), path)
        return node
    skipped = NOT_CHECKED.get(path, ())
    keys: dict[str, Any] = {
        k: spec[k] for k in (*BOUNDS, *BOUNDS_AROUND_ITEMS) if k in spec and k not in skipped
    }
    args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal and keys.get("enum") != list(args):
        raise DeclarationError(
            f"{path}: declared {list(args)}, the spec's enum is {keys.get('enum')}"
        )
    if kind == "array":
        (element, _) = args
        if isinstance(element, type) and dataclasses.is_dataclass(element):
            keys["items"] = {"$ref": f"#/$defs/{OBJECT_DEFS[element]}"}
        else:
            keys["items"] = _node(element, item, None, False, spec.get("items", {}), f"{path}[]")
    if doc.pattern_message is not None:
        keys["patternErrorMessage"] = doc.pattern_message
    node |= {k: keys[k] for k in ORDER if k in keys}
    node |= {"description": doc.description, "examples": list(doc.examples)}
    return node


def _unwrapped(hint: object) -> object:
    """The type of a field without UNSET and None."""
    if typing.get_origin(hint) not in (typing.Union, types.UnionType):
        return hint
    (kind,) = [m for m in typing.get_args(hint) if m not in (type(None), type(UNSET))]
    return kind


def _json_type(hint: object, path: str) -> str:
    origin = typing.get_origin(hint)
    if origin is tuple:
        return "array"
    if origin is Literal:
        return _json_type(type(typing.get_args(hint)[0]), path)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return "object"
    if isinstance(hint, type) and hint in JSON_TYPES:
        return JSON_TYPES[hint]
    raise DeclarationError(f"{path}: no JSON type for {hint!r}")
