"""The types of JSON data: what the platform answers, what a plan's JSON holds.

Recursive aliases that mypy checks: a value typed `JsonValue` must be narrowed
(`isinstance`) before it is used as a string, a number, a list or an object, where `Any`
would let any use through unchecked. Read-only (`Sequence`, `Mapping`), so a `list[str]` or a
`dict[str, int]` is one too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JsonScalar: TypeAlias = bool | int | float | str | None
JsonValue: TypeAlias = "JsonScalar | Sequence[JsonValue] | Mapping[str, JsonValue]"
JsonObject: TypeAlias = Mapping[str, JsonValue]
