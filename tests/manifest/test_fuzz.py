"""Property: whatever a manifest contains, loading either succeeds or raises ManifestInvalid.

Mutates the real examples (values replaced by values of other types, keys dropped,
entries duplicated) and feeds arbitrary text, so no rule can crash on a shape the schema
already rejected."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.manifest.validate import ManifestInvalid, load_manifest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DOCUMENTS = [
    yaml.safe_load((EXAMPLES / name).read_text()) for name in ("quickstart.yaml", "image-app.yaml")
]
# the company's shared file (templates, with a parameter and a combined list) with its shop
# (appDefaults extending one) as one document
COMPANY = [
    yaml.safe_load((EXAMPLES / "company" / n).read_text())
    for n in ("00-common.yaml", "10-shop.yaml")
]
DOCUMENTS.append({**COMPANY[0], "projects": {**COMPANY[0]["projects"], **COMPANY[1]["projects"]}})
ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 70000),
    st.floats(width=32),
    st.text(max_size=12),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.sampled_from(["name", "x", "in", "path"]), st.integers(), max_size=2),
)


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths_of(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths_of(value, (*prefix, index))
    return found


def mutate(document: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    document = copy.deepcopy(document)
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "replace":
        parent[last] = value
    elif action == "drop":
        del parent[last]
    elif isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    return document


def load_text(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_manifest([path])
    except ManifestInvalid as invalid:
        assert invalid.problems
        assert all(p.file == str(path) and p.message for p in invalid.problems)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_examples_never_crash(tmp_path: Path, data: st.DataObject) -> None:
    document = data.draw(st.sampled_from(DOCUMENTS))
    for _ in range(data.draw(st.integers(1, 4))):
        paths = paths_of(document)
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["replace", "drop", "duplicate"]))
        document = mutate(document, path, action, data.draw(ODD_VALUES))
    load_text(tmp_path, yaml.safe_dump(document, sort_keys=False))


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!<>|'\"#\n \t1.~@%")), max_size=80))
def test_arbitrary_yaml_like_text_never_crashes(tmp_path: Path, text: str) -> None:
    load_text(tmp_path, "version: 1\n" + text)
