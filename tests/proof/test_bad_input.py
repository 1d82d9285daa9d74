"""Proof: every command fed bad input answers a clear error and exit 1/2, never a traceback or
an "internal error" line, and never writes to the platform.

Inputs: a corpus of malformed manifests (syntax, encodings, nesting, aliases, huge files),
hypothesis mutations of the shipped examples (byte flips, line deletions and duplicates,
indentation shifts), a wrong-typed value at every property path of
schemas/manifest.schema.json, broken saved plans (truncated, binary, edited, wrong kind or
version, wrong shapes under a valid checksum) and bad flags and environment.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.plan.planfile import checksum_of
from tests.fixtures.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCHEMA = json.loads((ROOT / "schemas" / "manifest.schema.json").read_text())
QUICKSTART = (EXAMPLES / "quickstart.yaml").read_text()
IMAGE_APP = (EXAMPLES / "image-app.yaml").read_text()
READ_PREFIXES = ("get", "list")
MAX_FILE_BYTES = 10 * 1024 * 1024

Cli = Callable[..., CliResult]


# ---- the assertions every case shares --------------------------------------------------------


def assert_clean_failure(
    result: CliResult, *, codes: tuple[int, ...] = (1, 2), case: str = ""
) -> None:
    """A user-facing error: the expected exit code, some text, no traceback, no crash line."""
    text = result.output
    assert result.exit_code in codes, f"{case}: exit {result.exit_code}:\n{text}"
    assert "Traceback" not in text, f"{case}: {text}"
    assert "internal error" not in text.lower(), f"{case}: {text}"
    assert text.strip(), f"{case}: an error must say something"


def writes(emulator: Any) -> list[str]:
    return [
        r["operation"]
        for r in emulator.requests()
        if not r["operation"].split(".")[-1].startswith(READ_PREFIXES)
    ]


def manifest_commands(path: Path) -> list[tuple[str, ...]]:
    """Every command that reads manifests, as it would run in CI."""
    return [
        ("validate", str(path)),
        ("plan", "-f", str(path)),
        ("plan", "-f", str(path), "--format", "json"),
        ("apply", "-f", str(path), "--auto-approve"),
        ("status", "-f", str(path)),
    ]


# ---- malformed manifests ---------------------------------------------------------------------


def _aliases_bomb() -> str:
    lines = ["version: 1", 'a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 9):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("projects: {shop: {name: *a8}}")
    return "\n".join(lines) + "\n"


MALFORMED: dict[str, bytes] = {
    "empty": b"",
    "only-comment": b"# nothing here\n",
    "null-document": b"null\n",
    "scalar-document": b"just a string\n",
    "list-document": b"- version: 1\n- projects: {}\n",
    "wrong-version": b"version: 2\nprojects: {}\n",
    "version-as-text": b"version: 'one'\nprojects: {}\n",
    "unclosed-flow": b"version: 1\nprojects: {shop: {name: Shop}\n",
    "unclosed-quote": b'version: 1\nprojects:\n  shop:\n    name: "Shop\n',
    "tab-indentation": b"version: 1\nprojects:\n\tshop:\n\t\tname: Shop\n",
    "bad-indentation": b"version: 1\nprojects:\n  shop:\n      name: Shop\n    apps: {}\n",
    "duplicate-keys": b"version: 1\nversion: 1\nprojects: {}\n",
    "duplicate-project": b"version: 1\nprojects:\n  shop: {name: A}\n  shop: {name: B}\n",
    "unknown-top-level": b"version: 1\nprojcts: {}\n",
    "non-utf8": b"version: 1\nprojects:\n  shop: {name: \xff\xfe}\n",
    "utf16-bom": "version: 1\nprojects: {}\n".encode("utf-16"),
    "nul-bytes": b"version: 1\x00\nprojects: {}\n",
    "binary": bytes(range(256)) * 8,
    "python-tag": b"version: !!python/object/apply:os.system ['true']\nprojects: {}\n",
    "custom-tag": b"version: 1\nprojects: !include other.yaml\n",
    "multi-document": b"version: 1\nprojects: {}\n---\nversion: 1\nprojects: {}\n",
    "aliases-bomb": _aliases_bomb().encode(),
    "merge-key-junk": b"version: 1\nprojects:\n  shop:\n    <<: [1, 2]\n    name: Shop\n",
    "deep-flow-lists": b"version: 1\nprojects: " + b"[" * 10_000 + b"]" * 10_000 + b"\n",
    "deep-flow-maps": b"version: 1\nprojects: " + b"{a: " * 10_000 + b"1" + b"}" * 10_000 + b"\n",
    "deep-block-maps": (
        "version: 1\nprojects:\n"
        + "".join(f"{' ' * (2 + i)}k{i}:\n" for i in range(3_000))
        + " " * 3_002
        + "v: 1\n"
    ).encode(),
    "huge-int": b"version: 1" + b"0" * 5_000 + b"\nprojects: {}\n",
    "nan-and-inf": (
        b"version: 1\nprojects:\n  shop:\n    name: Shop\n    apps:\n      web:\n        name: W\n"
        b"        git: {repository: a/b}\n        environments:\n          production:\n"
        b"            runtime: {vCpus: .nan, memoryMib: .inf}\n"
    ),
    "very-long-line": b"version: 1\nprojects:\n  shop: {name: " + b"x" * 2_000_000 + b"}\n",
}


@pytest.fixture
def bad_manifest(tmp_path: Path) -> Callable[[bytes], Path]:
    def write(content: bytes, name: str = "platform.yaml") -> Path:
        path = tmp_path / name
        path.write_bytes(content)
        return path

    return write


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_manifest_is_a_clear_error_for_every_command(
    name: str, bad_manifest: Callable[[bytes], Path], cli: Cli, emulator: Any
) -> None:
    path = bad_manifest(MALFORMED[name])
    for command in manifest_commands(path):
        result = cli(*command)
        assert_clean_failure(result, codes=(1,))
        assert path.name in result.output, f"{command}: the message must name the file"
    assert emulator.requests() == [], "a manifest that does not load must not reach the platform"


def test_manifest_over_the_size_limit_is_refused_before_parsing(
    bad_manifest: Callable[[bytes], Path], cli: Cli, emulator: Any
) -> None:
    padding = b"# " + b"x" * 1022 + b"\n"
    path = bad_manifest(b"version: 1\nprojects: {}\n" + padding * (MAX_FILE_BYTES // 1024 + 1))
    for command in manifest_commands(path):
        result = cli(*command)
        assert_clean_failure(result, codes=(1,))
        assert "MiB" in result.output and path.name in result.output
    assert emulator.requests() == []


@pytest.mark.parametrize(
    "layout",
    ["missing-file", "empty-dir", "dir-of-non-yaml", "file-is-dir-named-yaml", "unreadable"],
)
def test_bad_manifest_paths(layout: str, tmp_path: Path, cli: Cli, emulator: Any) -> None:
    target = tmp_path / "platform"
    if layout == "missing-file":
        target = tmp_path / "missing.yaml"
    elif layout == "empty-dir":
        target.mkdir()
    elif layout == "dir-of-non-yaml":
        target.mkdir()
        (target / "notes.txt").write_text("hello")
    elif layout == "file-is-dir-named-yaml":
        target = tmp_path / "platform.yaml"
        target.mkdir()
    elif layout == "unreadable":
        target = tmp_path / "platform.yaml"
        target.write_text(QUICKSTART)
        target.chmod(0)
        try:
            target.read_bytes()
        except PermissionError:
            pass
        else:  # root reads everything; nothing to prove here
            target.chmod(0o600)
            pytest.skip("running as root: the file stays readable")
    for command in manifest_commands(target):
        assert_clean_failure(cli(*command), codes=(1, 2))
    assert emulator.requests() == []


# ---- random mutations of the shipped examples -------------------------------------------------


def _mutate(text: str, data: st.DataObject) -> str:
    lines = text.splitlines(keepends=True)
    kind = data.draw(st.sampled_from(["flip", "delete", "duplicate", "indent", "swap-chars"]))
    if kind == "flip":
        raw = bytearray(text.encode())
        for _ in range(data.draw(st.integers(1, 4))):
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        return raw.decode("utf-8", "surrogateescape")
    index = data.draw(st.integers(0, len(lines) - 1))
    if kind == "delete":
        del lines[index]
    elif kind == "duplicate":
        lines.insert(index, lines[index])
    elif kind == "indent":
        shift = data.draw(st.sampled_from([-4, -2, -1, 1, 2, 3]))
        line = lines[index]
        lines[index] = " " * shift + line if shift > 0 else line[min(-shift, len(line)) :]
    else:
        line = lines[index]
        chars = data.draw(st.sampled_from([":", "-", "{", "}", "[", "]", "'", '"', "#", "&", "*"]))
        at = data.draw(st.integers(0, max(len(line) - 1, 0)))
        lines[index] = line[:at] + chars + line[at + 1 :]
    return "".join(lines)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=st.sampled_from([QUICKSTART, IMAGE_APP]), data=st.data())
def test_mutated_examples_fail_cleanly_and_never_write(
    source: str, data: st.DataObject, tmp_path: Path, cli: Cli, emulator: Any
) -> None:
    emulator.reset()
    path = tmp_path / "mutated.yaml"
    path.write_bytes(_mutate(source, data).encode("utf-8", "surrogateescape"))
    env = {"STOREFRONT_SESSION_SECRET": "sentinel-session-secret"}
    checked = cli("validate", str(path))
    assert "Traceback" not in checked.output and "internal error" not in checked.output.lower()
    if checked.exit_code == 0:
        return  # still a valid manifest: nothing bad to prove about it
    assert_clean_failure(checked, codes=(1,))
    for command in manifest_commands(path)[1:]:
        assert_clean_failure(cli(*command, env=env), codes=(1,))
    assert writes(emulator) == []


# ---- a wrong type at every path of the manifest schema ---------------------------------------

RICH = yaml.safe_load(IMAGE_APP)
# Concrete names for the schema's patternProperties (project, app, variable keys...).
PATTERN_KEYS = ["storefront", "gateway", "UPSTREAM_URL"]
WRONG_VALUES: list[Any] = [[1, 2], {"zz": 1}, "text", 12345, True, 1.5, None]


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:  # `#/$defs/region`, or deeper: `#/$defs/settings/properties/build`
        node: Any = SCHEMA
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
        schema = node
    return schema


def schema_paths(
    schema: dict[str, Any], prefix: tuple[Any, ...] = (), depth: int = 0
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path, subschema) for every property, item and pattern property reachable."""
    schema = _resolve(schema)
    if depth > 12:
        return
    for option in schema.get("oneOf", []) + schema.get("anyOf", []):
        yield from schema_paths(option, prefix, depth + 1)
    for name, sub in schema.get("properties", {}).items():
        yield (*prefix, name), _resolve(sub)
        yield from schema_paths(sub, (*prefix, name), depth + 1)
    mapped = list(schema.get("patternProperties", {}).values())
    if isinstance(schema.get("additionalProperties"), dict):
        mapped.append(schema["additionalProperties"])
    for sub in mapped:
        yield (*prefix, "*"), _resolve(sub)
        yield from schema_paths(sub, (*prefix, "*"), depth + 1)
    if isinstance(schema.get("items"), dict):
        yield (*prefix, 0), _resolve(schema["items"])
        yield from schema_paths(schema["items"], (*prefix, 0), depth + 1)


