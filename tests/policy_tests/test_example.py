"""examples/policy-tests/platform.yaml: valid without warnings, and its tests pass; each test
matters (expecting the other outcome fails it)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.fixtures.cli import run_cli
from tests.policy_tests.cli_helpers import run_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policy-tests" / "platform.yaml"


def test_the_example_validates_strictly() -> None:
    result = run_cli(["validate", "--strict", "-f", str(EXAMPLE)])
    assert result.exit_code == 0, result.output


def test_the_example_tests_pass() -> None:
    code, report = run_json("-f", EXAMPLE)
    assert code == 0
    assert report["summary"] == {"passed": 7, "failed": 0}
    assert {r["environment"] for r in report["results"]} == {
        "shop/web/production",
        "shop/web/preview",
    }


def test_every_example_test_fails_when_it_expects_the_other_outcome(tmp_path: Path) -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    app = document["projects"]["shop"]["apps"]["web"]
    for tests in (app["defaults"]["policyTests"], app["environments"]["production"]["policyTests"]):
        for test in tests:
            test["expect"] = "allow" if test["expect"] == "deny" else "deny"
            test.pop("decidedBy", None)
    flipped = tmp_path / "flipped.yaml"
    flipped.write_text(yaml.safe_dump(document), encoding="utf-8")
    code, report = run_json("-f", flipped)
    assert code == 1
    assert report["summary"] == {"passed": 0, "failed": 7}
