"""Capacity ceilings from settings, by hand: per instance x the sum of replicas.max."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.checks.capacity import UNKNOWN, Ceiling, Figures, amount, ceiling, total

REGIONS = [
    {"name": "fra", "replicas": {"min": 1, "max": 3}},
    {"name": "iad", "replicas": {"min": 0, "max": 1}},
]


def test_per_instance_times_replicas_max_over_every_region() -> None:
    runtime = {"vCpus": 0.25, "memoryMib": 768, "storageMib": 512}
    assert ceiling(runtime, REGIONS) == Figures(1.0, 3072.0, 2048.0)
    assert ceiling(runtime, []) == Figures(0.0, 0.0, 0.0)
    assert ceiling({"vCpus": 2}, REGIONS) == Figures(8.0, None, None)
    assert ceiling(runtime, None) == UNKNOWN


@pytest.mark.parametrize(
    "regions",
    [
        [{"name": "fra"}],
        [{"name": "fra", "replicas": {"max": "3"}}],
        [{"replicas": {"max": True}}],
        "x",
    ],
)
def test_a_live_answer_of_another_shape_is_unknown_not_data(regions: Any) -> None:
    assert ceiling({"vCpus": 1}, regions) == UNKNOWN
    assert ceiling({"vCpus": "1"}, REGIONS).vcpus is None


def test_totals_add_what_is_known_and_say_when_they_are_lower_bounds() -> None:
    known = Ceiling(("a",), Figures(1, 512, 0), Figures(2, 1024, 0))
    partly = Ceiling(("b",), Figures(0, 0, 0), Figures(None, 256, 0))
    summed = total((), [known, partly])
    assert summed.before == Figures(1, 512, 0)
    assert summed.after == Figures(2, 1280, 0, complete=False)


def test_amounts_read_as_the_manifest_writes_numbers() -> None:
    assert [amount(v) for v in (4.0, 0.25, 2.5, 1280.0, None)] == ["4", "0.25", "2.5", "1280", "?"]
