"""Property tests: any plan survives save/load exactly, and every renderer copes with it."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.address import Address
from reconciler.manifest.model import Position
from reconciler.plan import kinds
from reconciler.plan.changes import (
    ABSENT,
    UNKNOWN,
    Action,
    Call,
    Change,
    FieldDiff,
    Note,
    Plan,
    PolicyEdit,
    PolicyListDetail,
    SecretRef,
    SecretSource,
    VariableDetail,
)
from reconciler.plan.planfile import load_plan
from reconciler.platform.operations import OPERATIONS, get_operation
from reconciler.report.plan_json import plan_to_dict, render_json, render_markdown, render_text
from tests.fixtures.planfiles import write_plan

SENSITIVE = "(sensitive value)"

# Field names are plain words: a name starting with `$` or a {kind: writeonly, value: ...}
# mapping means something to the format and is covered by the example tests.
names = st.text(string.ascii_letters + "_", min_size=1, max_size=8).filter(lambda s: s != "kind")
texts = st.text(max_size=12)
secret_refs = st.builds(SecretRef, source=texts, fingerprint=st.none() | texts)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)


def _json_like(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.lists(inner, max_size=3).map(tuple)
            | st.dictionaries(names, inner, max_size=3)
        ),
        max_leaves=8,
    )


# what a plan shows (PlanValue), what a call sends (SentValue: no ABSENT), plain JSON (metadata)
values = _json_like(scalars | secret_refs | st.just(ABSENT))
mappings = st.dictionaries(names, values, max_size=4)
bodies = st.dictionaries(names, _json_like(scalars | secret_refs), max_size=4)
safe_sensitive = st.sampled_from([SENSITIVE, UNKNOWN, None]) | secret_refs | st.just(ABSENT)


@st.composite
def diffs(draw: st.DrawFn) -> FieldDiff:
    sensitive = draw(st.booleans())
    side = safe_sensitive if sensitive else values
    return FieldDiff(
        path=draw(texts),
        before=draw(side),
        after=draw(side),
        sensitive=sensitive,
        known_after_apply=draw(st.booleans()),
    )


indexes = st.none() | st.integers(0, 60)
edits = st.builds(
    PolicyEdit,
    op=st.sampled_from(["keep", "insert", "remove", "change"]),
    before_index=indexes,
    after_index=indexes,
    before=st.none() | mappings,
    after=st.none() | mappings,
    diffs=st.lists(diffs(), max_size=2).map(tuple),
)
operations = st.sampled_from(sorted(OPERATIONS)).map(get_operation)
calls = st.builds(Call, operation=operations, body=bodies, permission=texts, creates=st.booleans())
positions = st.none() | st.builds(
    Position,
    file=st.text(min_size=1, max_size=12),
    line=st.integers(1, 10**6),
    column=st.integers(1, 500),
)


slugs = st.text(
    st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1, max_size=8
)
CHANGE_FIELDS = dict(
    action=st.sampled_from(list(Action)),
    before=st.none() | mappings,
    after=st.none() | mappings,
    diffs=st.lists(diffs(), max_size=3).map(tuple),
    calls=st.lists(calls, max_size=2).map(tuple),
    reason=st.none() | texts,
    notes=st.lists(texts, max_size=2).map(tuple),
    depends_on=st.lists(texts, max_size=2).map(tuple),
    position=positions,
)
secret_sources = st.builds(SecretSource, kind=st.sampled_from(["fromEnv", "fromFile"]), name=texts)
DETAILS = {
    "policies": st.builds(PolicyListDetail, edits=st.lists(edits, max_size=3).map(tuple)),
    "variable": st.none() | st.builds(VariableDetail, secret_source=secret_sources),
}
"""What only one kind's change has (a plan file's reader refuses it on another kind's)."""


@st.composite
def changes(draw: st.DrawFn) -> Change:
    """A change of any kind, at an address of that kind (a plan file's reader refuses others)."""
    kind = draw(st.sampled_from(kinds.kinds()))
    parts = draw(st.lists(slugs, min_size=kind.depth, max_size=kind.depth))
    address = str(Address.of(kind.name, *parts))
    return draw(
        st.builds(
            Change,
            address=st.just(address),
            kind=st.just(kind.name),
            detail=DETAILS.get(kind.name, st.none()),
            **CHANGE_FIELDS,
        )
    )


notes = st.builds(
    Note,
    severity=st.sampled_from(["info", "warning", "error"]),
    message=texts,
    address=st.none() | texts,
)
plans = st.builds(
    Plan,
    changes=st.lists(changes(), max_size=4).map(tuple),
    notes=st.lists(notes, max_size=2).map(tuple),
    permissions=st.lists(texts, max_size=3).map(tuple),
    manifest_digest=texts,
    live_digest=texts,
    targets=st.lists(texts, max_size=2).map(tuple),
    max_deletes=st.integers(0, 1000),
    metadata=st.dictionaries(names, _json_like(scalars), max_size=3),
)

_settings = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_settings
@given(plan=plans, files=st.lists(texts, max_size=3))
def test_save_then_load_is_the_identity(tmp_path: Path, plan: Plan, files: list[str]) -> None:
    path = tmp_path / "plan.json"
    write_plan(plan, path, manifest_files=files)
    loaded = load_plan(path)
    assert loaded.plan == plan
    assert loaded.manifest_files == tuple(files)
    assert plan_to_dict(loaded.plan) == plan_to_dict(plan)


@_settings
@given(plan=plans, limit=st.integers(120, 5000))
def test_every_renderer_copes_with_any_plan(plan: Plan, limit: int) -> None:
    text = render_text(plan)
    assert "\x1b[" not in text
    assert text.rstrip().splitlines()[-1]  # ends with a summary, permissions or a notice
    markdown = render_markdown(plan, limit=limit)
    assert len(markdown) < limit
    assert markdown.startswith("**")  # the result line comes first, whatever is cut
    data: Any = json.loads(render_json(plan))
    assert len(data["changes"]) == len(plan.changes)
