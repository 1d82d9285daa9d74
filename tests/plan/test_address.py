"""Paths and addresses are written and read in one place: what is written reads back as
itself, for every kind of the registry, every depth it has and any slugs the manifest allows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.address import Address, TreePath
from reconciler.manifest.model import ENVIRONMENT_NAMES
from reconciler.plan import kinds
from reconciler.plan.kinds.base import Location

PROJECT_SLUG = st.from_regex(r"[a-z0-9-]{3,255}", fullmatch=True)
"""The manifest's `projects` property names."""
APP_SLUG = st.text(min_size=3, max_size=255).filter(lambda slug: "/" not in slug)
"""The manifest's `apps` property names: 3 to 255 characters of any kind, but for `/`, which
no text form of a path could tell from the separator (`a/b/production` would be ambiguous)."""
ENVIRONMENT = st.sampled_from(ENVIRONMENT_NAMES)
HOST = st.from_regex(r"[a-z0-9-]{1,10}(\.[a-z0-9-]{1,10}){1,3}", fullmatch=True)
KEY = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,255}", fullmatch=True)


@st.composite
def addresses(draw: st.DrawFn) -> Address:
    kind = draw(st.sampled_from(kinds.kinds()))
    slugs = [draw(PROJECT_SLUG), draw(APP_SLUG), draw(ENVIRONMENT)][: min(kind.depth, 3)]
    if kind.depth == 4:
        slugs.append(draw(HOST if kind.name == "domain" else KEY))
    return Address.of(kind.name, *slugs)


@given(addresses())
def test_an_address_reads_back_as_itself(address: Address) -> None:
    text = str(address)
    assert Address.parse(text) == address
    assert text == f"{address.kind}.{address.path}" and text.endswith(address.leaf)
    assert address.sibling(address.leaf) == address
    assert address.parent.child(address.leaf) == address.path


@given(addresses())
def test_a_path_reads_back_as_itself_and_knows_what_is_above_it(address: Address) -> None:
    path = address.path
    assert TreePath.parse(str(path)) == path
    assert [above.depth for above in path.lineage()] == list(range(path.depth, 0, -1))
    assert path.lineage()[1:] == path.parent.lineage()
    assert path.environment == TreePath(path.slugs[:3])


@pytest.mark.parametrize("text", ["", "project", "project.", ".shop", "shop"])
def test_text_that_is_no_address_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not an address"):
        Address.parse(text)


def test_a_host_keeps_its_dots() -> None:
    address = Address.parse("domain.shop/web/production/www.shop.example.com")
    assert address.leaf == "www.shop.example.com"
    assert address.environment == TreePath.of("shop", "web", "production")
    assert str(address.environment) == "shop/web/production"


def test_a_location_named_by_a_path_is_its_project_app_and_environment() -> None:
    variable = TreePath.of("shop", "web", "production", "KEY")
    assert Location.of(variable).body() == {
        "project": "shop",
        "app": "web",
        "environment": "production",
    }
    assert Location.of(TreePath.of("shop")).body() == {"project": "shop"}
