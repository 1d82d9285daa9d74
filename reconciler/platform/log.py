"""`-v` call logging and redaction of the API key.

One line per request sent: operation, outcome, milliseconds, attempt number.
Request and response bodies are never logged (they carry variable values), and
every line passes through `redact` so a key can never reach the terminal.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable
from typing import TextIO

REDACTED = "[REDACTED]"
# A credential after `Bearer`; `<key>`-style placeholders in a server's own help text are none.
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)(?!<)[^\s\"',;]+")
ELLIPSIS = "…"
MIN_CUT_PREFIX = 4
"""A shortened text ending in this many characters of a secret (or more) loses them."""
SECRET_MIN_CHARS = 12
"""A secret this long is redacted wherever it appears, even inside a longer word: it cannot be
there by chance, and a server may glue it to other text (`Bearer%20<key>`). A shorter one is
too short to be secret (the emulator's documented key is `dev`) and may well be part of other
words (`dev.example.com`), so it is redacted only where it stands as a word of its own."""

# Word characters: what a short secret must not be glued to. A `.` between two of them joins
# them too (host names, versions); a `.` after the secret that ends a sentence does not.
_WORD = r"[\w-]"
_ALONE_BEFORE = rf"(?<!{_WORD})(?<!{_WORD}\.)"
_ALONE_AFTER = rf"(?!{_WORD})(?!\.{_WORD})"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every `Bearer <token>` and every given secret replaced by a marker.

    Error details are quoted from a response body after their whitespace is collapsed, JSON
    escapes may survive in a raw body preview, and long texts are cut with `…`: a secret is
    therefore also found with its whitespace runs collapsed or changed, JSON-escaped the way
    any encoder may write it (any character as `\\uXXXX` in either case, `/` as `\\/`...),
    and as the beginning of a secret cut off at the end of a shortened text (a multi-line key
    file, a value longer than the cut).
    """
    for secret in secrets:
        if secret:
            text = _pattern(secret).sub(REDACTED, text)
            if "\\" in text:
                text = _redact_escaped(text, secret)
            if len(secret) >= SECRET_MIN_CHARS:
                text = _cut_prefix(text, secret)
    return _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


@functools.lru_cache(maxsize=256)
def _pattern(secret: str) -> re.Pattern[str]:
    """Where `secret` stands in a text (see `SECRET_MIN_CHARS`)."""
    spaced = _spaced(secret)
    if len(secret) >= SECRET_MIN_CHARS:
        return re.compile(spaced)
    return re.compile(_ALONE_BEFORE + spaced + _ALONE_AFTER)


_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SHORT = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _redact_escaped(text: str, secret: str) -> str:
    """`text` with `secret` replaced where it stands once JSON escapes are read (left to right,
    as a JSON parser would): the search runs on the decoded text (a short secret must stand
    alone there), and each match replaces the characters it was decoded from."""
    decoded, starts = _decode_escapes(text)
    found = [(starts[m.start()], starts[m.end()]) for m in _pattern(secret).finditer(decoded)]
    for start, end in reversed(found):
        text = text[:start] + REDACTED + text[end:]
    return text


def _decode_escapes(text: str) -> tuple[str, list[int]]:
    """`text` with its JSON escapes decoded (a surrogate pair as the one character it stands
    for), and where in `text` each decoded character starts, then `len(text)`."""
    chars: list[str] = []
    starts: list[int] = []
    done = 0
    for escape in _JSON_ESCAPE.finditer(text):
        chars.extend(text[done : escape.start()])
        starts.extend(range(done, escape.start()))
        code, short = escape.groups()
        char = chr(int(code, 16)) if code else _SHORT.get(short, short)
        if chars and "\ud800" <= chars[-1] <= "\udbff" and "\udc00" <= char <= "\udfff":
            pair = (chars.pop() + char).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
            chars.append(pair)  # its start stays the high surrogate's
        else:
            chars.append(char)
            starts.append(escape.start())
        done = escape.end()
    chars.extend(text[done:])
    starts.extend(range(done, len(text) + 1))
    return "".join(chars), starts


def _spaced(secret: str) -> str:
    """A pattern of the secret with any whitespace run matching any other (collapsed,
    re-wrapped)."""
    words = secret.split()
    return r"\s+".join(re.escape(word) for word in words) if words else r"(?!)"


def _cut_prefix(text: str, secret: str) -> str:
    """`text` without a trailing beginning of `secret` left where a shortened text was cut."""
    if not text.endswith(ELLIPSIS):
        return text
    body = text[: -len(ELLIPSIS)]
    for candidate in dict.fromkeys((secret, " ".join(secret.split()))):
        for length in range(min(len(candidate), len(body)), MIN_CUT_PREFIX - 1, -1):
            if body.endswith(candidate[:length]):
                return body[:-length] + REDACTED + ELLIPSIS
    return text


class CallLog:
    """Writes one line per API request to `stream` (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, *, secrets: Iterable[str] = ()) -> None:
        self._stream = stream
        self._secrets = tuple(s for s in secrets if s)

    def add_secret(self, secret: str | None) -> None:
        """Also redact `secret` (the client registers its key here)."""
        if secret and secret not in self._secrets:
            self._secrets = (*self._secrets, secret)

    def record(self, operation: str, outcome: str, milliseconds: float, attempt: int) -> None:
        """`outcome` is the HTTP status or the name of the transport failure."""
        line = f"api: {operation} {outcome} {milliseconds:.0f}ms attempt {attempt}"
        stream = self._stream if self._stream is not None else sys.stderr
        stream.write(redact(line, self._secrets) + "\n")
        stream.flush()
