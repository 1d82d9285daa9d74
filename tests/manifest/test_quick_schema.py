"""The schema's quick check (jsonschema-rs) says "valid" only where jsonschema would.

`schema_problems` answers [] when the quick check accepts a document and asks jsonschema
otherwise, so it must equal `full_schema_problems` (jsonschema alone) on every document:
a hypothesis property over valid manifests and near-valid mutations of every field the
schema has, each difference between the two libraries on its own, and the CLI's output
over the invalid and warning corpus with the quick check and without it.
"""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from reconciler.manifest import schema
from reconciler.manifest.load import load_files
from reconciler.manifest.model import Position
from reconciler.manifest.quick_schema import QuickCheck, renamed_keywords
from reconciler.manifest.schema import full_schema_problems, schema_problems
from reconciler.manifest.yaml_nodes import FloatAsWritten, NonDecimalNumber, Yaml11Boolean
from tests.fixtures.cli import run_cli
from tests.fixtures.manifests import generated_workspace
from tests.manifest.test_fuzz import paths_of

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(
    [
        *(ROOT / "tests/manifest/invalid").glob("*.yaml"),
        *(ROOT / "tests/manifest/warnings").glob("*.yaml"),
    ]
)
HERE = Position("m.yaml", 1, 1)


def locate(path: Any, of_key: bool) -> Position:
    return HERE


def base_documents(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("generated")
    (directory / "workspace.yaml").write_text(generated_workspace(3, 2), encoding="utf-8")
    paths = [ROOT / "examples/quickstart.yaml", ROOT / "examples/image-app.yaml"]
    paths += sorted((ROOT / "examples/company").glob("*.yaml"))
    return [loaded.data for loaded in load_files([*paths, directory / "workspace.yaml"])]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return base_documents(tmp_path_factory)


def test_the_quick_check_accepts_every_valid_base_document(bases: list[dict[str, Any]]) -> None:
    """Else the property below would only ever compare jsonschema with itself."""
    assert all(schema._quick_check().accepts(document) for document in bases)


# --- near-valid values, read from the schema at the place being mutated -------------------


def schema_at(document: Any, path: tuple[Any, ...]) -> dict[str, Any]:
    """The (inlined) subschema that applies at `path` of `document`, {} where none is known."""
    node: Any = schema._validator().schema
    value = document
    for part in path:
        node = _branch_for(node, value)
        if isinstance(value, dict):
            node = _property_schema(node, part)
        else:
            node = node.get("items", {}) if isinstance(node, dict) else {}
        value = value[part]
    return _branch_for(node, value) if isinstance(node, dict) else {}


def _branch_for(node: Any, value: Any) -> Any:
    """Of an anyOf, the branch whose type fits the value (or the first one)."""
    if not isinstance(node, dict) or "anyOf" not in node:
        return node
    wanted = "object" if isinstance(value, dict) else "array" if isinstance(value, list) else None
    branches = node["anyOf"]
    return next((b for b in branches if b.get("type") == wanted), branches[0])


def _property_schema(node: Any, key: Any) -> Any:
    if not isinstance(node, dict):
        return {}
    if key in node.get("properties", {}):
        return node["properties"][key]
    for pattern, sub in node.get("patternProperties", {}).items():
        if re.search(pattern, key):
            return sub
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, dict) else {}


