"""Environment settings, derived from their one declaration: the dataclass fields of
`Build`, `Runtime`, `Healthcheck`, `Region` and the environment's `regions` (model.py).

From it come the table of `updateSettings` fields (`SETTING_FIELDS`), a model read from the
manifest's or the API's data (`from_data`: the manifest and the API name every setting alike),
an object in the API's and the manifest's shape (`to_data`), and what a diff compares
(`SettingField.comparable`). What the platform sends that the model does not know is not
here: whoever reads a live answer keeps it in the model's `opaque` (plan/kinds/settings.py).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from reconciler.json_types import JsonScalar
from reconciler.manifest.model import (
    DECLARED,
    UNSET,
    Build,
    Declared,
    Environment,
    Healthcheck,
    Runtime,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Section = Literal["build", "runtime"]
SECTIONS: Mapping[Section, type[Build] | type[Runtime]] = {"build": Build, "runtime": Runtime}
"""The environment's blocks whose members are flat fields of `updateSettings`."""

Form = Literal["value", "number", "list", "object", "objects"]
"""How a setting's data is read: as it is, a float, a list (a tuple in the model), a nested
object, a list of nested objects."""

Model = TypeVar("Model", bound="DataclassInstance")
_NOT_FOUND = object()


@dataclass(frozen=True)
class SettingField:
    """One declared setting, with what its dataclass field says of it."""

    attribute: str
    declared: Declared
    form: Form
    clearable: bool
    """`null` clears it (a `Clearable` field); a live empty string is the same as null."""
    default: object
    """The dataclass default: UNSET for a setting the manifest may leave out, the server's
    default for a health check member, `MISSING` for a required member."""
    nested: type[DataclassInstance] | None = None
    """The model class of an object, or of the items of a list of objects."""
    section: Section | None = None

    @property
    def name(self) -> str:
        return self.declared.name

    @property
    def path(self) -> str:
        """The manifest path, also the path of its diff: `runtime.healthcheck`."""
        return f"{self.section}.{self.name}" if self.section else self.name

    @property
    def neutral(self) -> object:
        """The value export leaves out: the one the spec states means nothing set, else the
        server's default."""
        if self.declared.neutral is not UNSET:
            return self.declared.neutral
        return self.default

    def value_in(self, environment: Environment) -> Any:
        """The environment's value of this setting (UNSET when unmanaged)."""
        if self.section is None:
            return getattr(environment, self.attribute)
        block = getattr(environment, self.section)
        return UNSET if block is UNSET else getattr(block, self.attribute)

    def read(self, value: Any) -> Any:
        """The model's value for `value` as the manifest or the API writes it."""
        if value is None:
            return None
        if self.form == "number":
            return float(value)
        if self.form == "object":
            return from_data(self._model, value)
        if self.form == "objects":
            return tuple(from_data(self._model, item) for item in value)
        return tuple(value) if self.form == "list" else value

    def data(self, value: Any) -> Any:
        """The model's `value` as the API (and the manifest) writes it: an object as a mapping
        of its members that are set, a tuple as a list."""
        if value is None:
            return None
        if self.form == "object":
            return to_data(value)
        if self.form == "objects":
            return [to_data(item) for item in value]
        return list(value) if self.form == "list" else value

    def comparable(self, value: Any) -> Any:
        """`value` (the model's) as a diff compares it: unmanaged or null is no list, no object
        and no text; an object is its declared members (what the model keeps beside them, in
        `opaque`, is compared where the manifest writes it); a list of objects with a key is a
        set by it."""
        if self.clearable and (value is UNSET or value is None or value == ""):
            return None
        if self.form in ("list", "objects") and (value is UNSET or value is None):
            return ()
        if self.form == "object" and value is not UNSET:
            return known_members(value)
        if self.form == "objects":
            items = sorted(value, key=self._key) if self.declared.key else value
            return tuple(known_members(item) for item in items)
        return value

    def _key(self, item: object) -> str:
        """The key (`declared.key`) of an item of a list of objects, as text."""
        fields = declared_fields(self._model)
        return str(next(getattr(item, f.attribute) for f in fields if f.name == self.declared.key))

    @property
    def _model(self) -> type[DataclassInstance]:
        assert self.nested is not None, f"{self.path} is not an object"
        return self.nested


