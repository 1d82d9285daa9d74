"""Host names and image references: the schema's pattern (what decides, for the CLI and for
editors) and the function that says which part is wrong agree on every value, under Python's
regular expressions as the CLI runs them and ECMA-262's as editors run them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import regress
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconciler.manifest.formats import HOST_PATTERN, IMAGE_PATTERN, host_problem, image_problem
from reconciler.manifest.schema import _ecma_regex, manifest_schema

# Characters the two formats are made of, the ones they must refuse, and the whitespace and
# case-folding characters on which Python, ECMA-262 and str methods differ.
PARTS = ["a", "Z", "0", "9", "-", "_", ".", ":", "/", "@", "+", "sha256", "xn--", "com"]
TRICKY = [" ", "\t", "\n", "\x1c", "\x85", "\xa0", "\u2028", "\ufeff", "\u212a", "*", "://", "é"]
HEX = "0123456789abcdef"


def texts() -> st.SearchStrategy[str]:
    piece = st.sampled_from(PARTS + TRICKY) | st.text(alphabet="az09.-:/@", max_size=4)
    return st.lists(piece, max_size=12).map("".join)


def hosts() -> st.SearchStrategy[str]:
    label = st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,3}[a-zA-Z0-9])?", fullmatch=True)
    return (
        st.tuples(
            st.lists(label, min_size=1, max_size=4), st.sampled_from(["", ".", " ", "\n", ".."])
        ).map(lambda t: ".".join(t[0]) + t[1])
        | texts()
    )


def images() -> st.SearchStrategy[str]:
    name = st.sampled_from(["nginx", "ghcr.io/acme/web", "localhost:5000/app", "a/b/c", ""])
    tag = st.sampled_from([":1.27", ":latest", ":v1_2", ":-x", ":", ":" + "a" * 129, ""])
    digest = st.sampled_from(["", "@sha256:" + HEX * 4, "@sha256:abc", "@x+y.z:" + HEX * 2])
    suffix = st.sampled_from(["", "\n", " ", "@", "/x"])
    return st.tuples(name, tag, digest, suffix).map("".join) | texts()


def agree(pattern: str, problem: Callable[[str], str | None], value: str) -> None:
    by_cli = _ecma_regex(pattern).search(value) is not None
    by_editors = regress.Regex(pattern, "u").find(value) is not None
    fits = problem(value) is None
    assert by_cli == by_editors == fits, (value, by_cli, by_editors, problem(value))


@settings(max_examples=300, deadline=None)
@given(hosts())
@example("shop.example.com")
@example("Shop.Example.COM.")
@example("10.0.0.1")
@example("a.1-2")
@example("\u212aelvin.example.com")  # the Kelvin sign lower-cases to an ASCII `k`
@example("a.com\n")
def test_host_pattern_and_explanation_agree(value: str) -> None:
    agree(HOST_PATTERN, host_problem, value)


@settings(max_examples=300, deadline=None)
@given(images())
@example("nginx:1.27")
@example("ghcr.io/acme/web@sha256:" + HEX * 4)
@example("localhost:5000/app")
@example("nginx:1.27\n")
def test_image_pattern_and_explanation_agree(value: str) -> None:
    agree(IMAGE_PATTERN, image_problem, value)


@pytest.mark.parametrize(
    ("where", "pattern", "format_name"),
    [
        (("settings", "domains", "items"), HOST_PATTERN, "hostname"),
        (("app", "oci", "image"), IMAGE_PATTERN, "image-reference"),
    ],
)
def test_the_schema_carries_these_patterns(
    where: tuple[str, ...], pattern: str, format_name: str
) -> None:
    definition, *rest = where
    node = manifest_schema()["$defs"][definition]
    for part in rest:
        node = node["properties"][part] if part in node.get("properties", {}) else node[part]
    assert node["pattern"] == pattern and node["format"] == format_name