def edge_values(value: Any, sub: dict[str, Any]) -> list[Any]:
    """Values on and just past each bound the schema sets at this place."""
    found: list[Any] = []
    step = sub.get("multipleOf", 1)
    for name in ("minimum", "maximum"):
        if name in sub:
            bound = sub[name]
            found += [bound, bound - step, bound + step, float(bound), bound + step / 2]
            found += [math.nextafter(bound, math.inf), math.nextafter(bound, -math.inf)]
    if "multipleOf" in sub:
        found += [step, 3 * step, math.nextafter(3 * step, math.inf), 0.1 * 3 * step, 10**30]
    for name in ("minLength", "maxLength"):
        if name in sub:
            found += ["a" * sub[name], "a" * (sub[name] + 1), "a" * max(sub[name] - 1, 0)]
    if "pattern" in sub and isinstance(value, str):
        found += [value + "\n", f" {value} ", value.upper(), value + "\x1c", value[:-1]]
    for member in sub.get("enum", ()):
        found += [member, str(member).lower(), str(member) + "\n"]
    if "const" in sub:
        found += [sub["const"], float(sub["const"]), str(sub["const"]), sub["const"] + 1]
    if isinstance(value, list) and value:
        for name in ("minItems", "maxItems"):
            if name in sub:
                found += [value[:1] * sub[name], value[:1] * (sub[name] + 1)]
        found += [value[:1] * max(sub.get("minItems", 1) - 1, 0), [*value, value[0]]]
    return found


def odd_values(value: Any) -> list[Any]:
    """Values of other kinds, and the forms YAML 1.1 reads differently."""
    text = value if isinstance(value, str) else "web"
    return [
        None, {}, [], True, False, 0, -1, 1.0, 2.5, 0.3, 2**64 + 1, 1e300, "1", "",
        text + "é", "\u3000" + text, text + "\ud800", text + "$", text * 2, text + "/",
        Yaml11Boolean("on", True), NonDecimalNumber("010", 8), FloatAsWritten(1.1, "1.10"),
    ]  # fmt: skip


def near_keys(key: str) -> list[str]:
    return [key.upper(), key + "\n", "-" + key, "a" * 64, "a" * 63, "", key + "_1", "x-" + key]


ANY_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


def places(document: Any) -> list[tuple[Any, ...]]:
    """Every path in the document, the document itself (the empty path) first."""
    return [(), *paths_of(document)]


def mutate_once(document: Any, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(places(document)), label="path")
    sub = schema_at(document, path)
    value = document
    for part in path:
        value = value[part]
    if isinstance(value, dict) and data.draw(st.booleans(), label="change a key"):
        _mutate_keys(value, sub, data)
        return
    if not path:
        return
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    edges = edge_values(value, sub) + [e for e in sub.get("examples", ()) if e != value]
    choices = [st.sampled_from(odd_values(value)), ANY_SCALAR]
    if edges:
        choices = [st.sampled_from(edges)] * 3 + choices
    replacement = data.draw(st.one_of(choices), label="value")
    parent[path[-1]] = copy.deepcopy(replacement)


def _mutate_keys(mapping: dict[str, Any], sub: dict[str, Any], data: st.DataObject) -> None:
    missing = [k for k in sub.get("properties", {}) if k not in mapping]
    actions = ["unknown key", "x- key"] + (["drop"] if mapping else [])
    actions += (["rename"] if mapping else []) + (["add missing"] if missing else [])
    action = data.draw(st.sampled_from(actions), label="key action")
    if action == "add missing":
        key = data.draw(st.sampled_from(missing), label="added")
        field = sub["properties"][key]
        candidates = [*field.get("examples", ()), *edge_values(None, field), *odd_values(None)]
        mapping[key] = copy.deepcopy(data.draw(st.sampled_from(candidates), label="its value"))
    elif action == "unknown key":
        mapping["extra"] = 1
    elif action == "x- key":
        mapping["x-note"] = data.draw(ANY_SCALAR)
    else:
        key = data.draw(st.sampled_from(sorted(mapping)), label="key")
        value = mapping.pop(key)
        if action == "rename":
            mapping[data.draw(st.sampled_from(near_keys(key)), label="new key")] = value


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_quick_check_and_jsonschema_agree_on_near_valid_manifests(
    bases: list[dict[str, Any]], data: st.DataObject
) -> None:
    document = copy.deepcopy(data.draw(st.sampled_from(bases), label="base"))
    for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]), label="mutations")):
        mutate_once(document, data)
    assert schema_problems(document, locate) == full_schema_problems(document, locate)


