"""Whatever a manifest puts in a test's name, path or headers (line breaks, ESC, BEL, NUL, bidi
and zero-width characters, lone surrogates), `reconciler test` prints one line per thing it
reports, with no character a terminal would act on or hide, and its JUnit XML parses."""

from __future__ import annotations

import json
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from reconciler.escaping import clean
from reconciler.manifest.model import PolicyTest
from reconciler.policy_tests.run import TestResult as Result
from reconciler.report.policy_tests import render_json, render_junit, render_text
from tests.policy_tests.cli_helpers import Sample, firewall, manifest_text, run_test, write

FORGED = "ok\n  PASS  forged\x1b[2J\x07\u202etxt.exe\u200b"
HOSTILE = st.text(st.characters(codec=None), max_size=12) | st.sampled_from(
    [FORGED, "\r\n", "\x00", "\ud800", "\ufffe", "\x85\u2028\u2029", "\x1b]0;title\x07"]
)


def shows_as_itself(char: str) -> bool:
    return char.isprintable() or unicodedata.category(char) == "Zs"


def case(name: str, path: str, header: str) -> PolicyTest:
    return PolicyTest(
        name=name,
        method="GET",
        path=path,
        client_ip="198.51.100.7",
        expect="deny",
        headers={"X-Note": (header,)},
    )


@st.composite
def results(draw: st.DrawFn) -> list[Result]:
    """One result of each status, the names, path, header and reasons drawn."""
    texts = [draw(HOSTILE) for _ in range(6)]
    failing = case(texts[0], texts[1], texts[2])
    return [
        Result("shop/web/production", case(texts[3], "/", ""), "passed", actual="deny"),
        Result(
            "shop/web/production",
            failing,
            "failed",
            actual="allow",
            failures=(f"expected deny, got allow {texts[4]}",),
            explanation=f"allowed\n  #0 {texts[4]!r}",
        ),
        Result("shop/web/production", case(texts[5], "/", ""), "skipped", skip_reason=FORGED),
    ]


@given(results())
def test_text_has_one_line_per_thing_and_nothing_a_terminal_acts_on(
    drawn: list[Result],
) -> None:
    lines = render_text(drawn).removesuffix("\n").split("\n")
    assert all(shows_as_itself(char) for line in lines for char in line)
    assert [line[:8] for line in lines] == [
        "shop/web",
        "  PASS  ",
        "  FAIL  ",
        "        ",  # the request
        "        ",  # the failure
        "        ",  # the explanation's two lines
        "        ",
        "  SKIP  ",
        "        ",  # the reason
        "1 passed",
    ]
    assert lines[1] == f"  PASS  {clean(drawn[0].name)}"
    assert lines[2] == f"  FAIL  {clean(drawn[1].name)}"


@given(results())
def test_junit_always_parses_and_shows_each_name_cleaned(drawn: list[Result]) -> None:
    root = ET.fromstring(render_junit(drawn))
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [clean(r.name) for r in drawn]
    failure = cases[1].find("failure")
    assert failure is not None and failure.text is not None
    assert failure.text.split("\n")[0] == clean(f"GET {drawn[1].test.path} from 198.51.100.7")
    skipped = cases[2].find("skipped")
    assert skipped is not None and skipped.get("message") == clean(FORGED)


@given(results())
def test_json_keeps_the_text_exact(drawn: list[Result]) -> None:
    document = json.loads(render_json(drawn))
    assert [r["name"] for r in document["results"]] == [r.name for r in drawn]


def test_a_name_with_a_line_break_and_escapes_cannot_forge_a_line(tmp_path: Path) -> None:
    """End to end: YAML's double-quoted escapes put the characters in the manifest."""
    blocked = Sample(FORGED, "/admin\u202e", "allow", headers={"X-Note": "\u200b"})
    manifest = write(
        tmp_path,
        manifest_text(
            [firewall("block-admin", {"path": {"path": {"prefix": "/admin"}}})], [blocked]
        ),
    )
    text = run_test("-f", manifest)
    assert text.exit_code == 1
    assert text.stdout.splitlines()[:3] == [
        "shop/web/production",
        "  FAIL  ok\\x0a  PASS  forged\\x1b[2J\\x07\\u202etxt.exe\\u200b",
        f"        GET /admin\\u202e from 198.51.100.7 ({manifest}:20:15)",
    ]
    assert "\x1b" not in text.stdout and "\x07" not in text.stdout
    junit = run_test("-f", manifest, "--format", "junit").stdout
    [testcase] = ET.fromstring(junit).findall("testsuite/testcase")
    assert testcase.get("name") == clean(FORGED)
