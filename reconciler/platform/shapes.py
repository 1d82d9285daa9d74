"""The shapes of the resources the platform returns, checked before anything reads them.

Read from the schemas of the platform API's OpenAPI document (platform/api_document.py), the
first time one is looked into. Every documented field that is present must have its documented
type (members the spec does not list are allowed: a newer platform may add some). A response
that breaks this is an `UnexpectedResponse` naming the operation and the field, instead of a
crash somewhere in the code that reads it. Presence is left to the readers: `required` lists
only members whose absence no reader could survive (`_READERS_NEED`).

These tables are also the one place that says what this reconciler *knows* of a resource:
`unknown_members` and `unknown_part` find what a live answer holds beyond them (a member a
newer platform added), which the plan keeps, reports and never drops without saying so
(docs/guides/manifests.md, "What reconciler does not understand").
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from reconciler.errors import UnexpectedResponse
from reconciler.json_types import JsonObject, JsonValue
from reconciler.platform.api_document import ApiDocumentError, api_document, schema_at


@dataclass(frozen=True)
class Shape:
    """A JSON type: "string", "integer", "number", "boolean", "array" (of `item`), "object"."""

    kind: str
    item: Shape | None = None
    fields: Mapping[str, Shape] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    """For a string: the values the spec documents (a newer platform may answer another:
    never refused, see `unknown_values`)."""


ENVIRONMENT_NAMES = ("production", "preview")
"""The environments an app has: the values the document gives an environment's `kind`."""
VARIABLE_KINDS = ("recoverable", "writeonly")
"""The kinds of variable: the values the document gives a variable's `kind`."""

FINAL_DEPLOYMENT_STATUSES = frozenset(
    {"ready", "failed", "cancelled", "superseded", "skipped", "stopped"}
)
"""A deployment in one of these statuses changes no more (apply stops waiting, status says so)."""

# Which members a reader cannot do without, by where they are in the document (a schema's name,
# `.member`, `[]` for a list's items; an operation's name for the `data` of its answer). The
# document's `required` promises more (every member the platform always sends), but an answer
# without one of those is still read: only the absence of these leaves a reader nothing to go on.
_READERS_NEED: Mapping[str, tuple[str, ...]] = {
    "Domain": ("id", "domain"),  # what every reader keys on
    "Environment.regions[]": ("name", "replicas"),
    "Environment.regions[].replicas": ("min", "max"),
    # what a create made: apply records it
    "projects.createProject": ("id",),
    "apps.createApp": ("appId",),
    "domains.createDomain": ("domainId", "dnsRecords"),
    "deployments.createDeployment": ("deploymentId",),
}
_COMPONENT = "#/components/schemas/"
_PLAIN_KINDS = frozenset({"string", "integer", "number", "boolean"})


def shape_of(schema: Mapping[str, Any], where: str) -> Shape:
    """The shape of a schema of the document found at `where` (see `_READERS_NEED`)."""
    if "$ref" in schema:
        return _component(schema["$ref"].removeprefix(_COMPONENT))
    if "const" in schema:  # a one-valued member (a policy's `firewall.action`)
        value = schema["const"]
        return Shape("string", values=(value,)) if isinstance(value, str) else _plain(value)
    kind = schema.get("type")
    if kind == "object":
        fields = {
            name: shape_of(member, f"{where}.{name}")
            for name, member in schema.get("properties", {}).items()
        }
        return Shape("object", fields=fields, required=_READERS_NEED.get(where, ()))
    if kind == "array":
        return Shape("array", item=shape_of(schema["items"], f"{where}[]"))
    values = tuple(schema.get("enum", ()))
    if kind in _PLAIN_KINDS and (kind == "string" or not values):
        return Shape(kind, values=values)
    raise ApiDocumentError(f"{where}: a schema of no type reconciler reads ({kind!r})")


def _plain(value: Any) -> Shape:
    kind = {bool: "boolean", int: "integer", float: "number"}.get(type(value))
    if kind is None:
        raise ApiDocumentError(f"a constant of no type reconciler reads ({value!r})")
    return Shape(kind)


@functools.cache
def _component(name: str) -> Shape:
    return shape_of(schema_at(api_document(), f"{_COMPONENT}{name}"), name)


class _Fields(Mapping[str, Shape]):
    """The members of an object schema of the document, read when first looked into: the
    resources below are named where reconciler is imported, the document read only when one
    of them is used."""

    def __init__(self, component: str, *path: str) -> None:
        self._component = component
        self._path = path
        self._read: Mapping[str, Shape] | None = None

    def _members(self) -> Mapping[str, Shape]:
        if self._read is None:
            shape = _component(self._component)
            for step in self._path:
                shape = shape.fields[step] if step != "[]" else cast(Shape, shape.item)
            self._read = shape.fields
        return self._read

    def __getitem__(self, name: str) -> Shape:
        return self._members()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members())

    def __len__(self) -> int:
        return len(self._members())

    def __contains__(self, name: object) -> bool:
        return name in self._members()


def _resource(component: str, *path: str) -> Shape:
    """The object schema `component` of the document (or the object at `path` inside it)."""
    where = component + "".join(step if step == "[]" else f".{step}" for step in path)
    return Shape("object", fields=_Fields(component, *path), required=_READERS_NEED.get(where, ()))


