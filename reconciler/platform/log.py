"""`-v` call logging and redaction of the API key.

One line per request sent: operation, outcome, milliseconds, attempt number.
Request and response bodies are never logged (they carry variable values), and
every line passes through `redact` so a key can never reach the terminal.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterable, Iterator
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
    therefore also found with its whitespace runs collapsed or changed, JSON-escaped, and as
    the beginning of a secret cut off at the end of a shortened text (a multi-line key file,
    a value longer than the cut).
    """
    for secret in secrets:
        if secret:
            for pattern in _patterns(secret):
                text = pattern.sub(REDACTED, text)
            if len(secret) >= SECRET_MIN_CHARS:
                text = _cut_prefix(text, secret)
    return _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


@functools.lru_cache(maxsize=256)
def _patterns(secret: str) -> tuple[re.Pattern[str], ...]:
    """Where `secret` stands in a text, in each of its forms (see `SECRET_MIN_CHARS`)."""
    anywhere = len(secret) >= SECRET_MIN_CHARS
    patterns: list[re.Pattern[str]] = []
    for form in _forms(secret):
        spaced = _spaced(form)
        patterns.append(re.compile(spaced if anywhere else _ALONE_BEFORE + spaced + _ALONE_AFTER))
    return tuple(patterns)


def _forms(secret: str) -> Iterator[str]:
    yield secret
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        if escaped != secret:
            yield escaped


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
