"""A change's detail belongs to its kind: a change of one kind carrying another's is refused
where it is made, not written into a plan file that no reader accepts."""

from __future__ import annotations

import pytest

from reconciler.plan import kinds
from reconciler.plan.changes import (
    Action,
    Change,
    PolicyListDetail,
    SecretSource,
    VariableDetail,
)

DETAILS = {
    "policies": PolicyListDetail(),
    "variable": VariableDetail(SecretSource("fromEnv", "SHOP_DB")),
}


@pytest.mark.parametrize("kind", kinds.names())
@pytest.mark.parametrize("detail_kind", sorted(DETAILS))
def test_a_detail_is_accepted_on_its_own_kind_only(kind: str, detail_kind: str) -> None:
    detail = DETAILS[detail_kind]
    make = lambda: Change(f"{kind}.shop", kind, Action.UPDATE, None, None, detail=detail)  # noqa: E731
    if kind == detail_kind:
        assert make().detail is detail
    else:
        with pytest.raises(ValueError, match=f"a {kind} change cannot carry"):
            make()
