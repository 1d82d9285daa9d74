"""A quick "valid" from jsonschema-rs, before jsonschema is asked for messages.

jsonschema (schema.py) takes over a second to check a 2,000-app manifest, most of it
walking a valid document; jsonschema-rs gives the same verdict in a few hundredths. It
may only ever say "valid" where schema.py's validator would: anything else (invalid, or a
value it cannot read) sends the document to schema.py, which finds and words the errors.

Where the two libraries differ, the difference is configured away here:

- `pattern` and `multipleOf` are checked by schema.py's own validator, called back from
  jsonschema-rs: schema.py reads patterns with Python's `re` (a final `$` read as ECMA-262
  reads it), whose classes are not those of jsonschema-rs's regex engine (`\\S` matches
  U+001C there, not in Python); and jsonschema asks that a float's quotient be an integer
  (0.3 is not a multiple of 0.1) where jsonschema-rs forgives the rounding.
- `format` is an annotation for schema.py's validator (it has no format checker): the
  patterns beside it decide. jsonschema-rs is told not to assert formats either (its
  `hostname` would refuse the surrounding spaces the schema's pattern forgives).
- Keywords neither library knows (`errorMessage`, `patternErrorMessage`) constrain
  nothing in either.
- jsonschema-rs reads only JSON's types: a `NonDecimalNumber`, `Yaml11Boolean` or
  `FloatAsWritten` (yaml_nodes.py) where it checks a value makes it raise, and the answer
  is "cannot tell".

tests/manifest/test_quick_schema.py checks each of these and the agreement as a whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jsonschema_rs
from jsonschema.protocols import Validator

DELEGATED_PREFIX = "x-checked-by-python-"
"""Delegated keywords are renamed so that jsonschema-rs runs the callback, not its own."""

# Keywords whose value is one subschema, a list of them, or a mapping of names to them:
# everything else in a schema (enum, const, examples, required, ...) is data, where a
# key named like a keyword must not be renamed.
_SUBSCHEMA = (
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("$defs", "dependentSchemas", "patternProperties", "properties")


class QuickCheck:
    """jsonschema-rs over `schema`, with the keywords in `delegated` checked by `python`
    (a jsonschema validator) as it checks them itself."""

    def __init__(self, schema: dict[str, Any], python: Validator, delegated: Iterable[str]) -> None:
        names = self.delegated = frozenset(delegated)
        keywords = {DELEGATED_PREFIX + name: _callback_keyword(python, name) for name in names}
        self._validator = jsonschema_rs.Draft202012Validator(
            renamed_keywords(schema, names),
            validate_formats=False,
            keywords=keywords,
        )

    def accepts(self, data: Any) -> bool:
        """True only when the document is valid; False when it is not or cannot be read."""
        try:
            return self._validator.is_valid(data)
        except ValueError:  # a value of a type other than JSON's (UnicodeEncodeError included)
            return False


def renamed_keywords(schema: Any, names: frozenset[str]) -> Any:
    """`schema` with each keyword in `names` renamed to DELEGATED_PREFIX + keyword."""
    if not isinstance(schema, dict):
        return schema
    renamed: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA:
            value = renamed_keywords(value, names)
        elif key in _SUBSCHEMA_LISTS:
            value = [renamed_keywords(item, names) for item in value]
        elif key in _SUBSCHEMA_MAPS:
            value = {name: renamed_keywords(item, names) for name, item in value.items()}
        renamed[DELEGATED_PREFIX + key if key in names else key] = value
    return renamed


class _Failed(Exception):
    """A delegated keyword found an error (jsonschema-rs only needs to see an exception)."""


def _callback_keyword(python: Validator, name: str) -> type:
    """A jsonschema-rs custom keyword class: `python`'s own check of keyword `name`."""
    errors = python.VALIDATORS[name]

    class Delegated:
        def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: Any) -> None:
            self.schema = parent_schema
            self.value = value

        def validate(self, instance: Any) -> None:
            for _ in errors(python, self.value, instance, self.schema):
                raise _Failed(name)

    Delegated.__name__ = Delegated.__qualname__ = f"Delegated_{name}"
    return Delegated
