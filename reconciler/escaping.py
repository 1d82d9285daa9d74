"""Text others wrote (a manifest, the platform, a server), made safe to print.

`clean(text)` is what every renderer of such text uses before it reaches a terminal, a log or
a report (reconciler/report: plan text and markdown, `reconciler test` text and JUnit XML;
reconciler/manifest: the path of a problem): no line break or escape sequence from a name can
start a line of its own or drive the terminal, and no invisible character hides what is there.
It sits at the bottom of the package so that the manifest's problems can use it too.
"""

from __future__ import annotations

import unicodedata


def clean(text: str) -> str:
    """`text` with each character that would not show as itself escaped, in Python's notation:
    control characters (line breaks, tab, ESC, BEL, NUL, DEL, C1) as `\\xNN`; bidirectional
    controls, zero-width and other invisible format characters, line and paragraph separators,
    surrogates, private-use and unassigned code points as `\\uNNNN` (`\\UNNNNNNNN`). Spaces
    (U+0020, and the other space separators) stay. A backslash is not escaped: `\\x1b` in the
    output is either an escaped ESC or those four characters as written.

    The result holds only characters `str.isprintable()` accepts and spaces, so it is also text
    XML 1.0 can hold. Code points newer than this Python's Unicode database count as unassigned.
    """
    if text.isprintable():
        return text
    return "".join(char if _shows(char) else _escaped(char) for char in text)


def escaped_json(text: str) -> str:
    """JSON text (as `json.dumps(..., ensure_ascii=False)` writes it) with every character that
    would not show as itself written as a `\\uXXXX` escape (a surrogate pair above U+FFFF): the
    same JSON, which no bidirectional control or invisible character can make read otherwise.
    Outside strings, JSON text holds only characters that show, and line breaks."""
    if text.isprintable():
        return text
    return "".join(char if char == "\n" or _shows(char) else _json_escape(char) for char in text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def shows(char: str) -> bool:
    """Whether `clean` leaves `char` as it is."""
    return _shows(char)


def _shows(char: str) -> bool:
    return char.isprintable() or unicodedata.category(char) == "Zs"


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
