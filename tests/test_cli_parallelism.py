"""`--parallelism`: its default, and `RECONCILER_PARALLELISM` setting it (as in CI)."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from reconciler.cli import main
from reconciler.cli.options import DEFAULT_PARALLELISM
from reconciler.platform import connect as connect_module

MANIFEST = "version: 1\nprojects:\n  shop:\n    name: Shop\n"


@pytest.mark.parametrize(
    ("environment", "arguments", "expected"),
    [
        ({}, [], DEFAULT_PARALLELISM),
        ({"RECONCILER_PARALLELISM": "7"}, [], 7),
        ({"RECONCILER_PARALLELISM": "7"}, ["--parallelism", "3"], 3),  # the option wins
    ],
)
def test_the_parallelism_a_plan_connects_with(
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    environment: dict[str, str],
    arguments: list[str],
    expected: int,
) -> None:
    seen: list[int] = []
    real = connect_module.connect

    def recording(*args: Any, parallelism: int, **kwargs: Any) -> Any:
        seen.append(parallelism)
        return real(*args, parallelism=parallelism, **kwargs)

    monkeypatch.setattr(connect_module, "connect", recording)
    monkeypatch.delenv("RECONCILER_PARALLELISM", raising=False)
    (tmp_path / "m.yaml").write_text(MANIFEST)
    base_url = f"local:{tmp_path / 'state.json'}"
    result = CliRunner(env=environment).invoke(
        main, ["plan", "-f", str(tmp_path / "m.yaml"), "--base-url", base_url, *arguments]
    )
    assert result.exit_code == 0, result.output
    assert seen == [expected]


def test_a_parallelism_out_of_range_is_refused() -> None:
    result = CliRunner(env={"RECONCILER_PARALLELISM": "0"}).invoke(main, ["plan", "-f", "x"])
    assert result.exit_code != 0
    assert "parallelism" in result.output.lower()
