"""A live variable read from the platform never prints its value: not in its repr (what a
traceback, a log line or an assertion message shows of it), not through the raw answer it
keeps beside the parsed members."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reconciler.plan.kinds.variables import READ_OPERATION, live_variables

VALUES = st.text(min_size=1).map(lambda text: f"value-{text}")


@given(value=VALUES, kind=st.sampled_from(["recoverable", "sensitive", "a-newer-kind"]))
def test_a_live_variables_value_is_in_no_printed_form(value: str, kind: str) -> None:
    (variable,) = live_variables(
        READ_OPERATION, [{"key": "DATABASE_URL", "kind": kind, "value": value, "extra": value}]
    )
    assert variable.value == value  # read, and kept for the comparison
    for shown in (repr(variable), str(variable), repr((variable,))):
        assert value not in shown
