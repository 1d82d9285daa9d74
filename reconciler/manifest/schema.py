"""The manifest JSON Schema and the translation of its errors into `Problem`s.

The schema (schemas/manifest.schema.json, shipped inside the package as
reconciler/schemas) is what editors use; here it checks structure, types and
simple bounds. jsonschema's own messages are written for schema authors, so
each error is rephrased for someone editing YAML: misspelt keys get a "did
you mean", YAML booleans and decimals where text is expected get "quote it", and
numbers YAML 1.1 reads from non-decimal text (`0644`, `0x1F`, `1:30`) say what YAML made
of them and how to write what was meant.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from importlib import resources
from typing import TYPE_CHECKING, Any

from reconciler.manifest.formats import EXPLAINED_FORMATS
from reconciler.manifest.model import Position
from reconciler.manifest.problems import Path, Problem
from reconciler.manifest.quick_schema import QuickCheck
from reconciler.manifest.yaml_nodes import NonDecimalNumber, RefusedNumber, Yaml11Boolean

if TYPE_CHECKING:
    # Imported where the full validator is built: a document the quick check accepts is
    # checked without jsonschema (with attrs, referencing and its specifications, a sixth
    # of what `reconciler plan` imports).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

SCHEMA_RESOURCE = ("schemas", "manifest.schema.json")

Locate = Callable[[Path, bool], Position]
"""(path, of_key) -> where it was written; `of_key` asks for the key rather than the value."""

# Names people bring from elsewhere that spelling similarity cannot find (`repo` is too short
# for difflib, `http2` is closer to 'http1' than to 'h2c'). A suggestion is made only when
# its target is allowed where the word was written: `environment` means variables inside
# an environment's settings (docker compose's word for them), and is left to difflib
# ('environments') at the app level.
_KNOWN_ALIASES = {
    "branch": "defaultBranch",
    "repo": "repository",
    "env": "variables",
    "environment": "variables",
    "http2": "h2c",
    "http/2": "h2c",
    "h2": "h2c",
    "http/1.1": "http1",
    "http1.1": "http1",
    "deny": "ACTION_DENY",
    "block": "ACTION_DENY",
    "secret": "writeonly",
}
_ALIAS_NOTES = {"h2c": "HTTP/2 over plain TCP, without TLS"}
_QUOTED_INTEGER = re.compile(r"\s*-?(?:[1-9][0-9]*|0)\s*")
_QUOTED_DECIMAL = re.compile(r"\s*-?[0-9]+\.[0-9]+\s*")
_MEMBER_HINT = {
    "match": "a match item needs at least one member: path, method, header, queryParam or remoteIp",
}


def schema_text() -> str:
    """The schema as shipped with the package (what `reconciler schema` prints)."""
    return resources.files("reconciler").joinpath(*SCHEMA_RESOURCE).read_text(encoding="utf-8")


@functools.cache
def manifest_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text())
    return schema


_FINAL_DOLLAR = re.compile(r"(?<!\\)\$$")


@functools.cache
def _ecma_regex(pattern: str) -> re.Pattern[str]:
    """A schema pattern as editors (ECMA-262) read it: a final `$` is the end of the text,
    where Python's `$` would also match before a final newline."""
    return re.compile(_FINAL_DOLLAR.sub(r"\\Z", pattern))


def pattern_fails(pattern: str, instance: Any) -> bool:
    """Whether `instance` breaks a schema `pattern` (anything but a string is `type`'s)."""
    return isinstance(instance, str) and not _ecma_regex(pattern).search(instance)


def multiple_of_fails(step: Any, instance: Any) -> bool:
    """Whether a number is not a multiple of `step`, by exact arithmetic.

    Never kinder than jsonschema's check (a float quotient that must be an integer): when
    instance / step is exactly an integer, the rounded float quotient is that integer too (an
    integer instance a float cannot hold exactly is left to jsonschema).
    Where it is not exactly one, this says so even if rounding would make it one; the
    document then goes to jsonschema, whose verdict stands (the schema's steps, 0.25, 256
    and 512, divide exactly, and there the two agree)."""
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False  # not a number: `type` decides
    try:
        if isinstance(step, float) and isinstance(instance, int) and float(instance) != instance:
            return True  # jsonschema divides the rounded float: its verdict, not exact arithmetic's
        return Fraction(instance) % Fraction(step) != 0
    except (ValueError, OverflowError):  # not finite, or beyond any float: jsonschema decides
        return True


