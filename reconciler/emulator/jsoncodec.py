"""JSON for the wire and the state file: orjson where its answer is the standard library's, the
standard library everywhere else, so that no client can tell which one ran.

orjson parses and writes JSON several times faster, but differs from `json` in four ways that
matter here, each kept out of its fast path:

- it reads an integer outside the 64-bit range as a float (`json` keeps it exact): a document
  holding a run of 19 digits or more is parsed by `json` (a false alarm, such as digits inside a
  string, only costs speed);
- it refuses some documents `json` reads (a lone surrogate escape, a number that overflows to
  infinity, a byte order mark, other encodings than UTF-8): those are read again by `json`, whose
  answer (a value, or the error the caller turns into a 400) stands;
- it writes NaN and infinities as `null` where `json` refuses them: numbers that only a
  hand-edited state file can hold (requests are refused them), so a store that loaded one
  encodes with `json` (`exact=True`);
- it refuses integers outside the 64-bit range and strings holding a lone surrogate: those are
  encoded again by `json`, which writes the integer or raises the error the caller answers.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

# an integer of 19 digits or more may be outside orjson's 64-bit range
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


class NonFiniteNumbers:
    """Set when a parsed document held NaN or an infinity (`json` reads them, orjson never)."""

    def __init__(self) -> None:
        self.seen = False

    def constant(self, name: str) -> float:
        self.seen = True
        return float(name)

    def number(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            self.seen = True
        return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_request(raw: bytes) -> tuple[Any, bool]:
    """A request body as `json.loads(raw, parse_constant=<refuse>)` reads it, raising what it
    raises (ValueError, UnicodeDecodeError, RecursionError); and whether its strings are known to
    be valid Unicode (orjson refuses a lone surrogate escape, `json` reads one)."""
    if not _LONG_DIGITS.search(raw):
        try:
            return orjson.loads(raw), True
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw, parse_constant=_reject_constant), False


def loads_state(text: bytes, non_finite: NonFiniteNumbers) -> Any:
    """A state file as `json.loads(text.decode("utf-8"))` reads it; `non_finite.seen` tells
    whether it held NaN or an infinity."""
    if not _LONG_DIGITS.search(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(
        text.decode("utf-8"), parse_constant=non_finite.constant, parse_float=non_finite.number
    )


def dumps_answer(value: Any, *, exact: bool = False) -> bytes:
    """`value` as Starlette's JSONResponse writes it (UTF-8, no NaN, compact), raising what it
    raises (ValueError, UnicodeEncodeError, TypeError). `exact`: the value may hold NaN or an
    infinity, which orjson would write as null."""
    if not exact:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")


def dumps_state(value: Any, *, exact: bool = False) -> bytes:
    """`value` as the state file holds it: what `json.dumps(value, separators=(",", ":"))`
    would write, non-ASCII text as UTF-8 rather than escapes, and (in its fallback) lone
    surrogates escaped, NaN and infinities kept."""
    if not exact:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    return json.dumps(value, separators=(",", ":")).encode("ascii")
