"""Sensitive values: the type that holds them, which cannot be printed, and the redaction of
text reconciler did not write.

A secret value (a write-only variable's value, a value read with `fromEnv` or `fromFile`) lives
in the process as a `Secret`: `str()`, `repr()` and formatting give a fixed placeholder, and JSON
encoding, pickling and copying refuse it. Its text is taken out with `reveal()` where it must be
used, never where it is shown: the platform client's request encoder (the moment a call is sent),
the HMAC of a fingerprint, and the checks of a value before it is sent (its length, and that it is
none of reconciler's own credentials). So no renderer can print one, whatever text surrounds it.

Nothing is redacted from output by content. A redaction that depends on a secret's value is an
oracle: a pull request's manifest that writes every guess of a secret as text sees which guess
the plan blanks. Text the manifest wrote is printed as written, whatever the secrets hold.

Content redaction remains in one place: `redact`, for text reconciler did not write that can
quote what it sent (a server's error detail, a transport error). There the caller says which
texts are hidden (the API key; for a call that sent secret values, every text of the call,
so that which of them were secret makes no difference) and which are kept as written (what the
call sent, for a call that sent no secret: a server quoting a slug the manifest wrote quotes
the manifest), so that what it hides never depends on text a pull request controls.

The credentials in use (the API key, the fingerprint key) are remembered here too, so that a
manifest's secret source holding one is refused whatever its name (`holds_credential`).
"""

from __future__ import annotations

import functools
import hmac
import re
import threading
from collections.abc import Iterable
from typing import Any, NoReturn, final

HIDDEN = "(sensitive value)"
"""What a `Secret` reads as, wherever it is printed by mistake."""


@final
class Secret:
    """A secret value that cannot be printed: only `reveal()` gives its text."""

    __slots__ = ("_value",)
    _value: str

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a Secret holds text, not a {type(value).__name__}")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The value: for sending it, fingerprinting it or checking it, never for showing it."""
        return self._value

    def __repr__(self) -> str:
        return "Secret(<hidden>)"

    def __str__(self) -> str:
        return HIDDEN

    def __format__(self, spec: str) -> str:
        return HIDDEN

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("a Secret cannot be changed")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("a secret value is never pickled or copied")

    def __copy__(self) -> Secret:
        return self  # immutable: a copy is itself, and nothing is written anywhere

    def __deepcopy__(self, memo: Any) -> Secret:
        return self


def reveal_in_json(value: object) -> str:
    """`json.dumps(..., default=reveal_in_json)`: a `Secret`'s text, where a request is encoded
    (the only encoder that may hold one); anything else is refused as json would."""
    if isinstance(value, Secret):
        return value.reveal()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# --- the credentials in use ---------------------------------------------------------------------

_credentials: frozenset[str] = frozenset()
_lock = threading.Lock()
_MIN_CONTAINED_CREDENTIAL = 16
"""A credential at least this long is found inside a longer value too (`KEY=<api key>`)."""


def remember_credential(value: str | None) -> None:
    """The API key or the fingerprint key in use (None and blanks are ignored)."""
    global _credentials
    value = (value or "").strip()
    if value:
        with _lock:
            _credentials = _credentials | {value}


def forget_credentials() -> None:
    """Start over (a new command in the same process, or a test)."""
    global _credentials
    with _lock:
        _credentials = frozenset()


def holds_credential(value: Secret, also: Iterable[str | None] = ()) -> bool:
    """Whether `value` is (or, for a long credential, contains) one of the credentials in use
    or of `also`: compared after trimming whitespace, so a key file ending in a newline counts."""
    text = value.reveal().strip()
    for credential in {*_credentials, *((c or "").strip() for c in also)}:
        if not credential:
            continue
        if hmac.compare_digest(text.encode(), credential.encode()):
            return True
        if len(credential) >= _MIN_CONTAINED_CREDENTIAL and credential in text:
            return True
    return False


# --- redaction of text reconciler did not write -------------------------------------------------

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


def redact(text: str, secrets: Iterable[str | None], *, keep: Iterable[str] = ()) -> str:
    """`text` (written by someone else: a server, a transport) with every `Bearer <token>` and
    every one of `secrets` replaced by a marker, except where it stands inside one of `keep`
    (texts to leave as written wherever they appear: what a call sent that is no secret).

    Error details are quoted from a response body after their whitespace is collapsed, JSON
    escapes may survive in a raw body preview, and long texts are cut with `…`: a secret is
    therefore also found with its whitespace runs collapsed or changed, JSON-escaped the way
    any encoder may write it (any character as `\\uXXXX` in either case, `/` as `\\/`...),
    and as the beginning of a secret cut off at the end of a shortened text (a multi-line key
    file, a value longer than the cut).
    """
    hidden = [secret for secret in dict.fromkeys(secrets) if secret]
    if hidden:
        kept = _spans_of(text, keep)
        found = [span for secret in hidden for span in _spans(text, secret)]
        found = [span for span in found if not _covered(span, kept)]
        text = _replaced(text, found)
        for secret in hidden:
            if len(secret) >= SECRET_MIN_CHARS:
                text = _cut_prefix(text, secret)
    return _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def _spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Where `secret` stands in `text`: as written, and once JSON escapes are read."""
    found = [m.span() for m in _pattern(secret).finditer(text)]
    if "\\" in text:
        decoded, starts = _decode_escapes(text)
        found += [(starts[m.start()], starts[m.end()]) for m in _pattern(secret).finditer(decoded)]
    return found


def _spans_of(text: str, kept: Iterable[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for word in {k for k in kept if k}:
        start = text.find(word)
        while start >= 0:
            spans.append((start, start + len(word)))
            start = text.find(word, start + 1)
    return spans


def _covered(span: tuple[int, int], kept: list[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in kept)


def _replaced(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each of `spans` (merged where they overlap) replaced by the marker."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        text = text[:start] + REDACTED + text[end:]
    return text


@functools.lru_cache(maxsize=256)
def _pattern(secret: str) -> re.Pattern[str]:
    """Where `secret` stands in a text (see `SECRET_MIN_CHARS`)."""
    spaced = _spaced(secret)
    if len(secret) >= SECRET_MIN_CHARS:
        return re.compile(spaced)
    return re.compile(_ALONE_BEFORE + spaced + _ALONE_AFTER)


_JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SHORT = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


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
