"""The emulator's fast JSON (orjson, `reconciler/emulator/jsoncodec.py`) reads and writes what the
standard library's `json` does, so no client can tell them apart: the same values (non-ASCII
text, lone surrogates, integers beyond 64 bits, floats such as 0.25, NaN and infinities), the
same refusals; and the emulator's answers keep their behaviour where orjson alone would differ
(integers beyond 64 bits sent or stored, NaN in a hand-edited state file)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.emulator import jsoncodec
from reconciler.emulator.app import EmulatorConfig
from reconciler.emulator.store import Store
from reconciler.emulator.validation import lone_surrogates
from tests.emulator.helpers import make_app, make_project, ok, problem, target

# every code point, lone surrogates included
TEXT = st.text(st.characters(exclude_categories=()), max_size=12)
NUMBERS = (
    st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**19])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.25, -0.0, 1e16, 1e-7, 5e-324, 1.7976931348623157e308])
)
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])


def _documents(numbers: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        st.none() | st.booleans() | numbers | TEXT,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
        max_leaves=16,
    )


DOCUMENTS = _documents(NUMBERS)
DOCUMENTS_WITH_NON_FINITE = _documents(NUMBERS | NON_FINITE)


def _same(left: Any, right: Any) -> bool:
    """Equal as JSON values and as Python types: 1 is not 1.0, -0.0 is not 0.0, NaN is NaN,
    and members keep their order."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        both_nan = math.isnan(left) and math.isnan(right)
        return both_nan or (left == right and math.copysign(1, left) == math.copysign(1, right))
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    return bool(left == right)


