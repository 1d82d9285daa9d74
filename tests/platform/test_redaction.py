"""Redaction of secrets from server text: a secret never gets through, and text that does not
hold it is never changed. A key long enough to be secret is cut wherever it appears; a shorter
one, which other words may contain by chance (`dev` in `dev.example.com`), where it stands as a
word of its own."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reconciler.sensitive import REDACTED, SECRET_MIN_CHARS, redact
from tests.platform.helpers import SENTINEL_KEY


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("dev", "no project at dev.example.com"),
        ("dev", "see https://api.dev.example.com/dev-tools/devices"),
        ("k", "the slug is taken (409)"),
        ("key", "the keyring holds 3 keys"),
        ("web", "app_web2 and webhooks"),
    ],
)
def test_a_short_key_inside_other_words_leaves_them_alone(key: str, text: str) -> None:
    assert redact(text, [key]) == text


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("dev", "unknown API key dev.", "unknown API key [REDACTED]."),
        ("dev", "key 'dev' is not valid", "key '[REDACTED]' is not valid"),
        ("dev", "token=dev&x=1", "token=[REDACTED]&x=1"),
        ("k", "k", "[REDACTED]"),
    ],
)
def test_a_short_key_standing_as_a_word_is_redacted(key: str, text: str, expected: str) -> None:
    assert redact(text, [key]) == expected


def test_a_key_long_enough_to_be_secret_is_redacted_even_inside_a_word() -> None:
    text = f"Authorization=Bearer%20{SENTINEL_KEY}&next=1 and x{SENTINEL_KEY}y"
    assert redact(text, [SENTINEL_KEY]).count("[REDACTED]") == 2
    assert SENTINEL_KEY not in redact(text, [SENTINEL_KEY])


# ---- properties --------------------------------------------------------------------------------
# "A word" here: a run the key is not part of a longer word of, where word characters are
# letters, digits, `_` and `-`, and a `.` between two of them joins them (host names, versions).

_WORD_CHAR = re.compile(r"[\w-]")


def _is_word(text: str, index: int) -> bool:
    return 0 <= index < len(text) and bool(_WORD_CHAR.fullmatch(text[index]))


def _stands_alone(text: str, start: int, end: int) -> bool:
    joined_before = _is_word(text, start - 1) or (
        start >= 2 and text[start - 1] == "." and _is_word(text, start - 2)
    )
    joined_after = _is_word(text, end) or (
        end + 1 < len(text) and text[end] == "." and _is_word(text, end + 1)
    )
    return not joined_before and not joined_after


def _forms(key: str) -> set[str]:
    """The key as it may stand in server text: as sent, or JSON-escaped by any encoder: Python's
    (with or without ASCII escapes), PHP's (`/` as `\\/`), or one escaping every character
    (`\\u0061`, in either case)."""
    python = json.dumps(key)[1:-1]
    every = "".join(f"\\u{ord(c):04x}" for c in key)
    return {
        key,
        python,
        json.dumps(key, ensure_ascii=False)[1:-1],
        python.replace("/", "\\/"),
        every,
        every.upper().replace("\\U", "\\u"),
    }


_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SHORT_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_read(text: str) -> str:
    """`text` with its JSON escapes read, left to right, as a parser reads a string's content."""

    def one(escape: re.Match[str]) -> str:
        code = escape.group(1)
        return chr(int(code[1:], 16)) if code.startswith("u") else _SHORT_ESCAPES.get(code, code)

    return _JSON_ESCAPE.sub(one, text).encode("utf-16", "surrogatepass").decode("utf-16")


def _holds(text: str, key: str) -> bool:
    """Whether `text` holds the key where redaction must find it: as written, or once its JSON
    escapes are read (so in any form an encoder writes, and any mixture of them)."""
    return _stands(text, key) or _stands(_json_read(text), key)


def _stands(text: str, key: str) -> bool:
    starts = [m.start() for m in re.finditer(f"(?={re.escape(key)})", text)]
    if len(key) >= SECRET_MIN_CHARS and starts:
        return True
    return any(_stands_alone(text, i, i + len(key)) for i in starts)


HEADER_SAFE = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
# keys as the client accepts them: printable ASCII without spaces, short ones included
KEYS = st.text(HEADER_SAFE, min_size=1, max_size=20)
PIECES = st.sampled_from(
    [" ", ".", "-", "_", "/", ":", "=", "&", "'", '"', "(", ")", "\n", "é", "…", "x", "7"]
)


@st.composite
def texts_around(draw: st.DrawFn, key: str) -> str:
    """Text made of the key (as sent or JSON-escaped), pieces of it, its neighbours and words
    from its own alphabet."""
    fragments = st.one_of(
        st.sampled_from(sorted(_forms(key))),
        st.builds(lambda i, j: key[i:j], st.integers(0, len(key)), st.integers(0, len(key))),
        PIECES,
        st.text(st.sampled_from(sorted(set(key + "ab.-"))), max_size=6),
    )
    return "".join(draw(st.lists(fragments, max_size=12)))


@settings(max_examples=500, deadline=None)
@given(data=st.data(), key=KEYS)
def test_text_that_does_not_hold_the_key_is_never_changed(data: st.DataObject, key: str) -> None:
    text = data.draw(texts_around(key), label="text")
    assume("…" not in text)  # a cut text may end in a secret's first characters: redacted too
    assume(not _holds(text, key))
    assert redact(text, [key]) == redact(text, [])


@settings(max_examples=500, deadline=None)
@given(data=st.data(), key=KEYS)
def test_the_key_never_gets_through(data: st.DataObject, key: str) -> None:
    assume(key not in REDACTED)
    text = data.draw(texts_around(key), label="text")
    # The marker stands for what was cut: a letter no key holds, so that a short key glued to
    # the one cut (`0:0:`) does not count as standing alone once its neighbour is gone.
    assert not _holds(redact(text, [key]).replace(REDACTED, "ж"), key)