def declared_fields(
    model: type[DataclassInstance], section: Section | None = None
) -> tuple[SettingField, ...]:
    """The declared settings of a model class, in its order (read once per class)."""
    found = _DECLARED_FIELDS.get((model, section))
    if found is None:
        hints = typing.get_type_hints(model)
        found = _DECLARED_FIELDS[model, section] = tuple(
            _setting_field(f.name, f.metadata[DECLARED], hints[f.name], f.default, section)
            for f in dataclasses.fields(model)
            if DECLARED in f.metadata
        )
    return found


_DECLARED_FIELDS: dict[
    tuple[type[DataclassInstance], Section | None], tuple[SettingField, ...]
] = {}


def _setting_field(
    attribute: str, declared: Declared, hint: object, default: object, section: Section | None
) -> SettingField:
    """What the field's type says: which form its data has, whether null clears it."""
    members = typing.get_args(hint) if _is_union(hint) else (hint,)
    clearable = type(None) in members
    (kind,) = [m for m in members if m not in (type(None), type(UNSET))]
    origin = typing.get_origin(kind)
    form: Form = "value"
    nested = None
    if origin is tuple:
        item = typing.get_args(kind)[0]
        form = "objects" if dataclasses.is_dataclass(item) else "list"
        nested = item if form == "objects" else None
    elif isinstance(kind, type) and dataclasses.is_dataclass(kind):
        form, nested = "object", kind
    elif kind is float:
        form = "number"
    return SettingField(attribute, declared, form, clearable, default, nested, section)


def _is_union(hint: object) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


SETTING_FIELDS: tuple[SettingField, ...] = (
    *(field for section, model in SECTIONS.items() for field in declared_fields(model, section)),
    *declared_fields(Environment),
)
"""Every manageable setting of an environment, in the spec's order: a field of
`updateSettings` each."""


def from_data(model: type[Model], data: Mapping[str, Any], **more: Any) -> Model:
    """The model of an object as the manifest or the API writes it: a member it leaves out
    keeps its default; `more` gives the members that are not settings (`opaque`, positions).
    A required member missing is a KeyError (the manifest's schema and the platform's shapes
    require them before anything is read)."""
    values: dict[str, Any] = {}
    for field in declared_fields(model):
        found = _member(data, field.name)
        if found is not _NOT_FOUND:
            values[field.attribute] = field.read(found)
        elif field.default is dataclasses.MISSING:
            raise KeyError(field.name)
    make: Callable[..., Model] = model
    return make(**values, **more)


def _member(data: Mapping[str, Any], name: str) -> Any:
    """The member at a dotted `name`, `_NOT_FOUND` when any step is missing."""
    value: Any = data
    for step in name.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return _NOT_FOUND
        value = value[step]
    return value


def to_data(instance: DataclassInstance) -> dict[str, Any]:
    """The declared members of a model object that are set, in the API's (and the manifest's)
    shape: nested objects as mappings, tuples as lists, null where it is cleared."""
    data: dict[str, Any] = {}
    for field in declared_fields(type(instance)):
        value = getattr(instance, field.attribute)
        if value is not UNSET:
            _place(data, field.name, field.data(value))
    return data


def known_members(instance: DataclassInstance) -> tuple[object, ...]:
    """The values of a model object's declared members, as a diff compares them."""
    return tuple(
        field.comparable(getattr(instance, field.attribute))
        for field in declared_fields(type(instance))
    )


def _place(data: dict[str, Any], name: str, value: Any) -> None:
    *outer, last = name.split(".")
    for step in outer:
        data = data.setdefault(step, {})
    data[last] = value


def server_defaults(model: type[DataclassInstance]) -> dict[str, JsonScalar]:
    """The members the server fills in when they are left out, with their values (a health
    check's 10/5/3/0), by API name: JSON values, as a live answer holds them (a default that
    is UNSET or `MISSING` is none)."""
    return {
        field.name: field.default
        for field in declared_fields(model)
        if field.default is None or isinstance(field.default, bool | int | float | str)
    }


HEALTHCHECK_DEFAULTS = server_defaults(Healthcheck)