PROJECT = _resource("Project")
APP = _resource("App")
ENVIRONMENT = _resource("Environment")
HEALTHCHECK = _resource("Healthcheck")
REGION = _resource("Environment", "regions", "[]")
VARIABLE = _resource("Variable")
MATCH_ITEM = _resource("MatchCondition")
POLICY = _resource("Policy")


SERVER_MEMBERS = frozenset({"id", "createdAt", "updatedAt"})
"""Members the platform sets itself on every resource it stores (an ID; the timestamps of the
spec's conventions): known at the top of any resource, even one whose table does not list
them (a policy's `createdAt`, should the platform add it, is not a member it could take)."""


def unknown_members(
    value: Any, shape: Shape, where: str = "", *, indexes: bool = True
) -> list[str]:
    """The paths of the members of `value` that `shape` does not document (`runtime.gpu`,
    `match[0].country`), in the order they appear; below an unknown member nothing more is
    listed. `indexes=False` writes every item of a list as `[]` (`match[].country`). The top
    level of a resource also knows `SERVER_MEMBERS`."""
    found = _unknown(value, shape, where, indexes)
    if not where and isinstance(value, Mapping):
        found = [path for path in found if path not in SERVER_MEMBERS]
    return found


def _unknown(value: Any, shape: Shape, where: str, indexes: bool) -> list[str]:
    if shape.kind == "object" and isinstance(value, Mapping):
        found: list[str] = []
        for name, member in value.items():
            path = f"{where}.{name}" if where else str(name)
            if name in shape.fields:
                found += _unknown(member, shape.fields[name], path, indexes)
            else:
                found.append(path)
        return found
    if shape.kind == "array" and shape.item is not None and isinstance(value, list):
        return [
            path
            for index, item in enumerate(value)
            for path in _unknown(item, shape.item, f"{where}[{index if indexes else ''}]", indexes)
        ]
    return []


def unknown_part(value: Any, shape: Shape) -> dict[str, Any]:
    """What `value` (an object) holds that `shape` does not document, as a mapping of the same
    form: unknown members whole, and a documented object member that holds unknown members as
    a mapping of those (`{"gpu": {...}, "healthcheck": {"grpcService": "x"}}`). Lists are not
    gone into: an item's unknown members are its own (see `unknown_members`). Empty when
    `value` holds nothing unknown, or is not an object."""
    if shape.kind != "object" or not isinstance(value, Mapping):
        return {}
    part: dict[str, Any] = {}
    for name, member in value.items():
        if name not in shape.fields:
            part[name] = member
        elif shape.fields[name].kind == "object":
            inner = unknown_part(member, shape.fields[name])
            if inner:
                part[name] = inner
    return part


def unknown_values(value: Any, shape: Shape, where: str = "") -> list[str]:
    """The paths of the documented string members of `value` (an object, items of lists
    included) whose value is not one the spec documents (`runtime.shutdownSignal`)."""
    if shape.values:
        return [where] if isinstance(value, str) and value not in shape.values else []
    if shape.kind == "object" and isinstance(value, Mapping):
        return [
            path
            for name, member in value.items()
            if name in shape.fields
            for path in unknown_values(
                member, shape.fields[name], f"{where}.{name}" if where else name
            )
        ]
    if shape.kind == "array" and shape.item is not None and isinstance(value, list):
        return [
            path
            for index, item in enumerate(value)
            for path in unknown_values(item, shape.item, f"{where}[{index}]")
        ]
    return []


def known_part(value: Any, shape: Shape) -> Any:
    """`value` without the members `shape` does not document (in objects at any depth, items
    of lists included); anything but an object or a list is returned as it is."""
    if shape.kind == "object" and isinstance(value, Mapping):
        return {
            name: known_part(member, shape.fields[name])
            for name, member in value.items()
            if name in shape.fields
        }
    if shape.kind == "array" and shape.item is not None and isinstance(value, list):
        return [known_part(item, shape.item) for item in value]
    return value


def object_member(value: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The member `name` of `value` when it is an object, else an empty one: for the nested
    objects a resource may leave out (a deployment's `git`, `docker`, `error`)."""
    member = value.get(name)
    return member if isinstance(member, Mapping) else {}


def object_answer(operation: str, found: JsonValue) -> JsonObject:
    """The `data` of an operation that answers one object, as an object: the client refuses
    any other answer already (`data` that is not an object); a platform of another make (a
    test's fake) gets the same refusal here instead of a traceback later."""
    if not isinstance(found, Mapping):
        raise UnexpectedResponse(
            f"{operation}: the platform returned `data` that is not an object",
            operation=operation,
        )
    return found


def shape_problem(value: Any, shape: Shape, where: str) -> str | None:
    """The first way `value` breaks `shape` ("data[3].regions is not an array"), or None."""
    if not _is(value, shape.kind):
        return f"{where} is not {_ARTICLE[shape.kind]}"
    if shape.kind == "array" and shape.item is not None:
        for index, item in enumerate(value):
            problem = shape_problem(item, shape.item, f"{where}[{index}]")
            if problem:
                return problem
    elif shape.kind == "object":
        for name in shape.required:
            if name not in value:
                return f"{where}.{name} is missing"
        for name, member in shape.fields.items():
            if name in value:
                problem = shape_problem(value[name], member, f"{where}.{name}")
                if problem:
                    return problem
    return None


_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
}


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":  # 3.0 is tolerated: JSON does not tell 3 from 3.0 apart
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)
