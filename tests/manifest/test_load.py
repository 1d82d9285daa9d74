"""File-level loading: paths, encodings, sizes, YAML hazards, multi-file merging."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.manifest import load, yaml_nodes
from reconciler.manifest.model import FromFile, Position
from reconciler.manifest.validate import ManifestInvalid, Problem, load_manifest
from reconciler.plan.secrets import resolve_secret

MINIMAL = "version: 1\nprojects:\n  shop: {name: Shop}\n"


def problems_of(paths: list[Path | str]) -> tuple[Problem, ...]:
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(paths)
    return caught.value.problems


def only_problem(paths: list[Path | str]) -> Problem:
    problems = problems_of(paths)
    assert len(problems) == 1, problems
    return problems[0]


def test_problem_formats_as_file_line_column_path_message() -> None:
    problem = Problem.at(
        Position("platform/shop.yaml", 12, 9), "projects.shop.runtime.vCpus", "0.3 is bad"
    )
    assert str(problem) == "platform/shop.yaml:12:9: projects.shop.runtime.vCpus: 0.3 is bad"
    assert str(Problem.for_file("x.yaml", "file is empty")) == "x.yaml: file is empty"


def test_manifest_invalid_lists_every_problem_sorted_and_exits_1(tmp_path: Path) -> None:
    b = tmp_path / "b.yaml"
    b.write_text("version: 1\nprojects:\n  Bad: {}\n  ok-1: {nmae: x}\n")
    a = tmp_path / "a.yaml"
    a.write_text("version: 2\n")
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([b, a])
    error = caught.value
    assert error.exit_code == 1
    assert [(Path(p.file).name, p.line) for p in error.problems] == [
        ("a.yaml", 1),
        ("b.yaml", 3),
        ("b.yaml", 4),
    ]
    text = str(error)
    assert text.startswith("the manifest has 3 problems:")
    assert all(str(p) in text for p in error.problems)


def test_missing_path_is_reported_without_position() -> None:
    problem = only_problem(["does/not/exist.yaml"])
    assert (problem.file, problem.line, problem.message) == (
        "does/not/exist.yaml",
        0,
        "no such file or directory",
    )


def test_directory_without_manifests_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    problem = only_problem([tmp_path])
    assert "no *.yaml or *.yml manifest files" in problem.message


def test_directory_means_every_yaml_below_it_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.yml").write_text("version: 1\nprojects:\n  two-two: {}\n")
    (tmp_path / "a.yaml").write_text("version: 1\nprojects:\n  one-one: {}\n")
    (tmp_path / "c.yaml").write_text("version: 1\nprojects:\n  three: {}\n")
    (tmp_path / "README.md").write_text("# not a manifest")
    manifest = load_manifest([tmp_path])
    assert [p.slug for p in manifest.projects] == ["one-one", "two-two", "three"]
    assert [Path(s.path).name for s in manifest.sources] == ["a.yaml", "two.yml", "c.yaml"]


def test_sources_carry_sha256_of_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL)
    (source,) = load_manifest([path]).sources
    assert source.path == str(path)
    assert source.sha256 == hashlib.sha256(MINIMAL.encode()).hexdigest()


def test_the_same_file_twice_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL)
    assert len(load_manifest([path, tmp_path]).sources) == 1


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "file is empty"),
        (b"   \n\n", "file is empty"),
        (b"# only a comment\n", "has no YAML document"),
        (b"---\n", "the document is empty"),
    ],
)
def test_empty_documents_are_refused(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(content)
    assert fragment in only_problem([path]).message


def test_invalid_utf8_names_line_column_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"version: 1\nprojects:\n  shop: {name: caf\xe9}\n")
    problem = only_problem([path])
    assert (problem.line, problem.column) == (3, 19)
    assert "not valid UTF-8 (byte 0xe9 at offset 39)" in problem.message


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    assert "not valid UTF-8" in only_problem([path]).message


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    assert load_manifest([path]).projects[0].name == "Shop"


def test_file_over_the_size_limit_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 64)
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL + "#" * 100 + "\n")
    problem = only_problem([path])
    assert "more than the" in problem.message and "split it into several files" in problem.message


def test_billion_laughs_is_refused(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert "aliases expand to more than" in only_problem([path]).message


def test_deep_nesting_is_refused_without_crashing(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 100_000 + "]" * 100_000)
    problem = only_problem([path])
    assert (problem.line, problem.message) == (
        1,
        f"nested more than {yaml_nodes.MAX_DEPTH} levels deep",
    )


class _ShallowParser(yaml.SafeLoader):
    """A stand-in for a libyaml with a nesting limit below the loader's (PyYAML 6.0.4's C
    scanner refuses 1,000 flow levels while looking ahead, before the loader sees level 65)."""

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        if self.flow_level >= 8:
            raise yaml.scanner.ScannerError(
                None, None, "exceeded maximum nesting depth", self.get_mark()
            )
        super().fetch_flow_collection_start(token_class)  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("text", ["[" * 70 + "]" * 70, "a:\n" + "  [" * 70 + "]" * 70])
def test_a_parser_limit_below_the_loaders_gives_the_loaders_message_at_its_place(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    expected = only_problem([path])
    monkeypatch.setattr(yaml_nodes, "_PARSER", _ShallowParser)
    assert only_problem([path]) == expected
    assert expected.message == f"nested more than {yaml_nodes.MAX_DEPTH} levels deep"


def test_a_parser_limit_on_a_shallow_file_stays_the_parsers_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("version: 1\nprojects: " + "[" * 10 + "]" * 10 + "\n")
    monkeypatch.setattr(yaml_nodes, "_PARSER", _ShallowParser)
    problem = only_problem([path])
    assert problem.message == "YAML syntax error: exceeded maximum nesting depth"
    assert (problem.line, problem.column) == (2, 19)


def test_all_files_problems_are_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nprojects: {shop: {name: x, name: y}}\n")
    (tmp_path / "b.yaml").write_bytes(b"\xff")
    (tmp_path / "c.yaml").write_text("version: 1\nprojects: [\n")
    problems = problems_of([tmp_path])
    assert [Path(p.file).name for p in problems] == ["a.yaml", "b.yaml", "c.yaml"]


def test_project_in_two_files_names_both_places(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nprojects:\n  shop: {name: A}\n")
    (tmp_path / "b.yaml").write_text("version: 1\nprojects:\n  other: {}\n  shop: {name: B}\n")
    problem = only_problem([tmp_path])
    assert (Path(problem.file).name, problem.line, problem.column) == ("b.yaml", 4, 3)
    assert f"also defined at {tmp_path / 'a.yaml'}:3:3" in problem.message


def test_prune_must_agree_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nprune: {apps: true}\n")
    (tmp_path / "b.yaml").write_text("version: 1\nprune: {apps: false}\n")
    (tmp_path / "c.yaml").write_text("version: 1\nprune: {apps: true}\n")
    problem = only_problem([tmp_path])
    assert Path(problem.file).name == "b.yaml"
    assert f"differs from the prune settings at {tmp_path / 'a.yaml'}:2:8" in problem.message


def test_prune_given_once_applies_to_all(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nprojects: {one-one: {}}\n")
    (tmp_path / "b.yaml").write_text("version: 1\nprune: {apps: true, variables: false}\n")
    prune = load_manifest([tmp_path]).prune
    assert (prune.apps, prune.variables, prune.domains) == (True, False, True)


def test_duplicate_keys_are_all_reported_with_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("version: 1\nversion: 1\nprojects:\n  shop: {}\nprojects: {}\n")
    problems = problems_of([path])
    assert [(p.line, p.column) for p in problems] == [(2, 1), (5, 1)]
    assert "(first at line 1)" in problems[0].message
    assert "(first at line 3)" in problems[1].message


def test_merge_keys_and_anchors_are_expanded_with_explicit_keys_winning(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\n"
        "projects:\n"
        "  shop:\n"
        "    apps:\n"
        "      web:\n"
        "        environments:\n"
        "          production:\n"
        "            runtime: &rt {port: 3000, vCpus: 0.5, memoryMib: 512}\n"
        "          preview:\n"
        "            runtime:\n"
        "              <<: [*rt, {port: 9, storageMib: 512}]\n"
        "              vCpus: 0.25\n"
    )
    app = load_manifest([path]).projects[0].apps[0]
    preview = app.environment("preview")
    assert preview is not None and preview.runtime
    runtime = preview.runtime
    assert (runtime.port, runtime.vcpus, runtime.memory_mib, runtime.storage_mib) == (
        3000,
        0.25,
        512,
        512,
    )
    assert runtime.positions["vCpus"].line == 12
    assert runtime.positions["port"].line == 8  # from the anchor, the first source wins


def test_dates_and_plain_decimal_integers_stay_text_where_text_is_expected(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nprojects:\n  shop:\n    name: 2024-01-01\n    apps:\n      web:\n"
        "        environments:\n          production:\n            variables:\n"
        "              RELEASED: 2024-01-01\n              PORT: 3000\n"
        "              ZERO: 0\n              OFFSET: -12\n              LONG: {value: 8080}\n"
        "              SNOWFLAKE: 1234567890123456789012\n"  # past 2**53: still its text
    )
    project = load_manifest([path]).projects[0]
    assert project.name == "2024-01-01"
    env = project.apps[0].environments[0]
    assert env.variables
    assert [v.source.value for v in env.variables] == [  # type: ignore[union-attr]
        "2024-01-01",
        "3000",
        "0",
        "-12",
        "8080",
        "1234567890123456789012",
    ]


def manifest_with(line: str) -> str:
    """A manifest whose line 8 (from column 13) is `line`, inside production."""
    return (
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        f"          production:\n            {line}\n"
    )


# YAML 1.1 reads each of these as an integer, not as the text written: as a variable it
# would be sent as the second column. Refused, so nothing changes meaning silently.
NON_DECIMAL_TEXT = [
    ("01234", "668", "an octal number (668)"),
    ("0644", "420", "an octal number (420)"),
    ("1:30", "90", "a base-60 number (90)"),
    ("16:9", "969", "a base-60 number (969)"),
    ("0b101", "5", "a binary number (5)"),
    ("+5", "5", "the number 5 (the + sign is dropped)"),
    ("0x1F", "31", "a hexadecimal number (31)"),
    ("1_000", "1000", "the number 1000 (underscores are dropped)"),
    ("-0", "0", "the number 0"),
    ("00", "0", "an octal number (0)"),
]


@pytest.mark.parametrize(("written", "converted", "reading"), NON_DECIMAL_TEXT)
@pytest.mark.parametrize("form", ["shorthand", "value"])
def test_a_variable_value_yaml_would_renumber_is_refused_with_quote_it(
    tmp_path: Path, written: str, converted: str, reading: str, form: str
) -> None:
    path = tmp_path / "m.yaml"
    value = written if form == "shorthand" else f"{{value: {written}}}"
    path.write_text(manifest_with(f"variables: {{V: {value}}}"))
    problem = only_problem([path])
    column = 28 if form == "shorthand" else 36
    suffix = "" if form == "shorthand" else ".value"
    assert (problem.line, problem.column) == (8, column)
    assert problem.path == f"projects.shop.apps.web.environments.production.variables.V{suffix}"
    assert problem.message == (
        f'YAML 1.1 reads {written} as {reading}, not as the text {written}; quote it: "{written}"'
    )
    assert f'"{converted}"' not in problem.message


@pytest.mark.parametrize("written", [w for w, _, _ in NON_DECIMAL_TEXT])
def test_the_quoted_form_is_kept_as_written(tmp_path: Path, written: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(manifest_with(f'variables: {{V: "{written}"}}'))
    env = load_manifest([path]).projects[0].apps[0].environments[0]
    assert env.variables
    assert env.variables[0].source.value == written  # type: ignore[union-attr]


def test_a_text_field_names_the_number_and_says_quote_it(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("version: 1\nprojects:\n  shop:\n    name: 0x1F\n")
    problem = only_problem([path])
    assert (problem.line, problem.column, problem.path) == (4, 11, "projects.shop.name")
    assert problem.message == (
        'YAML 1.1 reads 0x1F as a hexadecimal number (31), not as the text 0x1F; quote it: "0x1F"'
    )


@pytest.mark.parametrize(
    ("line", "column", "path", "message"),
    [
        (
            "runtime: {port: 0x1F90}",
            29,
            "runtime.port",
            "YAML 1.1 reads 0x1F90 as a hexadecimal number (8080); "
            "write numbers in plain decimal: 8080",
        ),
        (
            "runtime: {port: 010}",
            29,
            "runtime.port",
            "YAML 1.1 reads 010 as an octal number (8); "
            "write numbers in plain decimal: 10, or 8 if you meant octal 010",
        ),
        (
            "runtime: {memoryMib: 0512}",
            34,
            "runtime.memoryMib",
            "YAML 1.1 reads 0512 as an octal number (330); "
            "write numbers in plain decimal: 512, or 330 if you meant octal 0512",
        ),
        (
            "runtime: {storageMib: +512}",
            35,
            "runtime.storageMib",
            "YAML 1.1 reads +512 as the number 512 (the + sign is dropped); "
            "write numbers in plain decimal: 512",
        ),
        (
            "runtime: {vCpus: 1:30.5}",
            30,
            "runtime.vCpus",
            "YAML 1.1 reads 1:30.5 as a base-60 number (90.5); "
            "write numbers in plain decimal: 90.5",
        ),
        (
            "runtime: {healthcheck: {method: GET, path: /, intervalSeconds: 1:00}}",
            76,
            "runtime.healthcheck.intervalSeconds",
            "YAML 1.1 reads 1:00 as a base-60 number (60); write numbers in plain decimal: 60",
        ),
        (
            "regions: [{name: fra, replicas: {min: 1_0, max: 10}}]",
            51,
            "regions[0].replicas.min",
            "YAML 1.1 reads 1_0 as the number 10 (underscores are dropped); "
            "write numbers in plain decimal: 10",
        ),
        (
            "regions: [{name: fra, replicas: {min: 1, max: 0b11}}]",
            59,
            "regions[0].replicas.max",
            "YAML 1.1 reads 0b11 as a binary number (3); write numbers in plain decimal: 3",
        ),
    ],
)
def test_a_number_field_refuses_non_decimal_forms_and_names_the_decimal(
    tmp_path: Path, line: str, column: int, path: str, message: str
) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(manifest_with(line))
    problem = only_problem([manifest])
    assert (problem.line, problem.column) == (8, column)
    assert problem.path == f"projects.shop.apps.web.environments.production.{path}"
    assert problem.message == message


REFUSED_NUMBERS = st.sampled_from(
    [".inf", "-.inf", "+.inf", ".Inf", "-.INF", ".nan", ".NaN", ".NAN", "1.0e+400", "-2.5e+999"]
) | st.integers(min_value=400, max_value=420).map(lambda digits: "9" * digits)
NUMBER_FIELDS = [
    ("runtime: {vCpus: %s}", "runtime.vCpus"),
    ("runtime: {memoryMib: %s}", "runtime.memoryMib"),
    ("runtime: {storageMib: %s}", "runtime.storageMib"),
    ("runtime: {port: %s}", "runtime.port"),
    (
        "runtime: {healthcheck: {method: GET, path: /, intervalSeconds: %s}}",
        "runtime.healthcheck.intervalSeconds",
    ),
    ("regions: [{name: fra, replicas: {min: %s, max: 10}}]", "regions[0].replicas.min"),
    ("regions: [{name: fra, replicas: {min: 1, max: %s}}]", "regions[0].replicas.max"),
    ("variables: {A: %s}", "variables.A"),  # a text field: the loader's problem alone, as before
]


SHARED_NUMBER_FIELDS = [
    ("limits: {vCpus: %s}", "limits.vCpus"),
    ("limits: {memoryMib: %s}", "limits.memoryMib"),
    ("checks: {replica-bounds: {maxReplicas: %s}}", "checks.replica-bounds.maxReplicas"),
]


@settings(max_examples=80, deadline=None)
@given(
    field=st.sampled_from(
        [(manifest_with(t), 8, 13 + t.index("%s"), p) for t, p in NUMBER_FIELDS]
        + [(f"version: 1\n{t}\n", 2, 1 + t.index("%s"), p) for t, p in SHARED_NUMBER_FIELDS]
    ),
    written=REFUSED_NUMBERS,
)
def test_a_number_the_loader_refuses_is_one_problem_at_its_place(
    field: tuple[str, int, int, str], written: str
) -> None:
    """Infinity, NaN and integers no float holds are refused while loading; the schema does
    not report the same value again (it was "expected number, got string '.inf'")."""
    text, line, column, path = field
    with tempfile.TemporaryDirectory() as directory:
        manifest = Path(directory, "m.yaml")
        manifest.write_text(text.replace("%s", written))
        problem = only_problem([manifest])
    assert (problem.line, problem.column) == (line, column)
    if line == 8:
        path = f"projects.shop.apps.web.environments.production.{path}"
    assert problem.path == path
    assert "is not a finite number" in problem.message or "too large a number" in problem.message


def test_a_non_decimal_number_in_a_shared_block_is_reported_where_it_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nx-base: &base {port: 010}\nprojects:\n  shop:\n    apps:\n      web:\n"
        "        environments:\n          production:\n            runtime: {<<: *base}\n"
    )
    problem = only_problem([path])
    assert (problem.line, problem.column) == (2, 22)
    assert problem.path == "projects.shop.apps.web.environments.production.runtime.port"
    assert "octal number (8)" in problem.message


def test_an_unused_extension_block_may_hold_any_number_form(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL + "x-notes: {mode: 0644, at: 1:30}\n")
    assert load_manifest([path]).projects[0].slug == "shop"


def test_a_decimal_where_text_is_expected_is_quoted_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(manifest_with("variables: {VERSION: 1.10}"))
    problem = only_problem([path])
    assert (problem.line, problem.column) == (8, 34)
    assert problem.message.endswith('quote it exactly as intended, e.g. "1.10"')


def test_hidden_files_and_directories_below_a_directory_are_skipped(tmp_path: Path) -> None:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (tmp_path / ".draft.yaml").write_text("not: a manifest\n")
    (tmp_path / "shop.yaml").write_text(MINIMAL)
    manifest = load_manifest([tmp_path])
    assert [Path(s.path).name for s in manifest.sources] == ["shop.yaml"]


def test_domains_are_unique_across_files_and_projects(tmp_path: Path) -> None:
    body = (
        "version: 1\nprojects:\n  {project}:\n    apps:\n      web:\n        environments:\n"
        "          production: {{domains: [{host}]}}\n"
    )
    (tmp_path / "a.yaml").write_text(body.format(project="one-one", host="shop.example.com"))
    (tmp_path / "b.yaml").write_text(body.format(project="two-two", host="SHOP.example.com."))
    problem = only_problem([tmp_path])
    assert (Path(problem.file).name, problem.line, problem.column) == ("b.yaml", 7, 34)
    assert problem.path == "projects.two-two.apps.web.environments.production.domains[0]"
    assert (
        "already used by projects.one-one.apps.web.environments.production "
        f"({tmp_path / 'a.yaml'}:7:34)" in problem.message
    )


def test_validate_reads_no_secret_file(tmp_path: Path) -> None:
    """What a secret file holds (its length, its encoding, whether it is empty) is a secret's:
    validate checks the path rules without reading it, so its output cannot depend on the
    secret; apply refuses a value it cannot send (tests/test_secrets_bounds.py)."""
    (tmp_path / "big.key").write_bytes(b"k" * 16385)
    (tmp_path / "huge.key").write_bytes(b"k" * (4 * 16384 + 1))
    (tmp_path / "binary.key").write_bytes(b"\xff" * 16385)
    (tmp_path / "empty.key").write_bytes(b"")
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            variables:\n"
        "              BIG: {fromFile: big.key}\n"
        "              HUGE: {fromFile: huge.key}\n"
        "              BINARY: {fromFile: binary.key}\n"
        "              EMPTY: {fromFile: empty.key}\n"
    )
    assert load_manifest([path]).warnings == ()


def test_from_file_is_resolved_against_the_declaring_file_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "m.yaml").write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production: {variables: {K: {fromFile: k.txt}}}\n"
    )
    (tmp_path / "k.txt").write_text("in the cwd, not beside the manifest")
    monkeypatch.chdir(tmp_path)
    manifest = load_manifest(["team"])  # a missing secret file is no error: known after apply
    (variable,) = manifest.projects[0].apps[0].environments[0].variables  # type: ignore[misc]
    assert variable.source == FromFile(
        str(tmp_path / "team" / "k.txt"), "k.txt", str(tmp_path / "team")
    )
    assert resolve_secret(variable.source) is None


def test_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MINIMAL)

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    problem = only_problem([path])
    assert (problem.file, problem.line, problem.message) == (
        str(path),
        0,
        "cannot read: Permission denied",
    )


def test_no_paths_at_all() -> None:
    assert "no manifest given" in only_problem([]).message
