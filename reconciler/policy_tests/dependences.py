"""Which open choices (`choices`) the outcome of one match member depends on, and why.

For the manifest validator: a member listed here may behave differently on a gateway that
answered the spec's open questions otherwise, so the user deserves a warning. Only dependences
visible in the member itself are reported; those that hang on the request alone (a header sent
twice, a client without an address) are documented in `choices` and never reported here, or
every member would carry them.
"""

from __future__ import annotations

import ipaddress
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.policy_tests.choices import (
    IGNORE_CASE_ASCII,
    IGNORE_CASE_REGEX,
    IP_FAMILIES,
    METHOD_CASE,
    NON_ASCII_BYTES,
    PATH_AS_SENT,
    QUERY_AS_SENT,
    RANGE_HOST_BITS,
    REGEX_FULL_MATCH,
    REPEATED_HEADER,
    OpenChoice,
    address_range,
    covers_mapped_space,
)


@dataclass(frozen=True)
class Dependence:
    choice: OpenChoice
    why: str

    def __str__(self) -> str:
        return f"{self.why} ({self.choice.key}: {self.choice.answer})"


def choices_affecting(kind: str, member: Mapping[str, Any]) -> tuple[Dependence, ...]:
    """The open choices the outcome of one match member depends on.

    `kind` is the member's name in a match item (`path`, `method`, `header`, `queryParam`,
    `remoteIp`) and `member` its value as the spec shapes it (`{"path": {"prefix": "/a"}}` for
    `path`). A malformed member has no dependences (the validator reports it otherwise)."""
    try:
        found = _BY_KIND[kind](member)
    except (KeyError, TypeError, AttributeError, ValueError):
        return ()
    return tuple(found)


def _path(member: Mapping[str, Any]) -> list[Dependence]:
    condition = member["path"]
    found = _string_condition(condition)
    kind, pattern = _kind_and_pattern(condition)
    if "%" in pattern:
        found.append(
            Dependence(
                PATH_AS_SENT,
                f"the {kind} holds `%`: percent-encoding is compared as written, not decoded",
            )
        )
    elif kind != "regex" and set(pattern) - _SENT_AS_IS_IN_PATH:
        found.append(
            Dependence(
                PATH_AS_SENT,
                f"the {kind} holds characters clients percent-encode, so it only matches a decoded path",
            )
        )
    if _DOT_SEGMENT.search(pattern) or "//" in pattern:
        found.append(
            Dependence(
                PATH_AS_SENT,
                f"the {kind} holds `.`/`..` segments or `//`, which are matched as sent, not normalised",
            )
        )
    found += _non_ascii(kind, pattern)
    return found


def _method(member: Mapping[str, Any]) -> list[Dependence]:
    lower = [m for m in member["methods"] if isinstance(m, str) and m != m.upper()]
    if not lower:
        return []
    return [
        Dependence(
            METHOD_CASE,
            f"{', '.join(map(repr, lower))} would match upper-case methods if compared without case",
        )
    ]


def _header(member: Mapping[str, Any]) -> list[Dependence]:
    if "value" not in member:
        return []
    found = _string_condition(member["value"])
    kind, pattern = _kind_and_pattern(member["value"])
    if "," in pattern:
        found.append(
            Dependence(
                REPEATED_HEADER,
                f"the {kind} holds `,`, as the values of a repeated header joined do",
            )
        )
    return found + _non_ascii(kind, pattern)


def _query_parameter(member: Mapping[str, Any]) -> list[Dependence]:
    texts = [("name", member["name"])]
    found: list[Dependence] = []
    if "value" in member:
        found = _string_condition(member["value"])
        texts.append(_kind_and_pattern(member["value"]))
    for label, written in texts:
        special = sorted(set(written) & _DECODED_IN_QUERY)
        if special:
            found.append(
                Dependence(
                    QUERY_AS_SENT,
                    f"the {label} holds {' '.join(special)}: the query is compared as sent, not decoded",
                )
            )
        found += _non_ascii(label, written)
    return found