def single_mutations(bases: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every field's edge values, one change at a time: each place of the schema the base
    documents reach (in the smallest document that reaches it), with each value on or past
    its bounds, each missing property added, and each key renamed or dropped."""
    seen: set[int] = set()
    found: list[tuple[str, dict[str, Any]]] = []
    for document in sorted(bases, key=lambda d: len(places(d))):
        for path in places(document):
            sub = schema_at(document, path)
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            value = _at(document, path)
            changes = [] if not path else [(path, v) for v in edge_values(value, sub)]
            if isinstance(value, dict):
                changes += _key_changes(value, sub, path)
            found += [(f"{path} = {v!r}", _changed(document, p, v)) for p, v in changes]
    return found


def _key_changes(
    mapping: dict[str, Any], sub: dict[str, Any], path: tuple[Any, ...]
) -> list[tuple[tuple[Any, ...], Any]]:
    changes: list[tuple[tuple[Any, ...], Any]] = []
    for key, field in sub.get("properties", {}).items():
        if key not in mapping and isinstance(field, dict):
            values = [*field.get("examples", ())[:1], *edge_values(None, field), None]
            changes += [((*path, key), v) for v in values]
    for key in list(mapping)[:1]:
        renamed = [
            {k if k != key else new: v for k, v in mapping.items()} for new in near_keys(key)
        ]
        changes += [(path, m) for m in renamed]
        changes.append((path, {k: v for k, v in mapping.items() if k != key}))
    return changes


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


def _changed(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    if not path:
        return dict(value)
    _at(changed, path[:-1])[path[-1]] = copy.deepcopy(value)
    return changed


def test_quick_check_and_jsonschema_agree_on_each_fields_edge_values(
    bases: list[dict[str, Any]],
) -> None:
    mutations = single_mutations(bases)
    differ = [
        name
        for name, document in mutations
        if schema_problems(document, locate) != full_schema_problems(document, locate)
    ]
    assert not differ, differ[:5]
    assert len(mutations) > 1000


# --- each difference between the two libraries, on its own --------------------------------


def app_document(**app: Any) -> dict[str, Any]:
    return {"version": 1, "projects": {"shop": {"apps": {"web": app}}}}


def agree(document: dict[str, Any]) -> list[Any]:
    problems = full_schema_problems(document, locate)
    assert schema_problems(document, locate) == problems
    return problems


def test_formats_are_not_asserted_by_either_checker() -> None:
    """The schema's host pattern forgives spaces, letter case and the root's dot, which
    jsonschema-rs's own `hostname` format refuses: it is not asked to check formats."""
    host = " Shop.Example.COM. "
    assert not jsonschema_rs.validator_for({"format": "hostname"}, validate_formats=True).is_valid(
        host
    )
    production = {"domains": [host]}
    document = app_document(git={"repository": "acme/web"}, environments={"production": production})
    assert schema._quick_check().accepts(document)
    assert agree(document) == []


def test_a_final_dollar_is_the_end_of_the_text_in_both() -> None:
    """Python's `$` also matches before a final newline; schema.py reads it as ECMA-262
    does, and the quick check runs schema.py's own pattern check."""
    repository = "acme/web\n"
    assert re.search(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", repository)
    document = app_document(git={"repository": repository})
    assert not schema._quick_check().accepts(document)
    assert [p.path for p in agree(document)] == ["projects.shop.apps.web.git.repository"]


def test_patterns_are_read_by_pythons_re_not_jsonschema_rs_regex_engine() -> None:
    """`\\S` matches U+001C in jsonschema-rs's engine but not in Python's `re`: a schema
    pattern using it would let the quick check pass what schema.py refuses."""
    pattern = {"pattern": "^\\S+$"}
    assert jsonschema_rs.validator_for(pattern).is_valid("a\x1cb")
    manifest_validator = type(schema._validator())
    assert not manifest_validator(pattern).is_valid("a\x1cb")
    check = QuickCheck(pattern, {"pattern": schema.pattern_fails})
    assert not check.accepts("a\x1cb")
    assert check.accepts("ab")


def test_multiple_of_is_jsonschemas_exact_float_division() -> None:
    """jsonschema-rs forgives the rounding of 0.3 / 0.1, jsonschema does not (vCpus' step,
    0.25, divides exactly in both; the next step the schema gets may not)."""
    step = {"multipleOf": 0.1}
    assert jsonschema_rs.validator_for(step).is_valid(0.3)
    assert not Draft202012Validator(step).is_valid(0.3)
    check = QuickCheck(step, {"multipleOf": schema.multiple_of_fails})
    assert not check.accepts(0.3)
    # 0.5 is not exactly a multiple of the binary 0.1, though jsonschema's rounded quotient
    # is 5.0: the quick check cannot tell, and jsonschema's verdict (valid) stands
    assert not check.accepts(0.5)
    assert Draft202012Validator(step).is_valid(0.5)
    quarter = {"multipleOf": 0.25}
    assert QuickCheck(quarter, {"multipleOf": schema.multiple_of_fails}).accepts(0.75)
    v_cpus = math.nextafter(0.75, 1)
    runtime = {"runtime": {"vCpus": v_cpus}}
    document = app_document(git={"repository": "acme/web"}, environments={"production": runtime})
    assert not schema._quick_check().accepts(document)
    assert [p.message for p in agree(document)] == [
        f"{v_cpus!r} is not a multiple of 0.25; the nearest are 0.75 and 1"
    ]


_NUMBERS = st.one_of(
    st.integers(-(10**20), 10**20),
    st.integers(2**53 - 4, 2**70).map(lambda n: 3 * n),  # ints a float holds only rounded
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-1000, 1000).map(lambda n: n * 0.25),
    st.integers(-1000, 1000).map(lambda n: n * 0.1),
)
_STEPS = st.one_of(
    st.sampled_from([0.25, 256, 512, 0.1, 0.5, 3, 3.0, 1e-3]),
    st.integers(1, 10**6),
    st.floats(min_value=1e-6, max_value=1e6),
)


@settings(max_examples=400, deadline=None)
@given(instance=_NUMBERS, step=_STEPS)
def test_multiple_of_never_passes_what_jsonschema_fails(instance: Any, step: Any) -> None:
    """The quick check's own multipleOf is never kinder than jsonschema's; for the steps
    the schema has (binary fractions and integers) the two agree exactly."""
    python_fails = not Draft202012Validator({"multipleOf": step}).is_valid(instance)
    if python_fails:
        assert schema.multiple_of_fails(step, instance)
    if step in (0.25, 256, 512) and abs(instance) <= 2**53:  # integers a float holds exactly
        assert schema.multiple_of_fails(step, instance) == python_fails


@given(
    pattern=st.sampled_from([r"^[a-z]+", r"\S+", r"^acme/[a-z.-]+", r"[0-9]"]),
    instance=st.one_of(st.text(max_size=12), st.integers(), st.none()),
)
def test_the_quick_checks_pattern_reads_as_jsonschema_does(pattern: str, instance: Any) -> None:
    """Against jsonschema's own pattern keyword (patterns without a final `$`, where the
    manifest's reading and Python's agree): strings are searched, anything else passes."""
    stock = Draft202012Validator({"pattern": pattern})
    assert schema.pattern_fails(pattern, instance) == (not stock.is_valid(instance))


def test_the_manifests_quick_check_delegates_both() -> None:
    """The schema's patterns and steps read the same in both libraries today (the tests
    above would show it otherwise); delegating them keeps it so when one changes."""
    assert schema._quick_check().delegated == {"pattern", "multipleOf"}


def test_keywords_neither_library_knows_constrain_nothing() -> None:
    annotated = {"type": "string", "errorMessage": "x", "patternErrorMessage": "y"}
    check = QuickCheck(annotated, {})
    assert check.accepts("anything")
    assert not check.accepts(1)


@pytest.mark.parametrize(
    "value",
    [
        NonDecimalNumber("0644", 420),
        Yaml11Boolean("yes", True),
        FloatAsWritten(1.1, "1.10"),
    ],
    ids=["non-decimal", "yaml11-boolean", "float-as-written"],
)
def test_values_jsonschema_rs_cannot_read_leave_the_verdict_to_jsonschema(value: Any) -> None:
    """jsonschema-rs reads only what it checks (an `x-` key holds anything); a value it must
    check but cannot read (an app's name here) makes the verdict "cannot tell"."""
    assert agree({"version": 1, "x-anything": value}) == []
    document = app_document(git={"repository": "acme/web"}, name=value)
    assert not schema._quick_check().accepts(document)
    assert agree(document)


def test_a_lone_surrogate_gets_the_same_verdict_from_both() -> None:
    """A YAML escape (`"\\ud800"`) can put one in a string, which UTF-8 cannot encode."""
    for document in (
        app_document(git={"repository": "acme/web"}, name="\ud800"),
        app_document(git={"repository": "acme/\ud800"}),
    ):
        agree(document)


def test_only_keywords_in_schema_places_are_renamed() -> None:
    """A property named like a delegated keyword, or an example holding one, stays as is."""
    source = {
        "properties": {"pattern": {"type": "string", "pattern": "^a"}},
        "examples": [{"pattern": "b"}],
        "anyOf": [{"multipleOf": 2}],
    }
    assert renamed_keywords(source, frozenset({"pattern", "multipleOf"})) == {
        "properties": {"pattern": {"type": "string", "x-checked-by-python-pattern": "^a"}},
        "examples": [{"pattern": "b"}],
        "anyOf": [{"x-checked-by-python-multipleOf": 2}],
    }


# --- the CLI, with and without the quick check ---------------------------------------------


class _NeverSure:
    """Stands for `_quick_check(definition=None)`: never sure, so jsonschema decides."""

    def __init__(self, definition: str | None = None) -> None:
        del definition

    def accepts(self, data: Any) -> bool:
        return False


def test_cli_output_is_the_same_without_the_quick_check(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = [[str(p)] for p in CORPUS] + [[str(ROOT / "examples")]]
    formats = ([], ["--format", "json"], ["--strict"])
    quick = [run_cli(["validate", *f, "-f", *paths]) for paths in runs for f in formats]
    monkeypatch.setattr(schema, "_quick_check", _NeverSure)
    full = [run_cli(["validate", *f, "-f", *paths]) for paths in runs for f in formats]
    assert quick == full
    assert len(CORPUS) > 100


# --- jsonschema is loaded only for a document the quick check does not accept --------------


def _modules_after_loading(path: Path) -> str:
    code = (
        "import sys\n"
        "from reconciler.manifest.validate import load_manifest\n"
        "from reconciler.manifest.problems import ManifestInvalid\n"
        "try:\n"
        f"    load_manifest([{str(path)!r}])\n"
        "except ManifestInvalid:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jsonschema'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.strip()


def test_a_valid_manifest_loads_without_importing_jsonschema() -> None:
    """jsonschema (with attrs, referencing and its specifications) is a sixth of a plan's
    imports; the quick check's two delegated keywords are plain predicates."""
    assert _modules_after_loading(ROOT / "examples/quickstart.yaml") == "[]"


def test_an_invalid_manifest_is_worded_by_jsonschema() -> None:
    invalid = next(p for p in CORPUS if "invalid" in p.parts)
    assert "'jsonschema'" in _modules_after_loading(invalid)
