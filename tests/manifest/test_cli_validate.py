"""`reconciler validate` and `reconciler schema` through click's CliRunner."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.cli import main

ROOT = Path(__file__).resolve().parents[2]
VALID = "version: 1\nprojects:\n  shop:\n    apps:\n      web: {git: {repository: acme/web}}\n"
INVALID = (
    "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
    "          production:\n            runtime: {vCpus: 0.3, port: 0}\n"
)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """validate needs no key, no base URL and no network."""
    for name in ("RECONCILER_API_KEY", "RECONCILER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("validate opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


def test_valid_manifest_exits_0_with_a_summary(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(VALID)
    code, out, _ = run("validate", "-f", str(path))
    assert code == 0
    assert out == "Valid: 1 file, 1 project, 1 app, 0 managed environments.\n"


def test_examples_validate() -> None:
    examples = ROOT / "examples"
    code, out, _ = run(
        "validate",
        "-f",
        str(examples / "quickstart.yaml"),
        "-f",
        str(examples / "image-app.yaml"),
        "-f",
        str(examples / "company"),
    )
    assert code == 0, out
    assert out.startswith("Valid: 5 files, 5 projects")


def test_invalid_manifest_exits_1_listing_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(INVALID)
    code, out, err = run("validate", "-f", str(path))
    assert code == 1
    prefix = f"{path}:8:"
    assert out.splitlines() == [
        f"{prefix}30: projects.shop.apps.web.environments.production.runtime.vCpus: "
        "0.3 is not a multiple of 0.25; the nearest are 0.25 and 0.5",
        f"{prefix}41: projects.shop.apps.web.environments.production.runtime.port: "
        "0 is too small: the minimum is 1",
    ]
    assert "2 problems found." in err


def test_json_format_lists_problem_objects(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(INVALID)
    code, out, _ = run("validate", "-f", str(path), "--format", "json")
    assert code == 1
    problems = json.loads(out)
    assert [p["column"] for p in problems] == [30, 41]
    assert problems[0] == {
        "file": str(path),
        "line": 8,
        "column": 30,
        "path": "projects.shop.apps.web.environments.production.runtime.vCpus",
        "message": "0.3 is not a multiple of 0.25; the nearest are 0.25 and 0.5",
        "severity": "error",
    }


def test_json_format_of_a_valid_manifest_is_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(VALID)
    assert run("validate", "-f", str(path), "--format", "json")[:2] == (0, "[]\n")


def test_relative_paths_are_reported_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform" / "shop.yaml").write_text(INVALID)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("validate", "-f", "platform")
    assert code == 1
    assert out.startswith("platform/shop.yaml:8:30: ")


def laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("binary.yaml", bytes(range(256)), "not valid UTF-8"),
        ("deep.yaml", b"[" * 200_000, "nested more than"),
        ("laughs.yaml", laughs().encode(), "aliases expand to more than"),
        ("tab.yaml", b"version: 1\n\tprojects: {}\n", "YAML syntax error"),
        ("nul.yaml", b"version: 1\nprojects: \x00\n", ":2:11: character U+0000 is not allowed"),
        ("bell.yaml", b"version: 1\nname: a\x07b\n", ":2:8: character U+0007 is not allowed"),
        ("list.yaml", b"- 1\n- 2\n", "the document is a list"),
        ("tags.yaml", b"version: !!python/name:os.system 1\n", "unsupported YAML tag"),
    ],
)
def test_garbage_is_a_message_never_a_traceback(
    tmp_path: Path, name: str, content: bytes, fragment: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    code, out, err = run("validate", "-f", str(path))
    assert code == 1
    assert fragment in out
    assert "Traceback" not in out + err and "internal error" not in out + err


def test_directory_with_no_yaml_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, out, _ = run("validate", "-f", str(tmp_path / "empty"), "-f", str(tmp_path / "nope"))
    assert code == 1
    assert out.splitlines() == [
        f"{tmp_path / 'empty'}: directory has no *.yaml or *.yml manifest files",
        f"{tmp_path / 'nope'}: no such file or directory",
    ]


def test_validate_requires_a_file() -> None:
    code, _, err = run("validate")
    assert code == 1 and "-f" in err


def test_schema_prints_the_schema() -> None:
    code, out, _ = run("schema")
    assert code == 0
    assert json.loads(out) == json.loads((ROOT / "schemas" / "manifest.schema.json").read_text())


def test_negative_step_value_is_reported_once_by_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(INVALID.replace("vCpus: 0.3", "vCpus: -0.125"))
    code, out, _ = run("validate", "-f", str(path))
    assert code == 1
    vcpus = [line for line in out.splitlines() if ".vCpus:" in line]
    assert vcpus == [
        f"{path}:8:30: projects.shop.apps.web.environments.production.runtime.vCpus: "
        "-0.125 is too small: the minimum is 0.25"
    ]


def test_paths_as_arguments_are_validated_together_with_f(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nprojects:\n  shop:\n    name: Shop\n")
    (tmp_path / "b.yaml").write_text("version: 1\nprojects:\n  shop:\n    name: Again\n")
    code, out, _ = run("validate", str(tmp_path / "a.yaml"), "-f", str(tmp_path / "b.yaml"))
    assert code == 1
    assert "shop" in out and "a.yaml" in out and "b.yaml" in out
