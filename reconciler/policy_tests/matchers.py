"""Match members compiled once per policy list: each checks one request and says why it missed.

The members follow the spec's match table (path, method, header, queryParam, remoteIp); what
the spec leaves open is decided in `choices`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import re2

from reconciler.policy_tests.choices import (
    Network,
    address_range,
    client_address,
    combined_value,
    first_value,
    fold_ascii,
    inside_any,
)
from reconciler.policy_tests.request import Request

STRING_KINDS = ("exact", "prefix", "regex")
MEMBER_KINDS = ("path", "method", "header", "queryParam", "remoteIp")
"""The members of a match item, in the order they are checked (the spec's table order)."""

STRING_KEYS = (*STRING_KINDS, "ignoreCase")
MEMBER_KEYS: Mapping[str, tuple[str, ...]] = {
    "path": ("path",),
    "method": ("methods",),
    "header": ("name", "present", "value"),
    "queryParam": ("name", "present", "value"),
    "remoteIp": ("in", "notIn"),
}
"""The keys of each match member (and of its string condition) this evaluator has a rule for."""
_CONDITION_OF = {"path": "path", "header": "value", "queryParam": "value"}

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_FOLDING = re2.Options()
_RE2_FOLDING.log_errors = False
_RE2_FOLDING.case_sensitive = False


class PolicyError(ValueError):
    """A policy the evaluator cannot run: `where` is its path (`policies[2].match[0].path`)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Miss:
    """Why a member did not match: the request's value it compared (None: absent) and a
    sentence saying so."""

    compared: str | None
    reason: str


class Member(Protocol):
    @property
    def kind(self) -> str: ...

    def check(self, request: Request) -> Miss | None: ...


# ---- reading the JSON shape -------------------------------------------------------------------


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PolicyError(where, "must be an object")
    return value


def sequence(value: Any, where: str, *, at_least: int = 0) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise PolicyError(where, "must be a list")
    if len(value) < at_least:
        raise PolicyError(where, f"must hold at least {at_least} item(s)")
    return value


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise PolicyError(where, "must be a non-empty string")
    return value


def exactly_one(spec: Mapping[str, Any], names: Sequence[str], where: str) -> str:
    present = [name for name in names if spec.get(name) is not None]
    if len(present) != 1:
        raise PolicyError(where, f"set exactly one of {', '.join(names)}")
    return present[0]


# ---- string conditions ------------------------------------------------------------------------


@dataclass(frozen=True)
class StringCondition:
    kind: str
    pattern: str
    ignore_case: bool
    test: Callable[[str], bool]

    def __str__(self) -> str:
        folding = " (ignoring case)" if self.ignore_case else ""
        return f"{self.kind} {self.pattern!r}{folding}"


def string_condition(spec: Any, where: str) -> StringCondition:
    spec = mapping(spec, where)
    kind = exactly_one(spec, STRING_KINDS, where)
    pattern = text(spec[kind], f"{where}.{kind}")
    ignore_case = spec.get("ignoreCase") or False
    if not isinstance(ignore_case, bool):
        raise PolicyError(f"{where}.ignoreCase", "must be a boolean")
    return StringCondition(kind, pattern, ignore_case, _test(kind, pattern, ignore_case, where))


def _test(kind: str, pattern: str, ignore_case: bool, where: str) -> Callable[[str], bool]:
    if kind == "regex":
        regex = compile_regex(pattern, ignore_case, f"{where}.regex")
        return lambda value: regex.fullmatch(value) is not None
    if ignore_case:
        folded = fold_ascii(pattern)
        if kind == "exact":
            return lambda value: fold_ascii(value) == folded
        return lambda value: fold_ascii(value).startswith(folded)
    if kind == "exact":
        return lambda value: value == pattern
    return lambda value: value.startswith(pattern)


def compile_regex(pattern: str, ignore_case: bool, where: str) -> Any:
    try:
        return re2.compile(pattern, options=_RE2_FOLDING if ignore_case else _RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "does not compile"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise PolicyError(where, f"invalid RE2 pattern: {reason}") from None


# ---- members ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PathMember:
    condition: StringCondition
    kind: str = "path"

    def check(self, request: Request) -> Miss | None:
        if self.condition.test(request.path):
            return None
        return Miss(request.path, f"path {request.path!r} does not match {self.condition}")


@dataclass(frozen=True)
class MethodMember:
    methods: tuple[str, ...]
    kind: str = "method"

    def check(self, request: Request) -> Miss | None:
        if request.method in self.methods:
            return None
        listed = ", ".join(self.methods)
        return Miss(request.method, f"method {request.method!r} is not one of {listed}")


@dataclass(frozen=True)
class NamedMember:
    """A header (names folded to lower case) or a query parameter (names as written)."""

    kind: str
    name: str
    condition: StringCondition | None  # None: `present: true`

    def check(self, request: Request) -> Miss | None:
        if self.kind == "header":
            values = request.headers.get(self.name, ())
            value = combined_value(values)
        else:
            values = request.query.get(self.name, ())
            value = first_value(values)
        label = "header" if self.kind == "header" else "query parameter"
        if value is None:
            return Miss(None, f"{label} {self.name!r} is absent")
        if self.condition is None or self.condition.test(value):
            return None
        return Miss(value, f"{label} {self.name!r} = {value!r} does not match {self.condition}")


@dataclass(frozen=True)
class RemoteIpMember:
    inside: bool  # True for `in`, False for `notIn`
    ranges: tuple[Network, ...]
    kind: str = "remoteIp"

    def check(self, request: Request) -> Miss | None:
        address = client_address(request.client_ip)
        if inside_any(address, self.ranges) == self.inside:
            return None
        if address is None:
            return Miss(request.client_ip, "the client IP is unknown, so inside no range")
        if self.inside:
            return Miss(request.client_ip, f"client IP {address} is inside none of {self._shown()}")
        holder = next(r for r in self.ranges if r.version == address.version and address in r)
        return Miss(request.client_ip, f"client IP {address} is inside {holder} (notIn)")

    def _shown(self) -> str:
        shown = ", ".join(str(r) for r in self.ranges[:3])
        more = len(self.ranges) - 3
        return f"[{shown}{f', and {more} more' if more > 0 else ''}]"


def unknown_keys(kind: str, spec: Any) -> list[str]:
    """The keys of a match member (`path.caseFold` as `path.caseFold`) that this evaluator has
    no rule for, in the member and in its string condition; none for what is not an object
    (`member` says what is wrong with it)."""
    if not isinstance(spec, Mapping):
        return []
    found = [str(key) for key in spec if key not in MEMBER_KEYS[kind]]
    condition = spec.get(_CONDITION_OF.get(kind, ""))
    if isinstance(condition, Mapping):
        inner = _CONDITION_OF[kind]
        found += [f"{inner}.{key}" for key in condition if key not in STRING_KEYS]
    return found


def member(kind: str, spec: Any, where: str) -> Member:
    spec = mapping(spec, where)
    if kind == "path":
        return PathMember(string_condition(spec.get("path"), f"{where}.path"))
    if kind == "method":
        methods = sequence(spec.get("methods"), f"{where}.methods", at_least=1)
        return MethodMember(tuple(text(m, f"{where}.methods[{i}]") for i, m in enumerate(methods)))
    if kind in ("header", "queryParam"):
        return _named(kind, spec, where)
    side = exactly_one(spec, ("in", "notIn"), where)
    listed = sequence(spec[side], f"{where}.{side}", at_least=1)
    return RemoteIpMember(
        side == "in", tuple(_range(t, f"{where}.{side}[{i}]") for i, t in enumerate(listed))
    )


def _named(kind: str, spec: Mapping[str, Any], where: str) -> NamedMember:
    name = text(spec.get("name"), f"{where}.name")
    if exactly_one(spec, ("present", "value"), where) == "present":
        if spec["present"] is not True:
            raise PolicyError(f"{where}.present", "only `true` is allowed")
        condition = None
    else:
        condition = string_condition(spec["value"], f"{where}.value")
    return NamedMember(kind, name.lower() if kind == "header" else name, condition)


def _range(value: Any, where: str) -> Network:
    written = text(value, where)
    try:
        return address_range(written)
    except ValueError:
        raise PolicyError(where, f"{value!r} is not an IP address or CIDR range") from None
