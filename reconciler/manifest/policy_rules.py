"""Rules for gateway policies and their match conditions that JSON Schema cannot express.

Errors, as the spec states them: RE2 syntax checked with RE2 itself (its own error logging
turned off, so users see only our message), IP addresses and CIDR ranges. (The exactly-one-of
rules and `present: true` only are the JSON Schema's, where editors see them too.)

Warnings, for values the spec allows but that are very likely slips: a CIDR
range with host bits set (`10.0.0.1/8`), and a method that is not a standard
upper-case HTTP method (the spec's `methods` is any list of strings).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import re2

from reconciler.manifest.problems import Path

HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH")
STRING_MATCH_KINDS = ("exact", "prefix", "regex")
MATCH_MEMBERS = ("path", "method", "header", "queryParam", "remoteIp")

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False

Report = Callable[..., None]
"""`report(path, message, key=False)`: record a problem at a value (or at its key)."""


class PolicyRules:
    def __init__(self, report: Report, warn: Report) -> None:
        self.report = report
        self.warn = warn

    def check(self, path: Path, policy: dict[str, Any]) -> None:
        match = policy.get("match")
        if isinstance(match, list):
            for index, item in enumerate(match):
                if isinstance(item, dict):
                    self._match_item((*path, "match", index), item)

    def _match_item(self, path: Path, item: dict[str, Any]) -> None:
        member = item.get("path")
        if isinstance(member, dict) and isinstance(member.get("path"), dict):
            self._string_match((*path, "path", "path"), member["path"])
        member = item.get("method")
        if isinstance(member, dict) and isinstance(member.get("methods"), list):
            self._methods((*path, "method", "methods"), member["methods"])
        for name in ("header", "queryParam"):
            member = item.get(name)
            if isinstance(member, dict):
                self._named((*path, name), member)
        member = item.get("remoteIp")
        if isinstance(member, dict):
            self._remote_ip((*path, "remoteIp"), member)

    def _string_match(self, path: Path, condition: dict[str, Any]) -> None:
        pattern = condition.get("regex")
        if isinstance(pattern, str) and pattern:
            error = _re2_error(pattern)
            if error:
                self.report(
                    (*path, "regex"),
                    f"invalid RE2 regular expression: {error} (RE2 has no backreferences or "
                    "lookaround)",
                )

    def _methods(self, path: Path, methods: list[Any]) -> None:
        for index, method in enumerate(methods):
            if isinstance(method, str) and method:  # an empty one is the schema's error
                message = _method_warning(method)
                if message:
                    self.warn((*path, index), message)

    def _named(self, path: Path, member: dict[str, Any]) -> None:
        value = member.get("value")
        if isinstance(value, dict):
            self._string_match((*path, "value"), value)

    def _remote_ip(self, path: Path, member: dict[str, Any]) -> None:
        sides = [s for s in ("in", "notIn") if s in member]
        for side in sides:
            ranges = member[side]
            if isinstance(ranges, list):
                for index, text in enumerate(ranges):
                    if isinstance(text, str):
                        self._network((*path, side, index), text)

    def _network(self, path: Path, text: str) -> None:
        problem = _network_problem(text)
        if problem:
            self.report(path, problem)
            return
        warning = _host_bits_warning(text)
        if warning:
            self.warn(path, warning)


def _method_warning(method: str) -> str | None:
    """HTTP methods are case-sensitive (RFC 9110), so `get` most likely matches nothing; an
    unknown name is allowed (custom methods exist) but is usually a typo."""
    if method in HTTP_METHODS:
        return None
    if method.upper() in HTTP_METHODS:
        return (
            f"methods are upper case: write {method.upper()!r} (HTTP methods are "
            f"case-sensitive, so {method!r} most likely matches no request)"
        )
    return (
        f"{method!r} is not a standard HTTP method ({', '.join(HTTP_METHODS)}); "
        "check the spelling (a custom method is allowed)"
    )


def _network_problem(text: str) -> str | None:
    """Not an IP address or CIDR range at all (the platform refuses it)."""
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
    except ValueError:
        return f"{text!r} is not an IP address or CIDR range (e.g. 203.0.113.7 or 10.0.0.0/8)"
    return None


def _host_bits_warning(text: str) -> str | None:
    """`10.0.0.1/8` is a range the platform accepts, but its address is not the range's
    start: either the prefix length or the address is probably wrong."""
    if "/" not in text:
        return None
    interface = ipaddress.ip_interface(text)
    network = interface.network
    if interface.ip == network.network_address:
        return None
    single = f"{interface.ip}/{network.max_prefixlen}"
    return (
        f"{text!r} has host bits set; the range is written {str(network)!r} "
        f"(or {single!r} for the single address)"
    )


def _re2_error(pattern: str) -> str | None:
    try:
        re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "does not compile"
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return None
