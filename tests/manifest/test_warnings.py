"""The warning level: values the platform accepts but that are very likely mistakes.

Every file in warnings/ loads (it is a valid manifest) with exactly the warnings its
header lists. Header lines: `# warn: LINE:COLUMN: message fragment`, one per warning.
`validate` prints them on stderr and exits 0, or 1 with `--strict`.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler.cli import main
from reconciler.manifest.model import Position
from reconciler.manifest.problems import Problem
from reconciler.manifest.validate import ManifestInvalid, load_manifest

CORPUS = Path(__file__).parent / "warnings"
WARN = re.compile(r"^# warn: (\d+):(\d+): (.+)$", re.MULTILINE)
CASES = sorted(CORPUS.glob("*.yaml"))

Expected = list[tuple[int, int, str]]


def expected_warnings(path: Path) -> Expected:
    found = [(int(line), int(col), text) for line, col, text in WARN.findall(path.read_text())]
    assert found, f"{path.name} has no `# warn:` header"
    return found


def assert_matches(warnings: list[tuple[int, int, str]], expected: Expected) -> None:
    """Exactly the expected warnings: one for each header line, at its line and column."""
    assert len(warnings) == len(expected), warnings
    for line, column, fragment in expected:
        assert any(
            (w_line, w_col) == (line, column) and fragment in message
            for w_line, w_col, message in warnings
        ), f"expected {line}:{column}: {fragment!r}; got {warnings}"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RECONCILER_API_KEY", "RECONCILER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("validate opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_corpus_covers_every_rule_turned_into_a_warning() -> None:
    names = {path.stem for path in CASES}
    assert {
        "regions-min-over-max",
        "regions-max-zero",
        "policy-remote-ip-host-bits",
        "policy-method-lowercase",
        "policy-method-unknown",
        "variable-writeonly-description",
        "app-image-url-scheme",
    } <= names


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_manifest_loads_with_exactly_the_listed_warnings(path: Path) -> None:
    manifest = load_manifest([path])  # no ManifestInvalid: warnings never invalidate

    assert manifest.projects, "the manifest is usable"
    assert all(w.severity == "warning" and w.file == str(path) for w in manifest.warnings)
    assert list(manifest.warnings) == sorted(manifest.warnings)
    assert_matches(
        [(w.line, w.column, w.message) for w in manifest.warnings], expected_warnings(path)
    )


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_validate_prints_warnings_on_stderr_and_exits_0(path: Path) -> None:
    code, out, err = run("validate", "-f", str(path))
    assert code == 0, out + err
    assert out.startswith("Valid: 1 file, 1 project, 1 app")
    lines = [line for line in err.splitlines() if line.startswith("warning: ")]
    parsed = []
    for line in lines:
        found = re.match(rf"warning: {re.escape(str(path))}:(\d+):(\d+): [^:]+: (.*)$", line)
        assert found, line
        parsed.append((int(found.group(1)), int(found.group(2)), found.group(3)))
    assert_matches(parsed, expected_warnings(path))
    count = len(lines)
    assert err.splitlines()[-1] == (
        f"{count} warning{'s' if count != 1 else ''} found; the manifest is valid "
        "(--strict would fail on warnings)."
    )


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_strict_fails_on_warnings(path: Path) -> None:
    code, out, err = run("validate", "--strict", "-f", str(path))
    assert code == 1
    assert "Valid" not in out
    assert "--strict fails on warnings." in err
    assert err.count("warning: ") == len(expected_warnings(path))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_json_lists_warnings_with_their_severity(path: Path) -> None:
    code, out, _ = run("validate", "--format", "json", "-f", str(path))
    assert code == 0
    items = json.loads(out)
    assert {item["severity"] for item in items} == {"warning"}
    assert_matches([(i["line"], i["column"], i["message"]) for i in items], expected_warnings(path))

    strict_code, strict_out, _ = run("validate", "--strict", "--format", "json", "-f", str(path))
    assert (strict_code, json.loads(strict_out)) == (1, items)


MIXED = """\
version: 1
projects:
  shop:
    apps:
      web:
        environments:
          production:
            runtime: {port: 0}
            regions: [{name: fra, replicas: {min: 2, max: 1}}]
"""


def test_errors_and_warnings_together(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MIXED)
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([path])
    assert [(p.line, p.column, p.severity) for p in caught.value.problems] == [(8, 29, "error")]
    assert [(w.line, w.column, w.severity) for w in caught.value.warnings] == [(9, 51, "warning")]
    assert "replicas" not in str(caught.value), "the error message names the errors only"

    code, out, err = run("validate", "-f", str(path))
    assert code == 1
    assert out == (
        f"{path}:8:29: projects.shop.apps.web.environments.production.runtime.port: "
        "0 is too small: the minimum is 1\n"
    )
    assert err.splitlines() == [
        f"warning: {path}:9:51: projects.shop.apps.web.environments.production.regions[0]"
        ".replicas.min: replicas.min 2 is greater than replicas.max 1; min should be at most "
        "max (equal turns autoscaling off): lower min or raise max",
        "1 problem and 1 warning found.",
    ]

    code, out, _ = run("validate", "--format", "json", "-f", str(path))
    assert code == 1
    assert [(i["line"], i["severity"]) for i in json.loads(out)] == [(8, "error"), (9, "warning")]


def test_a_manifest_without_warnings_prints_nothing_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    healthy = "port: 80, healthcheck: {method: GET, path: /healthz}"
    path.write_text(MIXED.replace("port: 0", healthy).replace("min: 2", "min: 1"))
    assert run("validate", "--strict", "-f", str(path)) == (
        0,
        "Valid: 1 file, 1 project, 1 app, 1 managed environment.\n",
        "",
    )
    assert run("validate", "--format", "json", "-f", str(path))[:2] == (0, "[]\n")


def test_warning_formats_with_a_prefix_and_a_severity_member() -> None:
    warning = Problem.at(Position("m.yaml", 3, 7), "projects.shop", "looks odd", "warning")
    assert str(warning) == "warning: m.yaml:3:7: projects.shop: looks odd"
    assert warning.located_message == "m.yaml:3:7: projects.shop: looks odd"
    assert warning.to_json()["severity"] == "warning"
    assert Problem.at(Position("m.yaml", 3, 7), "p", "bad").to_json()["severity"] == "error"


SECRET = "sentinel-secret-value-7c1e"
TOKEN = "sentinel-registry-token-93ab"


def test_warnings_never_quote_a_secret(tmp_path: Path) -> None:
    """A warning about a write-only variable names its length, never its value; one about
    an image URL never quotes the URL (it can carry credentials)."""
    path = tmp_path / "m.yaml"
    description = "d" * 240
    path.write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n"
        f"      web:\n        oci: {{image: 'https://{TOKEN}.example.com/acme/web:1'}}\n"
        "        environments:\n          production:\n            variables:\n"
        f"              KEY: {{value: {SECRET}, kind: writeonly, description: {description}}}\n"
    )
    manifest = load_manifest([path])
    assert len(manifest.warnings) == 2
    for args in (
        ["-f", str(path)],
        ["--format", "json", "-f", str(path)],
        ["--strict", "-f", str(path)],
    ):
        _, out, err = run("validate", *args)
        assert "warning" in out + err
        assert SECRET not in out + err and TOKEN not in out + err
        assert description not in out + err


def test_an_empty_method_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            policies:\n"
        "              - {name: p, enabled: true, match: [{method: {methods: ['']}}], "
        "logging: {}}\n"
    )
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest([path])
    assert [(p.line, p.message) for p in caught.value.problems] == [(9, "must not be empty")]
    assert caught.value.warnings == ()