def _concrete(path: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The path with '*' replaced by a key that exists in RICH (or None when none fits)."""
    node: Any = RICH
    out: list[Any] = []
    for part in path:
        if part == "*":
            if not isinstance(node, dict):
                return None
            part = next((k for k in PATTERN_KEYS if k in node), None) or next(iter(node), None)
            if part is None:
                return None
        out.append(part)
        if isinstance(node, dict):
            node = node.get(part, {})
        elif isinstance(node, list):
            node = node[part] if isinstance(part, int) and part < len(node) else {}
        else:
            node = {}
    return tuple(out)


def _set(document: Any, path: tuple[Any, ...], value: Any) -> Any | None:
    document = copy.deepcopy(document)
    node = document
    for part in path[:-1]:
        if isinstance(node, dict):
            if not isinstance(node.get(part), dict | list):
                node[part] = [{}] if isinstance(part, int) else {}
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int):
            if part >= len(node):
                node.append({})
            node = node[part]
        else:
            return None
    last = path[-1]
    if isinstance(node, dict) and not isinstance(last, int):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int):
        if last >= len(node):
            node.append(value)
        else:
            node[last] = value
    else:
        return None
    return document


def _wrong_value(subschema: dict[str, Any]) -> Any | None:
    resolver = jsonschema.validators.validator_for(SCHEMA)
    checker = resolver({**subschema, "$defs": SCHEMA["$defs"]})
    return next((v for v in WRONG_VALUES if not checker.is_valid(v)), None)


def _type_swap_cases() -> list[tuple[str, str]]:
    cases: dict[str, str] = {}
    for path, subschema in schema_paths(SCHEMA):
        concrete = _concrete(path)
        wrong = _wrong_value(subschema)
        if concrete is None or wrong is None:
            continue
        document = _set(RICH, concrete, wrong)
        if document is None:
            continue
        label = "/".join(str(p) for p in path)
        cases.setdefault(label, yaml.safe_dump(document, sort_keys=False))
    return sorted(cases.items())


TYPE_SWAPS = _type_swap_cases()


def test_type_swaps_cover_the_whole_schema() -> None:
    labels = {label for label, _ in TYPE_SWAPS}
    # a sample of deep paths, so the walk cannot silently stop at the top level
    for expected in (
        "version",
        "projects/*/apps/*/environments/production/runtime/healthcheck/intervalSeconds",
        "projects/*/apps/*/environments/production/policies/0/match/0/remoteIp/notIn",
        "projects/*/apps/*/environments/production/regions/0/replicas/min",
    ):
        assert any(label.startswith(expected) for label in labels), expected
    assert len(TYPE_SWAPS) > 80


@pytest.mark.parametrize(("label", "text"), TYPE_SWAPS, ids=[label for label, _ in TYPE_SWAPS])
def test_wrong_type_at_every_schema_path(
    label: str, text: str, tmp_path: Path, cli: Cli, emulator: Any
) -> None:
    path = tmp_path / "typed.yaml"
    path.write_text(text, encoding="utf-8")
    env = {"STOREFRONT_SESSION_SECRET": "sentinel-session-secret"}
    checked = cli("validate", str(path))
    assert_clean_failure(checked, codes=(1,))
    # file:line:column of the offending value
    assert re.search(rf"{re.escape(path.name)}:\d+:\d+:", checked.output), checked.output
    assert_clean_failure(cli("apply", "-f", str(path), "--auto-approve", env=env), codes=(1,))
    assert emulator.requests() == []


# ---- broken saved plans ----------------------------------------------------------------------


@pytest.fixture
def saved_plan(tmp_path: Path, cli: Cli, emulator: Any) -> tuple[Path, dict[str, Any]]:
    """A real plan (creates the quickstart from nothing) saved with `plan --out`."""
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    out = tmp_path / "plan.json"
    result = cli("plan", "-f", str(manifest), "--out", str(out))
    assert result.exit_code == 0, result.output
    emulator.reset()
    return out, json.loads(out.read_text())


def _resealed(document: dict[str, Any]) -> bytes:
    """The document with a fresh checksum, so checks past the checksum are exercised."""
    document = {k: v for k, v in document.items() if k != "checksum"}
    document["checksum"] = checksum_of(document)
    return json.dumps(document).encode()


def _broken_plans(original: bytes, document: dict[str, Any]) -> dict[str, bytes]:
    edited = dict(document, summary={"create": 0})
    return {
        "empty": b"",
        "truncated-half": original[: len(original) // 2],
        "truncated-one-byte": original[:-2],
        "binary": bytes(range(256)) * 4,
        "not-utf8-json": original.replace(b'"', b'"\xff', 1),
        "json-array": b"[]",
        "json-string": b'"plan"',
        "json-null": b"null",
        "edited-without-checksum": json.dumps(edited).encode(),
        "checksum-wrong-type": json.dumps(dict(document, checksum=12)).encode(),
        "kind-missing": _resealed({k: v for k, v in document.items() if k != "kind"}),
        "kind-wrong": _resealed(dict(document, kind="terraform-plan")),
        "version-future": _resealed(dict(document, format_version=99)),
        "version-next-major": _resealed(dict(document, format_version="2.0")),
        "version-number": _resealed(dict(document, format_version=1.0)),
        "version-empty": _resealed(dict(document, format_version="")),
        "changes-not-a-list": _resealed(dict(document, changes={"a": 1})),
        "manifest-files-wrong": _resealed(dict(document, manifest_files=[1, None])),
        "manifest-files-missing": _resealed(dict(document, manifest_files=["/nonexistent.yaml"])),
        "deep-nesting": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        "huge-number": b'{"format_version": 1' + b"0" * 10_000 + b"}",
        "nan": original.replace(b"{", b'{"x": NaN, ', 1),
    }


def _shape_mutations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The plan with one value replaced by a wrong type, at every path inside it."""

    def walk(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        if isinstance(node, dict):
            for key, value in node.items():
                yield (*path, key)
                yield from walk(value, (*path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node[:2]):
                yield (*path, index)
                yield from walk(value, (*path, index))

    for path in walk(document, ()):
        # call bodies are data the plan sends; see test_an_edited_call_body_is_not_applied
        if path[0] in ("checksum", "kind") or "body" in path:
            continue
        current: Any = document
        for part in path:
            current = current[part]
        wrong = next(v for v in ([7], {"x": 7}, "text", 7, None) if type(v) is not type(current))
        mutated = copy.deepcopy(document)
        node = mutated
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = wrong
        yield "/".join(map(str, path)), mutated


def test_broken_plan_files_are_refused_without_a_write(
    saved_plan: tuple[Path, dict[str, Any]], cli: Cli, emulator: Any
) -> None:
    path, document = saved_plan
    original = path.read_bytes()
    for name, content in _broken_plans(original, document).items():
        path.write_bytes(content)
        result = cli("apply", str(path))
        assert_clean_failure(result, codes=(1,), case=name)
        named = "/nonexistent.yaml" if name == "manifest-files-missing" else path.name
        assert named in result.output, f"{name}: the message must name the file at fault"
    assert writes(emulator) == []


def test_wrong_shapes_anywhere_in_a_checksummed_plan_are_refused(
    saved_plan: tuple[Path, dict[str, Any]], cli: Cli, emulator: Any
) -> None:
    path, document = saved_plan
    cases = list(_shape_mutations(document))
    assert len(cases) > 30
    crashed: list[str] = []
    for label, mutated in cases:
        emulator.reset()
        path.write_bytes(_resealed(mutated))
        result = cli("apply", str(path))
        text = result.output
        if "Traceback" in text or "internal error" in text.lower():
            crashed.append(f"{label}: {text.strip().splitlines()[-1]}")
            continue
        if result.exit_code == 0:
            continue  # a cosmetic field (a description) that apply re-derives: harmless
        assert result.exit_code == 1, f"{label}: exit {result.exit_code}\n{text}"
        assert writes(emulator) == [], f"{label}: refused, yet it wrote:\n{text}"
    assert crashed == []


def test_an_edited_call_body_is_not_applied(
    saved_plan: tuple[Path, dict[str, Any]], cli: Cli, emulator: Any
) -> None:
    path, document = saved_plan
    edited = copy.deepcopy(document)
    create = next(
        call
        for change in edited["changes"]
        for call in change["calls"]
        if call["operation"] == "projects.createProject"
    )
    create["body"]["name"] = "Not what was reviewed"
    path.write_bytes(_resealed(edited))
    result = cli("apply", str(path))
    assert_clean_failure(result, codes=(1,))
    assert writes(emulator) == []


def test_plan_file_that_is_a_directory_or_missing(tmp_path: Path, cli: Cli, emulator: Any) -> None:
    assert_clean_failure(cli("apply", str(tmp_path)), codes=(1, 2))
    assert_clean_failure(cli("apply", str(tmp_path / "nope.json")), codes=(1, 2))
    assert emulator.requests() == []


# ---- bad flags and environment ---------------------------------------------------------------

BAD_BASE_URLS = [
    "ftp://example.com",
    "example.com",
    "http://",
    "http://user:pw@127.0.0.1:1",
    "http://127.0.0.1:1/v1",
    "http://127.0.0.1:1?x=1",
    "http://[::1",
    "http://127.0.0.1:99999",
    "http://127.0.0.1:0",
    "http://127.0.0.1:port",
    "http://:80",
    "http://user:hunter2-password@[::1",
    "http://127.0.0.1:1",  # nothing listens on port 1
    "   ",
    "\x00",
]


@pytest.mark.parametrize("base_url", BAD_BASE_URLS)
def test_bad_base_url(base_url: str, tmp_path: Path) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    env = {"RECONCILER_API_KEY": "key-1234", "RECONCILER_BASE_URL": None}
    for command in (
        ("plan", "-f", str(manifest)),
        ("apply", "-f", str(manifest), "--auto-approve"),
        ("status", "-f", str(manifest)),
        ("export", "-o", str(tmp_path / "out.yaml")),
    ):
        result = run_cli([*command, "--base-url", base_url], env=env)
        assert_clean_failure(result, codes=(1, 2))
        assert "key-1234" not in result.output
        assert "hunter2-password" not in result.output
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize(
    "flags",
    [
        ("--parallelism", "0"),
        ("--parallelism", "-3"),
        ("--parallelism", "many"),
        ("--parallelism", "1000"),
        ("--format", "yaml"),
        ("--max-deletes", "-1"),
        ("--target", ""),
        ("--target", "nonsense..address"),
        ("--unknown-flag",),
    ],
)
def test_bad_plan_flags(flags: tuple[str, ...], tmp_path: Path, cli: Cli, emulator: Any) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    result = cli("plan", "-f", str(manifest), *flags)
    if flags[0] == "--target" and result.exit_code == 0:
        assert "warning" in result.output.lower()  # a target matching nothing is a warning
    else:
        assert_clean_failure(result, codes=(1, 2))
    assert writes(emulator) == []


@pytest.mark.parametrize(
    "flags",
    [
        ("--parallelism", "0"),
        ("--wait-timeout", "soon", "--deploy"),
        ("--wait-timeout", "-5s", "--deploy"),
        ("--poll-interval", "-1s", "--deploy"),
        ("--poll-interval", "1y", "--deploy"),
        ("--poll-interval", "0s", "--deploy"),
        ("--wait-timeout", "0", "--deploy"),
        ("--max-deletes", "x"),
    ],
)
def test_bad_apply_flags(flags: tuple[str, ...], tmp_path: Path, cli: Cli, emulator: Any) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    assert_clean_failure(cli("apply", "-f", str(manifest), "--auto-approve", *flags))
    assert writes(emulator) == []


@pytest.mark.parametrize(
    "api_key", ["", "key with spaces", "kéy", "key\nsecond-line", "wrong-key", "\x7f"]
)
def test_bad_api_key(api_key: str, tmp_path: Path, cli: Cli, emulator: Any) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    for command in (
        ("plan", "-f", str(manifest)),
        ("apply", "-f", str(manifest), "--auto-approve"),
        ("status", "-f", str(manifest)),
        ("export", "-o", str(tmp_path / "out.yaml")),
    ):
        result = cli(*command, env={"RECONCILER_API_KEY": api_key})
        assert_clean_failure(result, codes=(1, 2))
        if api_key.strip():
            assert api_key.strip() not in result.output
    assert writes(emulator) == []


def test_plan_out_to_an_unwritable_place(tmp_path: Path, cli: Cli, emulator: Any) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    for out in (tmp_path, tmp_path / "missing-dir" / "plan.json", manifest / "plan.json"):
        assert_clean_failure(cli("plan", "-f", str(manifest), "--out", str(out)), codes=(1, 2))
    assert writes(emulator) == []


@pytest.mark.parametrize("base_url", ["local:{dir}", "local:{file}/state.json"])
def test_local_emulator_state_path_is_unusable(base_url: str, tmp_path: Path) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    url = base_url.format(dir=tmp_path, file=manifest)
    result = run_cli(["plan", "-f", str(manifest), "--base-url", url], env={})
    assert_clean_failure(result, codes=(1, 2))


def test_local_emulator_state_file_is_garbage(tmp_path: Path) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    for content in (
        b"not json",
        b"[]",
        b'{"projects": 5}',
        b'{"version": 1, "projects": 5}',
        b'{"version": 1, "apps": {"app_1": "text"}}',
        b'{"version": 1, "policies": {"env_1": {}}}',
        b'{"version": 1, "clockOffsetMs": "soon"}',
        b'{"version": 1, "dns": {}}',
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff\xfe",
        b"",
    ):
        state = tmp_path / "state.json"
        state.write_bytes(content)
        result = run_cli(["plan", "-f", str(manifest), "--base-url", f"local:{state}"], env={})
        if content == b"":
            assert result.exit_code in (0, 1), result.output  # empty may count as no state
            assert "Traceback" not in result.output
            assert "internal error" not in result.output.lower()
        else:
            assert_clean_failure(result, codes=(1, 2))
            assert state.name in result.output


# ---- the emulator command --------------------------------------------------------------------


@pytest.fixture
def no_serving(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make `reconciler emulator` return instead of serving, and record that it would have."""
    import uvicorn

    started: list[str] = []

    def run(self: Any, sockets: Any = None) -> None:
        started.append("served")

    monkeypatch.setattr(uvicorn.Server, "run", run)
    return started


@pytest.mark.parametrize(
    "case",
    [
        "port-negative",
        "port-huge",
        "fault-rate-2",
        "fault-rate-text",
        "latency-negative",
        "step-zero",
        "rate-zero",
        "rate-text",
        "rate-inf",
        "seed-text",
        "host-bogus",
        "keys-missing",
        "keys-not-yaml",
        "keys-wrong-shape",
        "keys-bad-permission",
        "keys-empty-key",
        "keys-binary",
        "state-not-json",
        "state-wrong-shape",
        "state-wrong-tables",
        "keys-deep",
        "keys-huge-int",
        "state-huge-int",
        "state-binary",
        "state-is-dir",
    ],
)
def test_emulator_refuses_bad_flags_and_files(
    case: str, tmp_path: Path, no_serving: list[str]
) -> None:
    keys = tmp_path / "keys.yaml"
    state = tmp_path / "state.json"
    flags: dict[str, list[str]] = {
        "port-negative": ["--port", "-1"],
        "port-huge": ["--port", "70000"],
        "fault-rate-2": ["--fault-rate", "2"],
        "fault-rate-text": ["--fault-rate", "often"],
        "latency-negative": ["--latency-ms", "-1"],
        "step-zero": ["--step-ms", "0"],
        "rate-zero": ["--rate-limit", "0"],
        "rate-text": ["--rate-limit", "fast/s"],
        "rate-inf": ["--rate-limit", "inf"],
        "seed-text": ["--seed", "abc"],
        "host-bogus": ["--host", "no-such-host.invalid", "--port", "0"],
        "keys-missing": ["--keys", str(tmp_path / "none.yaml")],
        "state-is-dir": ["--state", str(tmp_path)],
    }
    contents = {
        "keys-not-yaml": (keys, b"keys: [\n"),
        "keys-wrong-shape": (keys, b"keys: {a: 1}\n"),
        "keys-bad-permission": (keys, b"keys: [{key: k1, permissions: [not-a-permission]}]\n"),
        "keys-empty-key": (keys, b"keys: [{key: '', permissions: []}]\n"),
        "keys-binary": (keys, bytes(range(256))),
        "state-not-json": (state, b"{not json"),
        "state-wrong-shape": (state, b'{"projects": [1, 2]}'),
        "state-wrong-tables": (state, b'{"version": 1, "projects": [1, 2], "seq": "x"}'),
        "keys-deep": (keys, b"keys: " + b"[" * 50_000 + b"]" * 50_000),
        "keys-huge-int": (keys, b"keys: [{key: k1, permissions: []}]\nx: 1" + b"0" * 5000),
        "state-huge-int": (state, b'{"version": 1, "seq": 1' + b"0" * 5000 + b"}"),
        "state-binary": (state, bytes(range(256))),
    }
    if case in contents:
        target, content = contents[case]
        target.write_bytes(content)
        option = "--keys" if target == keys else "--state"
        flags[case] = [option, str(target), "--port", "0"]
    result = run_cli(["emulator", *flags[case]], env={"RECONCILER_API_KEY": None})
    assert_clean_failure(result, codes=(1, 2))
    assert no_serving == [], "the emulator started serving despite the bad input"


def test_schema_command_refuses_bad_flags() -> None:
    for flags in (("--bogus",), ("extra-argument",), ("--format", "xml")):
        result = run_cli(["schema", *flags], env={})
        assert_clean_failure(result, codes=(1, 2), case=" ".join(flags))


@pytest.mark.parametrize(
    "case",
    [
        "out-dir-is-a-file",
        "output-exists",
        "output-is-a-dir",
        "project-bad-slug",
        "project-missing",
        "both-outputs",
        "parallelism-zero",
    ],
)
def test_bad_export_flags(case: str, tmp_path: Path, cli: Cli, emulator: Any, seed: Any) -> None:
    seed.project("shop")
    existing = tmp_path / "existing.yaml"
    existing.write_text("keep me\n")
    flags = {
        "out-dir-is-a-file": ["--out-dir", str(existing)],
        "output-exists": ["-o", str(existing)],
        "output-is-a-dir": ["-o", str(tmp_path)],
        "project-bad-slug": ["--project", "Not A Slug!", "-o", str(tmp_path / "o.yaml")],
        "project-missing": ["--project", "nope", "-o", str(tmp_path / "o.yaml")],
        "both-outputs": ["-o", str(tmp_path / "o.yaml"), "--out-dir", str(tmp_path / "d")],
        "parallelism-zero": ["--parallelism", "0", "-o", str(tmp_path / "o.yaml")],
    }[case]
    result = cli("export", *flags)
    assert_clean_failure(result, codes=(1, 2), case=case)
    assert existing.read_text() == "keep me\n"
    assert writes(emulator) == ["projects.createProject"]  # the seed's, nothing more


@pytest.mark.parametrize("flags", [("--format", "yaml"), ("--parallelism", "0"), ("--bogus",)])
def test_bad_status_flags(flags: tuple[str, ...], tmp_path: Path, cli: Cli, emulator: Any) -> None:
    manifest = tmp_path / "quickstart.yaml"
    manifest.write_text(QUICKSTART)
    assert_clean_failure(cli("status", "-f", str(manifest), *flags), codes=(1, 2))
    assert writes(emulator) == []


def test_emulator_state_rows_missing_members(tmp_path: Path, no_serving: list[str]) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"version": 1, "domains": {"dom_1": {}}, "apps": {"app_1": {}}}')
    result = run_cli(["emulator", "--state", str(state), "--port", "0"], env={})
    assert_clean_failure(result, codes=(1, 2))
    assert no_serving == []
