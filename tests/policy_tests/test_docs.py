"""The policy tests guide names every choice made where the spec leaves matching open, with
the answer the evaluator applies (choices.py holds the answers; the guide must not drift)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.policy_tests import OPEN_CHOICES, OpenChoice

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "policy-tests.md"


def choice_rows() -> dict[str, str]:
    """The table of the guide's section on open choices: key -> answer."""
    section = GUIDE.read_text().split("## Where the spec leaves a choice open", 1)[1]
    section = section.split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([a-z0-9-]+)` \| (.+) \|$", section, re.M))


@pytest.mark.parametrize("choice", OPEN_CHOICES, ids=[c.key for c in OPEN_CHOICES])
def test_the_guide_lists_each_open_choice(choice: OpenChoice) -> None:
    assert choice.key in choice_rows(), f"docs/guides/policy-tests.md lacks a row for {choice.key}"


def test_the_guide_lists_no_choice_that_does_not_exist() -> None:
    assert sorted(choice_rows()) == sorted(c.key for c in OPEN_CHOICES)