def _pattern(
    validator: Draft202012Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if pattern_fails(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator(definition: str | None = None) -> Draft202012Validator:
    """The validator of the whole manifest, or of one of its definitions (`$defs`)."""
    from jsonschema import Draft202012Validator, validators

    manifest_validator = validators.extend(  # type: ignore[no-untyped-call]  # unannotated in types-jsonschema
        Draft202012Validator, {"pattern": _pattern}
    )
    # Built once, with the (non-recursive) $refs inlined: resolving a $ref on every app
    # and environment was a sixth of the time of validating a large workspace.
    root = manifest_schema()
    node = root if definition is None else root["$defs"][definition]
    validator: Draft202012Validator = manifest_validator(_inline_refs(node, root))
    return validator


def _inline_refs(node: Any, root: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline_refs(item, root) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = _pointed_at(root, node["$ref"])
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline_refs(merged, root)
    return {
        key: value if key in ("examples", "enum", "const") else _inline_refs(value, root)
        for key, value in node.items()
        if key != "$defs"
    }


def _pointed_at(root: dict[str, Any], ref: str) -> Any:
    """The node a local `$ref` (`#/$defs/settings/properties/domains`) points at."""
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


# Of several errors about one value, the one reported: the lowest rank. A wrong type or
# a value outside a fixed set makes every other rule's complaint a side effect (`1.5` in
# memoryMib is "not an integer", not also "too small" and "not a multiple of 256"), and
# the bounds of a number say more than its step (100 MiB: "the minimum is 256").
_VALUE_ERROR_RANK = {
    "type": 0,
    "const": 1,
    "enum": 1,
    "pattern": 2,
    "minimum": 3,
    "maximum": 3,
    "exclusiveMinimum": 3,
    "exclusiveMaximum": 3,
    "minLength": 3,
    "maxLength": 3,
    "minItems": 3,
    "maxItems": 3,
    "multipleOf": 4,
}


def schema_problems(data: Any, locate: Locate) -> list[Problem]:
    """What the schema finds wrong with `data`, placed by `locate`: none when jsonschema-rs
    says the document is valid, else jsonschema's errors, reworded (full_schema_problems)."""
    if _quick_check().accepts(data):
        return []
    return full_schema_problems(data, locate)


@functools.cache
def _quick_check(definition: str | None = None) -> QuickCheck:
    """jsonschema-rs, with the keywords it reads differently checked as schema.py reads them
    (over the whole manifest, or one of its definitions)."""
    root = manifest_schema()
    schema = root if definition is None else {**root["$defs"][definition], "$defs": root["$defs"]}
    return QuickCheck(schema, {"pattern": pattern_fails, "multipleOf": multiple_of_fails})


def full_schema_problems(data: Any, locate: Locate) -> list[Problem]:
    """Every schema error of `data`, as jsonschema finds them, in words for YAML authors."""
    return [
        Problem.at(locate(path, of_key), path, message)
        for path, of_key, message in schema_errors(data)
    ]


SchemaError = tuple[Path, bool, str]
"""(path, of the key rather than the value, message)."""


def schema_errors(data: Any, definition: str | None = None) -> list[SchemaError]:
    """Every schema error of `data` (a manifest, or what one of the schema's `$defs`
    describes), as jsonschema finds them, in words for YAML authors; none without asking
    jsonschema when jsonschema-rs finds it valid."""
    if _quick_check(definition).accepts(data):
        return []
    validator = _validator(definition)
    schema = validator.schema
    assert isinstance(schema, dict)  # the manifest's schema and its definitions are objects
    found: list[SchemaError] = []
    for error in _most_precise(validator.iter_errors(data)):
        found.extend(_translate(error, data, schema))
    return found


def _ruled_out_keys(
    error: ValidationError, data: Any, schema: dict[str, Any]
) -> Iterator[SchemaError]:
    """Keys a `false` property schema rules out (`dependentSchemas`: `firewall` rules out
    `logging`), with the message the ruling schema declares.

    jsonschema reports such an error at the object, its paths stopping at `properties` (the
    key is not in them), so the keys are found in the object: every one the schema rules out."""
    schema_path = list(error.absolute_schema_path)
    cut = len(schema_path) - schema_path[::-1].index("properties") - 1
    holder = _schema_at(schema, schema_path[:cut])
    path: Path = tuple(error.absolute_path)
    owner = _instance_at(data, path)
    if schema_path[-1] != "properties":  # a jsonschema that names the key in the path
        path, owner = path[:-1], _instance_at(data, path[:-1])
    message = holder.get("errorMessage")
    for key, subschema in holder["properties"].items():
        if subschema is False and isinstance(owner, dict) and key in owner:
            key_path = (*path, key)
            text = message or f"{key!r} is not allowed together with the keys beside it"
            yield key_path, True, text


def _schema_at(schema: dict[str, Any], schema_path: list[Any]) -> Any:
    node: Any = schema
    for part in schema_path:
        node = node[part]
    return node


def _instance_at(data: Any, path: Path) -> Any:
    for part in path:
        data = data[part]
    return data


def _most_precise(errors: Iterable[ValidationError]) -> list[ValidationError]:
    """One error per wrong value (see _VALUE_ERROR_RANK); errors about members of an
    object (unknown or missing keys) are each kept."""
    kept: list[ValidationError] = []
    best: dict[tuple[Any, ...], ValidationError] = {}
    for error in errors:
        rank = _VALUE_ERROR_RANK.get(str(error.validator))
        if rank is None:
            kept.append(error)
            continue
        value = _value_key(error)
        current = best.get(value)
        if current is None or rank < _VALUE_ERROR_RANK[str(current.validator)]:
            best[value] = error
    return kept + list(best.values())


def _value_key(error: ValidationError) -> tuple[Any, ...]:
    """The value an error is about: its path, and for a key's name the key as well (all
    the keys of one mapping share the mapping's path)."""
    path = tuple(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        return (*path, ("key", _instance(error)))
    return path


# jsonschema types an error's instance, rule value and schema as possibly unset (an error
# made by hand may lack them); every error a validator yields has all three.
def _instance(error: ValidationError) -> Any:
    return error.instance


def _expected(error: ValidationError) -> Any:
    """The failed keyword's value in the schema (the minimum, the pattern, ...)."""
    return error.validator_value


def _rule(error: ValidationError) -> dict[str, Any]:
    """The schema holding the failed keyword ({} for a `false` schema)."""
    return error.schema if isinstance(error.schema, dict) else {}


def _translate(error: ValidationError, data: Any, schema: dict[str, Any]) -> Iterator[SchemaError]:
    if isinstance(_instance(error), RefusedNumber):
        return  # the loader refused the value and said so, at the same place
    if error.schema is False:
        yield from _ruled_out_keys(error, data, schema)
        return
    path: Path = tuple(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        key_path = (*path, _instance(error))
        yield key_path, True, _name_message(error, path)
        return
    kind = error.validator
    if kind == "additionalProperties":
        allowed = sorted(_rule(error).get("properties", {}))
        patterns = list(_rule(error).get("patternProperties", {}))
        for key in _instance(error):
            if key not in allowed and not any(re.search(p, key) for p in patterns):
                key_path = (*path, key)
                message = _unknown_key(key, allowed)
                if "^x-" in patterns:
                    message += "; keys starting with 'x-' are free for YAML anchors"
                yield key_path, True, message
        return
    if kind == "required":
        declared = _declared_message(error)
        for field in _expected(error):
            if field not in _instance(error):
                message = declared or f"missing required field {field!r}"
                yield path, False, message
        return
    if kind == "not":  # a key the schema refuses by name, with the reason it declares
        yield path, True, _declared_message(error) or error.message
        return
    if kind in ("anyOf", "oneOf"):
        branch = _matching_branch(error)
        if branch:
            for sub in _most_precise(branch):
                yield from _translate(sub, data, schema)
            return
    yield path, False, _message(error, path)


def _declared_message(error: ValidationError) -> str | None:
    """The message the schema gives a rule (`errorMessage`, which the YAML language server
    shows in editors too)."""
    message: str | None = _rule(error).get("errorMessage")
    return message


def _matching_branch(error: ValidationError) -> list[ValidationError]:
    """Of an anyOf's branches, the errors of the first one whose type fits the value (in a
    template, the branch of `${param}` text only for text that holds `${`)."""
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or ():
        branches.setdefault(int(sub.relative_schema_path[0]), []).append(sub)
    placeholder = _placeholder_branches(_rule(error))
    written_as_one = isinstance(_instance(error), str) and "${" in _instance(error)
    for index, errors in sorted(branches.items()):
        if index in placeholder and not written_as_one:
            continue
        wrong_type = any(e.validator == "type" and len(e.relative_schema_path) == 2 for e in errors)
        if not wrong_type:
            return errors
    return []


def _placeholder_branches(schema: dict[str, Any]) -> set[int]:
    """The anyOf branches that accept a template's `${param}` text (schema_derived.py)."""
    text = manifest_schema()["$defs"]["parameterText"]
    return {index for index, branch in enumerate(schema.get("anyOf", ())) if branch == text}


def _name_message(error: ValidationError, parent: Path) -> str:
    what = {"projects": "project slug", "apps": "app slug", "variables": "variable key"}.get(
        str(parent[-1]) if parent else "", "key"
    )
    name = _instance(error)
    if error.validator == "pattern":
        return f"{what} {name!r} is not valid: {_pattern_hint(error)}"
    return f"{what} {name!r}: {_bounds_message(error)}"


def _unknown_key(key: str, allowed: list[str]) -> str:
    message = f"unknown field {key!r}"
    suggestion = closest(key, allowed)
    if suggestion:
        message += did_you_mean(suggestion)
    return message + f" (allowed here: {', '.join(allowed)})"


def did_you_mean(suggestion: str) -> str:
    note = _ALIAS_NOTES.get(suggestion)
    return f"; did you mean {suggestion!r}?" + (f" ({suggestion} is {note})" if note else "")


def _number(value: float) -> str:
    """0.5 -> '0.5', 1024.0 -> '1024'."""
    rounded = round(value, 6)
    return str(int(rounded)) if rounded == int(rounded) else str(rounded)


def closest(word: str, candidates: list[str]) -> str | None:
    """The candidate the user most likely meant: a known other name for it, the same letters
    in another case, else difflib's."""
    alias = _KNOWN_ALIASES.get(word.lower())
    if alias in candidates:
        return alias
    folded = {c.lower(): c for c in candidates}
    if word.lower() in folded:
        return folded[word.lower()]
    return next(iter(difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)), None)


def _message(error: ValidationError, path: Path) -> str:
    kind, expected, value = error.validator, _expected(error), _instance(error)
    if kind in ("type", "anyOf", "oneOf"):
        return _type_message(error)
    if kind == "const":
        return _declared_message(error) or f"must be {expected!r} (got {value!r})"
    if kind == "enum":
        message = f"{value!r} is not one of {', '.join(map(str, expected))}"
        suggestion = closest(value, [str(e) for e in expected]) if isinstance(value, str) else None
        return message + (did_you_mean(suggestion) if suggestion else "")
    if kind == "multipleOf":
        lowest = _rule(error).get("minimum", 0)
        below = math.floor(value / expected) * expected
        valid = [_number(n) for n in (below, below + expected) if n >= lowest]
        message = f"{value!r} is not a multiple of {expected!r}"
        if len(valid) == 2:
            return f"{message}; the nearest are {' and '.join(valid)}"
        return f"{message}; use {valid[0]}" if valid else message  # below the minimum too
    if kind == "pattern":
        explain = EXPLAINED_FORMATS.get(_rule(error).get("format", ""))
        detail = explain(value) if explain else None  # which part is wrong, where it can tell
        return detail or f"{value!r} is not valid: {_pattern_hint(error)}"
    if kind == "minProperties":
        parent = next((str(p) for p in reversed(path) if isinstance(p, str)), "")
        return _MEMBER_HINT.get(parent, f"needs at least {expected} member(s)")
    return _bounds_message(error)


def _pattern_hint(error: ValidationError) -> str:
    """The schema's own words for a pattern (`patternErrorMessage`, shown by editors too)."""
    hint = _rule(error).get("patternErrorMessage")
    return str(hint) if hint else f"must match {_expected(error)}"


def _bounds_message(error: ValidationError) -> str:
    kind, bound, value = error.validator, _expected(error), _instance(error)
    if kind == "minLength":
        if bound == 1 and value == "":
            return "must not be empty"
        return f"must be at least {bound} characters long (it has {len(value)})"
    if kind == "maxLength":
        return f"must be at most {bound} characters long (it has {len(value)})"
    if kind == "minimum":
        return f"{value!r} is too small: the minimum is {bound}"
    if kind == "maximum":
        return f"{value!r} is too large: the maximum is {bound}"
    if kind == "minItems":
        return f"needs at least {bound} item{'s' if bound != 1 else ''}"
    if kind == "maxItems":
        return f"has {len(value)} items; at most {bound} are allowed"
    return error.message


def _type_message(error: ValidationError) -> str:
    value = _instance(error)
    wanted = _expected_types(_rule(error))
    text_wanted = "string" in wanted
    if isinstance(value, NonDecimalNumber):
        return _non_decimal_message(value, wanted)
    if isinstance(value, Yaml11Boolean):
        return _yaml11_boolean_message(value, wanted)
    if value is None and wanted == ["object"]:
        return _empty_block_message(_rule(error))
    if isinstance(value, bool) and text_wanted:
        return (
            f"YAML reads this as the boolean {str(value).lower()} (yes/no/on/off/true/false "
            'are booleans), not text; quote it (e.g. "on") if you mean the text'
        )
    if isinstance(value, float) and text_wanted:
        written = getattr(value, "text", repr(value))
        return (
            f"{value!r} is a YAML number, not text (YAML drops trailing zeros: 1.10 becomes "
            f'1.1); quote it exactly as intended, e.g. "{written}"'
        )
    message = f"expected {' or '.join(wanted)}, got {kind_of(value)}"
    if isinstance(value, str) and _is_quoted_number(value, wanted):
        message += f"; write it without quotes: {value.strip()}"
    elif isinstance(value, str) and "boolean" in wanted:
        message += "; write true or false, without quotes"
    return message


def _yaml11_boolean_message(boolean: Yaml11Boolean, wanted: list[str]) -> str:
    """`yes`/`no`/`on`/`off`: a boolean to YAML 1.1, text to YAML 1.2 (and so to editors). The
    manifest must mean the same to both: true/false in a boolean field, quotes in a text one."""
    reading = f"YAML 1.1 reads {boolean.text} as the boolean {str(boolean.value).lower()}"
    if "boolean" in wanted:
        return (
            f"{reading}, but editors and YAML 1.2 read it as the text {boolean.text!r}; "
            f"write true or false"
        )
    if "string" in wanted:
        return f'{reading}, not text; quote it (e.g. "{boolean.text}") if you mean the text'
    return f"expected {' or '.join(wanted)}, got {kind_of(boolean)}"


def _empty_block_message(schema: dict[str, Any]) -> str:
    """`preview:` or `defaults:` with nothing under it is YAML null, not an empty block.
    Either the settings are missing or the key is left over; a mapping keyed by name
    (projects, apps, variables) may also mean "none", which is `{}`."""
    if isinstance(schema.get("additionalProperties"), dict):
        return "is empty; remove the key, or list entries under it ({} for none)"
    return "is empty; remove the key or give it settings"


def _is_quoted_number(text: str, wanted: list[str]) -> bool:
    """`version: "1"`, `port: "3000"`: the quotes are the only thing wrong."""
    if _QUOTED_INTEGER.fullmatch(text):
        return "integer" in wanted or "number" in wanted
    return "number" in wanted and _QUOTED_DECIMAL.fullmatch(text) is not None


def _non_decimal_message(number: NonDecimalNumber, wanted: list[str]) -> str:
    """Text fields: quote it. Number fields: plain decimal, which every reader (a reviewer,
    a YAML 1.2 editor) reads as the same number; for `0512`, name both numbers it could be,
    the one a leading zero was most likely meant as first."""
    reading = f"YAML 1.1 reads {number.text} as {number.reading()}"
    if "string" in wanted:
        return f'{reading}, not as the text {number.text}; quote it: "{number.text}"'
    if "integer" in wanted or "number" in wanted:
        if number.is_octal and number.as_decimal_digits() != str(number.value):
            return (
                f"{reading}; write numbers in plain decimal: {number.as_decimal_digits()}, "
                f"or {number.value} if you meant octal {number.text}"
            )
        return f"{reading}; write numbers in plain decimal: {number.value}"
    return f"expected {' or '.join(wanted)}, got {kind_of(number)}"


def _expected_types(schema: dict[str, Any]) -> list[str]:
    if "type" in schema:
        types = schema["type"]
        return [types] if isinstance(types, str) else list(types)
    found: list[str] = []
    placeholder = _placeholder_branches(schema)
    for index, branch in enumerate([*schema.get("anyOf", ()), *schema.get("oneOf", ())]):
        if index not in placeholder:
            found += _expected_types(branch) if "type" in branch else ["object"]
    return found or ["a different value"]


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, NonDecimalNumber):
        return f"number {value.text}"
    if isinstance(value, Yaml11Boolean):
        return f"YAML 1.1 boolean {value.text}"
    return "a list" if isinstance(value, list) else "a mapping"
