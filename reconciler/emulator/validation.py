"""Declarative request validation: every bound of the spec, all problems reported at once.

A `Spec` checks one JSON value and appends `(field path, message)` pairs to a list; `validate`
raises one 400 naming every offending field. Booleans are not integers here, and integral
floats are not integers either (the wire type must be right).

`Newer` is the emulator behaving like a platform newer than the spec, for tests of what a
client does with what it does not know (`EmulatorConfig.accept_unknown`): `validate(...,
accept_unknown=True)` then accepts members and values the spec does not list (an object with
none of an exactly-one group but members it does not know is another kind of it, a policy
such as `rateLimit`), and the handlers keep them and return them on reads. By default the
emulator is faithful to the spec and refuses them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import re2

from reconciler.emulator.errors import ApiError

Problems = list[tuple[str, str]]
Extra = Callable[[Any, str, Problems], None]

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@dataclass(frozen=True)
class Newer:
    """How the emulator behaves like a newer platform (EmulatorConfig.accept_unknown)."""

    settings_sections: Mapping[str, str] = field(default_factory=dict)
    """Where `environments.updateSettings` keeps a member the spec does not list: `runtime` or
    `build` for the names given; any other at the top level of the environment."""
    extra_environments: tuple[str, ...] = ()
    """Environments every app is created with besides production and preview."""


_ACCEPT_UNKNOWN: ContextVar[bool] = ContextVar("accept_unknown", default=False)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@dataclass
class Spec:
    nullable: bool = field(default=False, kw_only=True)
    extra: Extra | None = field(default=None, kw_only=True)

    def check(self, value: Any, path: str, problems: Problems) -> None:
        if value is None:
            if not self.nullable:
                problems.append((path, "must not be null"))
            return
        before = len(problems)
        self.check_value(value, path, problems)
        if self.extra is not None and len(problems) == before:
            self.extra(value, path, problems)

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        raise NotImplementedError


@dataclass
class Str(Spec):
    min: int = 1
    max: int | None = None
    pattern: str | None = None
    pattern_hint: str = ""
    enum: tuple[str, ...] | None = None

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        if not isinstance(value, str):
            problems.append((path, "must be a string"))
            return
        if self.enum is not None:
            if value not in self.enum and not _ACCEPT_UNKNOWN.get():
                problems.append((path, f"must be one of {', '.join(self.enum)}"))
            return
        if len(value) < self.min:
            problems.append((path, f"must be at least {self.min} characters"))
        elif self.max is not None and len(value) > self.max:
            problems.append((path, f"must be at most {self.max} characters"))
        elif self.pattern is not None and not re.fullmatch(self.pattern, value):
            problems.append((path, self.pattern_hint or f"must match {self.pattern}"))


@dataclass
class Int(Spec):
    min: int | None = None
    max: int | None = None
    step: int | None = None

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append((path, "must be an integer"))
            return
        _check_range(value, self.min, self.max, self.step, path, problems)


@dataclass
class Num(Spec):
    min: float | None = None
    max: float | None = None
    step: float | None = None

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.append((path, "must be a number"))
            return
        if value != value or value in (float("inf"), float("-inf")):
            problems.append((path, "must be a finite number"))
            return
        _check_range(value, self.min, self.max, self.step, path, problems)


def _check_range(
    value: float,
    low: float | None,
    high: float | None,
    step: float | None,
    path: str,
    problems: Problems,
) -> None:
    if low is not None and value < low:
        problems.append((path, f"must be at least {low}"))
    elif high is not None and value > high:
        problems.append((path, f"must be at most {high}"))
    elif step is not None and (value / step) != int(value / step):
        problems.append((path, f"must be a multiple of {step}"))


@dataclass
class Bool(Spec):
    only_true: bool = False

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        if not isinstance(value, bool):
            problems.append((path, "must be a boolean"))
        elif self.only_true and value is not True:
            problems.append((path, "only true is allowed"))


@dataclass
class Arr(Spec):
    item: Spec = field(default_factory=lambda: Str())
    min: int = 0
    max: int | None = None

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        if not isinstance(value, list):
            problems.append((path, "must be an array"))
            return
        if len(value) < self.min:
            problems.append((path, f"must have at least {self.min} item(s)"))
        elif self.max is not None and len(value) > self.max:
            problems.append((path, f"must have at most {self.max} items"))
        for index, item in enumerate(value):
            self.item.check(item, f"{path}[{index}]", problems)


@dataclass
class Obj(Spec):
    fields: Mapping[str, Spec] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    # each group: exactly one of these members must be present (and not null)
    exactly_one: tuple[tuple[str, ...], ...] = ()
    at_least_one_member: bool = False

    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        if not isinstance(value, dict):
            problems.append((path, "must be an object"))
            return
        unknown = [name for name in value if name not in self.fields]
        if not _ACCEPT_UNKNOWN.get():
            problems.extend((_join(path, name), "unknown field") for name in unknown)
        for name in self.required:
            if name not in value:
                problems.append((_join(path, name), "is required"))
        for name, spec in self.fields.items():
            if name in value:
                spec.check(value[name], _join(path, name), problems)
        for group in self.exactly_one:
            present = [name for name in group if value.get(name) is not None]
            another_kind = not present and unknown and _ACCEPT_UNKNOWN.get()
            if len(present) != 1 and not another_kind:
                where = path or "body"
                problems.append(
                    (where, f"set exactly one of {', '.join(group)} (got {len(present)})")
                )
        known = any(k in self.fields for k in value)
        if self.at_least_one_member and not known and not (unknown and _ACCEPT_UNKNOWN.get()):
            problems.append((path, f"set at least one of {', '.join(self.fields)}"))


@dataclass
class Any_(Spec):
    def check_value(self, value: Any, path: str, problems: Problems) -> None:
        return


def validate(body: Any, spec: Obj, *, accept_unknown: bool = False) -> dict[str, Any]:
    """Check a request body; raise one 400 naming every problem. `accept_unknown`: as a newer
    platform would, accept members and values the spec does not list (`Newer`)."""
    problems: Problems = []
    token = _ACCEPT_UNKNOWN.set(accept_unknown)
    try:
        spec.check(body, "", problems)
    finally:
        _ACCEPT_UNKNOWN.reset(token)
    if problems:
        raise refusal(problems)
    if not isinstance(body, dict):  # `spec` refuses any other value: never reached
        raise refusal([("body", "must be an object")])
    return body


def refusal(problems: Problems) -> ApiError:
    """One 400 naming every problem, the first one in the detail."""
    first = problems[0]
    label = first[0] or "body"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return ApiError(400, f"{label}: {first[1]}{more}", [(f or "body", m) for f, m in problems])


def lone_surrogates(document: Any) -> Problems:
    """Where strings of a parsed JSON document, member names included, hold a lone surrogate.

    JSON may escape one (`"\\udc00"`) but UTF-8 cannot encode it, so a value holding one could be
    neither answered nor saved. A bad member name is reported at its object's path, and the string
    itself is never quoted (the problem body must stay encodable). Walked with an explicit stack:
    the parser accepts nesting deeper than a recursive walk could follow.
    """
    problems: Problems = []
    pending: list[tuple[Any, str]] = [(document, "")]
    while pending:
        value, path = pending.pop()
        if isinstance(value, str):
            if not _utf8_encodable(value):
                problems.append((path, "must be valid Unicode: it holds a lone surrogate"))
        elif isinstance(value, list):
            pending += [(item, f"{path}[{index}]") for index, item in enumerate(value)]
        elif isinstance(value, dict):
            for name, member in value.items():
                if _utf8_encodable(name):
                    pending.append((member, _join(path, name)))
                else:
                    problems.append((path, "a member name holds a lone surrogate"))
    return sorted(problems)


def _utf8_encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---- reusable checks -----------------------------------------------------------------------


def re2_syntax(value: str, path: str, problems: Problems) -> None:
    try:
        re2.compile(value, options=_RE2_OPTIONS)
    except Exception as error:  # re2.error, and defensive against binding quirks
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        problems.append((path, f"invalid RE2 pattern: {reason}"))


def ip_or_cidr(value: str, path: str, problems: Problems) -> None:
    try:
        if "/" in value:
            ipaddress.ip_network(value, strict=False)
        else:
            ipaddress.ip_address(value)
    except ValueError:
        problems.append((path, "must be an IP address or CIDR range"))


_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def host_name(value: str, path: str, problems: Problems) -> None:
    host = value.lower()
    if "://" in host or "/" in host or ":" in host or "?" in host or "#" in host:
        problems.append((path, "must be a host name without scheme, port or path"))
        return
    labels = host.split(".")
    if len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
        problems.append((path, "must be a host name such as app.example.com"))
        return
    if labels[-1].isdigit():
        problems.append((path, "must be a host name, not an IP address"))


SLUG = r"[a-z0-9-]+"
SLUG_HINT = "must contain only lowercase letters, digits and hyphens"
VARIABLE_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
REPOSITORY = r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
REPOSITORY_HINT = "must be owner/name"