def _outcome(function: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "value", function(*args, **kwargs)
    except (ValueError, TypeError, RecursionError) as error:  # the errors answered as 400/500
        return "error", f"{type(error).__name__}: {error}"


def _stdlib_request(raw: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    return json.loads(raw, parse_constant=refuse)


def _assert_reads_alike(raw: bytes) -> None:
    expected = _outcome(_stdlib_request, raw)
    got = _outcome(jsoncodec.loads_request, raw)
    if got[0] == "value":
        value, valid_unicode = got[1]
        if valid_unicode:
            assert lone_surrogates(value) == []
        got = ("value", value)
    assert got[0] == expected[0], (raw, got, expected)
    assert _same(got[1], expected[1]) if got[0] == "value" else got == expected


@settings(max_examples=300)
@given(document=DOCUMENTS, ensure_ascii=st.booleans())
def test_a_request_body_reads_as_the_standard_library_reads_it(
    document: Any, ensure_ascii: bool
) -> None:
    text = json.dumps(document, ensure_ascii=ensure_ascii)
    _assert_reads_alike(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=300)
@given(
    document=DOCUMENTS,
    cut=st.integers(0, 200),
    length=st.integers(0, 3),
    junk=st.binary(max_size=4) | st.sampled_from([b"\\ud800", b"NaN", b"1e400", b"\xef\xbb\xbf"]),
)
def test_broken_bodies_are_refused_or_read_as_the_standard_library_does(
    document: Any, cut: int, length: int, junk: bytes
) -> None:
    raw = json.dumps(document).encode()
    at = cut % (len(raw) + 1)
    _assert_reads_alike(raw[:at] + junk + raw[at + length :])


@pytest.mark.parametrize(
    "raw",
    [
        b'"\\udc00"',
        b'{"\\ud800": 1}',
        b"123456789012345678901234567890",
        b"-9223372036854775809",
        b"18446744073709551616",
        b"1e400",
        b"NaN",
        b"-Infinity",
        b"\xef\xbb\xbf{}",
        '{"a": "é😀"}'.encode("utf-16"),
        b'{"a": 1, "a": 2, "b": 3}',
        b"0.25",
        b"-0",
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_documents_where_orjson_differs_read_as_the_standard_library_reads_them(
    raw: bytes,
) -> None:
    _assert_reads_alike(raw)


def _stdlib_answer(value: Any) -> bytes:
    """What Starlette's JSONResponse wrote."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")


@settings(max_examples=300)
@given(document=DOCUMENTS)
def test_an_answer_holds_what_the_standard_library_writes(document: Any) -> None:
    expected = _outcome(_stdlib_answer, document)
    got = _outcome(jsoncodec.dumps_answer, document)
    assert got[0] == expected[0], (got, expected)
    if got[0] == "value":
        assert _same(json.loads(got[1]), json.loads(expected[1]))


@settings(max_examples=200)
@given(document=DOCUMENTS_WITH_NON_FINITE)
def test_exact_answers_refuse_nan_and_infinities_as_the_standard_library_does(
    document: Any,
) -> None:
    expected = _outcome(_stdlib_answer, document)
    got = _outcome(jsoncodec.dumps_answer, document, exact=True)
    assert got[0] == expected[0]
    if got[0] == "value":
        assert _same(json.loads(got[1]), json.loads(expected[1]))


@settings(max_examples=200)
@given(document=DOCUMENTS_WITH_NON_FINITE, exact=st.booleans())
def test_the_state_file_reads_back_what_was_saved(document: Any, exact: bool) -> None:
    """Saved then loaded, any document comes back the same, NaN and lone surrogates included,
    when the store says it may hold NaN (`exact`); and the loader tells it does."""
    has_non_finite = _holds_non_finite(document)
    if has_non_finite and not exact:
        return  # a store that loaded no NaN never holds one: requests cannot bring it
    seen = jsoncodec.NonFiniteNumbers()
    loaded = jsoncodec.loads_state(jsoncodec.dumps_state(document, exact=exact), seen)
    assert _same(loaded, document)
    assert seen.seen == has_non_finite


def _holds_non_finite(document: Any) -> bool:
    if isinstance(document, float):
        return not math.isfinite(document)
    if isinstance(document, list):
        return any(map(_holds_non_finite, document))
    if isinstance(document, dict):
        return any(map(_holds_non_finite, document.values()))
    return False


# ---- through the emulator ---------------------------------------------------------------------


def test_integers_beyond_64_bits_are_stored_and_answered_exactly(emulator) -> None:
    make_project(emulator)
    make_app(emulator)
    huge = 10**30
    regions = [{"name": "fra", "replicas": {"min": 1, "max": huge}}]
    ok(emulator.call("environments.updateSettings", {**target(), "regions": regions}))
    env = ok(emulator.call("environments.getEnvironment", target()))["data"]
    assert env["regions"][0]["replicas"]["max"] == huge


@pytest.mark.parametrize("number", ["NaN", "Infinity", "1e400"])
def test_a_state_file_holding_nan_answers_500_and_keeps_it(
    start_emulator, tmp_path: Path, number: str
) -> None:
    """A hand-edited state file can hold a number no request can: answers that show it are a
    500 problem (never `null`), and saving the state keeps it as it was written."""
    path = tmp_path / "state.json"
    first = start_emulator(EmulatorConfig(dev_key="k", state_file=path))
    make_project(first)
    make_app(first)
    state = json.loads(path.read_text())
    (env_id,) = [i for i, e in state["environments"].items() if e["slug"] == "production"]
    text = path.read_text()
    replicas = '"replicas":{"min":1,"max":1}'
    before, after = text.split(env_id, 1)
    path.write_text(
        before + env_id + after.replace(replicas, f'"replicas":{{"min":1,"max":{number}}}', 1)
    )

    second = start_emulator(EmulatorConfig(dev_key="k", state_file=path))
    problem(second.call("environments.getEnvironment", target()), 500)
    assert ok(second.call("projects.getProject", {"project": "shop"}))["data"]["slug"] == "shop"
    ok(second.call("projects.updateProject", {"project": "shop", "name": "Shop 2"}))
    saved = Store(path).state["environments"][env_id]["regions"][0]["replicas"]["max"]
    assert isinstance(saved, float) and not math.isfinite(saved)
