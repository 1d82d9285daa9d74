"""Sensitive values: the process-wide registry of what must never leave the process, and the
one redaction function of the code base.

Values are registered where they enter the process: the API key when a client is made for
it, the fingerprint key when it is read, every secret value when it is resolved (plan and
apply). `reconciler.report.output`, the boundary every byte of output passes, redacts them
from whatever it writes; the `-v` call log and error details from the platform pass through
`redact` too.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable

# Replaced whole, never changed in place: every redaction (each line of output) reads it without
# a lock or a copy, and a register() racing with it leaves it the old set or the new one.
_registered: frozenset[str] = frozenset()
_lock = threading.Lock()


def register(value: str | None) -> None:
    """Never let `value` leave the process (None and the empty string are ignored)."""
    global _registered
    if value:
        with _lock:
            _registered = _registered | {value}


def registered() -> frozenset[str]:
    """Every value registered so far."""
    return _registered


def forget_all() -> None:
    """Start over (a new command in the same process, or a test)."""
    global _registered
    with _lock:
        _registered = frozenset()


def contains_registered(text: str) -> bool:
    """Whether `text` holds a registered value in any of the forms `redact` finds."""
    return redact(text) != redact(text, registered_too=False)


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


def redact(text: str, secrets: Iterable[str | None] = (), *, registered_too: bool = True) -> str:
    """`text` with every `Bearer <token>`, every registered value and every one of `secrets`
    replaced by a marker.

    Error details are quoted from a response body after their whitespace is collapsed, JSON
    escapes may survive in a raw body preview, and long texts are cut with `…`: a secret is
    therefore also found with its whitespace runs collapsed or changed, JSON-escaped the way
    any encoder may write it (any character as `\\uXXXX` in either case, `/` as `\\/`...),
    and as the beginning of a secret cut off at the end of a shortened text (a multi-line key
    file, a value longer than the cut).
    """
    candidates = [*secrets, *(_registered_in(text) if registered_too else ())]
    for secret in candidates:
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


def _registered_in(text: str) -> list[str]:
    """The registered values that may occur in `text`: a cheap substring test of each one's
    first word first, so that output is not scanned once per secret. The test looks in the
    text as written and, where it has backslashes, as its JSON escapes read: a secret holding
    `\\n` or `\\\\` printed as written is found only in the first, a JSON-escaped one only in
    the second."""
    forms = (text, _decode_escapes(text)[0]) if "\\" in text else (text,)
    return [
        value
        for value in registered()
        if any(anchor in form for anchor in _anchors(value) for form in forms)
    ]


@functools.lru_cache(maxsize=4096)
def _anchors(secret: str) -> tuple[str, ...]:
    """A piece of `secret` that any match must contain."""
    words = secret.split()
    found = [words[0] if words else secret]
    if len(secret) >= SECRET_MIN_CHARS:
        found.append(secret[:MIN_CUT_PREFIX])  # the beginning of a cut-off secret
    return tuple(found)
