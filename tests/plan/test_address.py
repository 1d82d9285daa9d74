"""Addresses are written and read in one place: what is written reads back as itself, for every
kind of the registry and every depth it has."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.plan import kinds
from reconciler.plan.address import Address

SLUG = st.from_regex(r"[a-z0-9][a-z0-9-]{1,20}", fullmatch=True)
HOST = st.from_regex(r"[a-z0-9-]{1,10}(\.[a-z0-9-]{1,10}){1,3}", fullmatch=True)
KEY = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


@st.composite
def addresses(draw: st.DrawFn) -> Address:
    kind = draw(st.sampled_from(kinds.kinds()))
    parts = [draw(SLUG) for _ in range(min(kind.depth, 3))]
    if kind.depth == 4:
        parts.append(draw(HOST if kind.name == "domain" else KEY))
    return Address(kind.name, tuple(parts))


@given(addresses())
def test_an_address_reads_back_as_itself(address: Address) -> None:
    text = str(address)
    assert Address.parse(text) == address
    assert text.startswith(f"{address.kind}.") and text.endswith(address.leaf)
    assert address.sibling(address.leaf) == address
    assert address.scope == address.parts[:-1]


@pytest.mark.parametrize("text", ["", "project", "project.", ".shop", "shop"])
def test_text_that_is_no_address_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="is not an address"):
        Address.parse(text)


def test_a_host_keeps_its_dots() -> None:
    address = Address.parse("domain.shop/web/production/www.shop.example.com")
    assert address.leaf == "www.shop.example.com" and address.environment == (
        "shop",
        "web",
        "production",
    )