def _remote_ip(member: Mapping[str, Any]) -> list[Dependence]:
    found: list[Dependence] = []
    for written in member.get("in") or member["notIn"]:
        network = ipaddress.ip_network(written, strict=False)
        if network.version == 6 and address_range(written).version == 4:
            found.append(
                Dependence(
                    IP_FAMILIES,
                    f"{written} is an IPv4-mapped range, taken as the IPv4 range {address_range(written)}",
                )
            )
        elif covers_mapped_space(network):
            found.append(
                Dependence(
                    IP_FAMILIES, f"{written} covers IPv4-mapped addresses, yet holds no IPv4 client"
                )
            )
        if "/" in written and ipaddress.ip_interface(written).ip != network.network_address:
            found.append(
                Dependence(
                    RANGE_HOST_BITS, f"{written} has host bits set; it is taken as {network}"
                )
            )
    return found


_BY_KIND = {
    "path": _path,
    "method": _method,
    "header": _header,
    "queryParam": _query_parameter,
    "remoteIp": _remote_ip,
}


# ---- string conditions ------------------------------------------------------------------------

# what a path is sent with unencoded: RFC 3986 pchar and `/` (`%` is reported on its own)
_SENT_AS_IS_IN_PATH = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/%")
# what a query name or value holds only after decoding, or cannot hold unencoded
_DECODED_IN_QUERY = frozenset("%+ &=#")
_DOT_SEGMENT = re.compile(r"(^|/)\.\.?(/|$)")
_LEADING_FLAGS = re.compile(r"\(\?[a-zA-Z]+\)")
_ESCAPE = re.compile(r"\\[pP]\{[^}]*\}|\\.")


def _kind_and_pattern(condition: Mapping[str, Any]) -> tuple[str, str]:
    kinds = [k for k in ("exact", "prefix", "regex") if condition.get(k) is not None]
    if len(kinds) != 1 or not isinstance(condition[kinds[0]], str):
        raise ValueError("not a string condition")
    kind, pattern = kinds[0], condition[kinds[0]]
    return kind, pattern


def _string_condition(condition: Mapping[str, Any]) -> list[Dependence]:
    kind, pattern = _kind_and_pattern(condition)
    ignore_case = condition.get("ignoreCase") is True
    found: list[Dependence] = []
    if kind == "regex" and not _whole_value_either_way(pattern):
        found.append(
            Dependence(
                REGEX_FULL_MATCH,
                "the regex is not anchored at both ends (`^...$`), so a search would match more",
            )
        )
    if ignore_case and kind == "regex" and _has_cased_letter(_ESCAPE.sub("", pattern)):
        found.append(Dependence(IGNORE_CASE_REGEX, "ignoreCase is set on a regex with letters"))
    if (
        ignore_case
        and kind != "regex"
        and any(not c.isascii() and _has_cased_letter(c) for c in pattern)
    ):
        found.append(
            Dependence(
                IGNORE_CASE_ASCII,
                f"ignoreCase is set and the {kind} holds non-ASCII letters, which compare exactly",
            )
        )
    return found


def _non_ascii(label: str, written: str) -> list[Dependence]:
    if written.isascii():
        return []
    return [
        Dependence(
            NON_ASCII_BYTES,
            f"the {label} holds non-ASCII characters, read from requests one byte each",
        )
    ]


def _has_cased_letter(text: str) -> bool:
    return any(c.lower() != c.upper() for c in text)


def _whole_value_either_way(pattern: str) -> bool:
    """Whether a full match and a search agree for every value: anchored (or open with `.*`)
    at both ends, with no alternation outside a group (`^a|b$` is `(^a)|(b$)`)."""
    body = _LEADING_FLAGS.sub("", pattern, count=1) if pattern.startswith("(?") else pattern
    if _top_level_alternation(body):
        return False
    starts = body.startswith(("^", "\\A", ".*"))
    ends = any(
        body.endswith(end) and not _escaped(body, len(body) - len(end))
        for end in ("$", "\\z", ".*")
    )
    return starts and ends


def _escaped(text: str, index: int) -> bool:
    """Whether the character at `index` follows an odd run of backslashes."""
    run = len(text[:index]) - len(text[:index].rstrip("\\"))
    return run % 2 == 1


def _top_level_alternation(pattern: str) -> bool:
    depth, index = 0, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _class_end(pattern, index)
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            return True
        index += 1
    return False


def _class_end(pattern: str, start: int) -> int:
    """The index of the `]` closing the class opened at `start` (a `]` first in it is literal)."""
    index = start + 1
    index += pattern.startswith("^", index)
    index += pattern.startswith("]", index)
    while index < len(pattern) and pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index
