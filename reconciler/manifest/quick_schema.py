"""A quick "valid" from jsonschema-rs, before jsonschema is asked for messages.

jsonschema (schema.py) takes over a second to check a 2,000-app manifest, most of it
walking a valid document; jsonschema-rs gives the same verdict in a few hundredths. It
may only ever say "valid" where schema.py's validator would: anything else (invalid, or a
value it cannot read) sends the document to schema.py, which finds and words the errors.

Where the two libraries differ, the difference is configured away here:

- `pattern` and `multipleOf` are checked by schema.py's own predicates, called back from
  jsonschema-rs: schema.py reads patterns with Python's `re` (a final `$` read as ECMA-262
  reads it), whose classes are not those of jsonschema-rs's regex engine (`\\S` matches
  U+001C there, not in Python); and jsonschema asks that a float's quotient be an integer
  (0.3 is not a multiple of 0.1) where jsonschema-rs forgives the rounding. The predicates
  are plain functions, not jsonschema's keywords: a valid document is checked without
  importing jsonschema at all.
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

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema_rs

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


Fails = Callable[[Any, Any], bool]
"""(the keyword's value, an instance) -> whether the instance breaks the rule."""


class QuickCheck:
    """jsonschema-rs over `schema`, with each keyword in `delegated` checked by its predicate
    instead of jsonschema-rs's reading of it."""

    def __init__(self, schema: dict[str, Any], delegated: Mapping[str, Fails]) -> None:
        names = self.delegated = frozenset(delegated)
        keywords = {
            DELEGATED_PREFIX + name: _callback_keyword(name, fails)
            for name, fails in delegated.items()
        }
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


def _callback_keyword(name: str, fails: Fails) -> type:
    """A jsonschema-rs custom keyword class raising when `fails` says the instance breaks it."""

    class Delegated:
        def __init__(self, parent_schema: dict[str, Any], value: Any, schema_path: Any) -> None:
            self.value = value

        def validate(self, instance: Any) -> None:
            if fails(self.value, instance):
                raise _Failed(name)

    Delegated.__name__ = Delegated.__qualname__ = f"Delegated_{name}"
    return Delegated
