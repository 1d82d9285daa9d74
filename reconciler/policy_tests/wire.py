"""A policy test's request as the bytes `test --live` sends, or why no request carries it as
written.

What is sent is what the test describes, and what the offline evaluation reads:
- the method as written (methods are case-sensitive), an HTTP token;
- the path and the query (`name=value`, joined with `&`) as written: nothing percent-encoded
  or decoded, no dot segment removed. A request target is visible ASCII (RFC 9112), so a path
  or parameter holding a space, a control or a non-ASCII character cannot be sent as written
  (a client sends it percent-encoded, and the gateway does not decode), nor can a parameter
  holding a character that would split the query otherwise (`&`, `=` in a name, `#`);
- the headers, names as written, a line per value, each value one byte per character
  (ISO-8859-1, as the gateway reads header bytes): a character past U+00FF is no byte, HTTP
  allows no control character but the tab in a value (CR or LF would end the header line), and
  strips a value's leading and trailing spaces and tabs.

Nothing else: no body, so no `Content-Length`; `Host` is the environment's host (a test that
sets a header the connection decides is not sendable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reconciler.policy_tests.cases import PolicyTestCase

TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP token (RFC 9110 `tchar`s): a method, a header name."""
TOKEN_CHARACTERS = "letters, digits and !#$%&'*+-.^_`|~"

CONNECTION_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the connection itself decides: the gateway routes by Host, and the others frame the
request; a test setting one cannot be sent as written."""

# What a character means to the gateway where a request target holds it.
_SPLITS = {
    "?": "the start of the query",
    "#": "the start of a fragment, which is not sent",
    "&": "the end of a parameter",
    "=": "the end of a parameter's name",
}


@dataclass(frozen=True)
class Wire:
    """The bytes of a test's request: the method, the target (path and query) and the headers
    (without Host, which the sender adds)."""

    method: bytes
    target: bytes
    headers: tuple[tuple[bytes, bytes], ...]


class NotSendable(Exception):
    """No request carries the test as written; the message says why and what to write."""


def on_the_wire(test: PolicyTestCase) -> Wire:
    """The test's request as bytes; `NotSendable` when no request carries it as written."""
    if not TOKEN.fullmatch(test.method):
        raise NotSendable(
            f"the method {test.method!r} is not an HTTP token ({TOKEN_CHARACTERS}), so no "
            "request line carries it"
        )
    target = _in_target(test.path, "the path", "?#")
    parameters = [
        _in_target(name, f"the name of query parameter {name!r}", "&=#")
        + b"="
        + _in_target(value, f"the value of query parameter {name!r}", "&#")
        for name, values in test.query.items()
        for value in values
    ]
    if parameters:
        target += b"?" + b"&".join(parameters)
    return Wire(test.method.encode("ascii"), target, _headers(test))


def _in_target(text: str, what: str, splits: str) -> bytes:
    for char in text:
        if not "\x21" <= char <= "\x7e":
            raise NotSendable(
                f"{what} holds {_char(char)}, which a request target cannot carry (it is visible "
                "ASCII: no space, control or non-ASCII character); a client sends it "
                f"percent-encoded as its UTF-8 bytes ({_percent(char)}), and the gateway "
                "compares it as sent, without decoding: write it encoded, as it is sent"
            )
        if char in splits:
            raise NotSendable(
                f"{what} holds {char!r}, which the gateway reads as {_SPLITS[char]}, so the "
                f"request sent would not be the test's; percent-encode it ({_percent(char)}) as "
                "a client would"
            )
    return text.encode("ascii")


def _headers(test: PolicyTestCase) -> tuple[tuple[bytes, bytes], ...]:
    fixed = sorted(name for name in test.headers if name.lower() in CONNECTION_HEADERS)
    if fixed:
        raise NotSendable(
            f"the test sets {', '.join(fixed)}, which a live request cannot carry as written "
            "(the connection decides it; Host is the environment's host)"
        )
    headers = []
    for name, values in test.headers.items():
        if not TOKEN.fullmatch(name):
            raise NotSendable(
                f"the header name {name!r} is not an HTTP token ({TOKEN_CHARACTERS}), so no "
                "request carries it"
            )
        headers += [(name.encode("ascii"), _header_value(name, value)) for value in values]
    return tuple(headers)


def _header_value(name: str, value: str) -> bytes:
    what = f"the value of header {name!r}"
    for char in value:
        if char > "\xff":
            raise NotSendable(
                f"{what} holds {_char(char)}, which is not one byte: the gateway reads a header "
                "value one ISO-8859-1 character per byte, so no request makes it see this "
                "value; write the value as the gateway reads the bytes sent"
            )
        if (char < " " and char != "\t") or char == "\x7f":
            raise NotSendable(
                f"{what} holds {_char(char)}, a control character, which HTTP does not allow in "
                "a header value (CR or LF would end the header line); remove it"
            )
    if value != value.strip(" \t"):
        raise NotSendable(
            f"{what} begins or ends with a space or tab, which HTTP strips from a header value, "
            "so the gateway would not see the value as written; remove them"
        )
    return value.encode("latin-1")


def _char(char: str) -> str:
    return f"{char!r} (U+{ord(char):04X})"


def _percent(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
