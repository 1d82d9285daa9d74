"""`reconciler.escaping.clean`: others' text made safe to print."""

from __future__ import annotations

import unicodedata
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from reconciler.escaping import clean


def test_controls_bidi_and_invisible_characters_are_escaped_spaces_and_letters_stay() -> None:
    assert (
        clean("a\nb\r\t\x1b[31m\x07\x00\x7f\x85")
        == "a\\x0ab\\x0d\\x09\\x1b[31m\\x07\\x00\\x7f\\x85"
    )
    assert clean("\u202eexe.txt\u2066\u200b\u200d\ufeff") == (
        "\\u202eexe.txt\\u2066\\u200b\\u200d\\ufeff"
    )
    assert clean("\u2028\u2029\ud800\ufffe\U000e0041") == (
        "\\u2028\\u2029\\ud800\\ufffe\\U000e0041"
    )
    assert clean("café ☃ 日本\u00a0\u3000 ok") == "café ☃ 日本\u00a0\u3000 ok"


@given(st.text(st.characters(codec=None)))
def test_what_is_left_shows_as_itself_and_xml_can_hold_it(text: str) -> None:
    shown = clean(text)
    assert all(c.isprintable() or unicodedata.category(c) == "Zs" for c in shown)
    element = ET.fromstring(ET.tostring(ET.Element("x", name=shown), encoding="unicode"))
    assert element.get("name") == shown


@given(st.text(st.characters(codec=None)))
def test_text_that_shows_as_itself_is_left_alone(text: str) -> None:
    if all(c.isprintable() or unicodedata.category(c) == "Zs" for c in text):
        assert clean(text) == text
