"""Small pieces of the `apply` command that need no platform."""

from __future__ import annotations

import click
import pytest

from reconciler.cli.apply import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("15m", 900.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        ("0.5s", 0.5),
        (" 2M ", 120.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "m15", "15x", "1h 30m", "-5s", "1.2.3s"])
def test_bad_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(click.BadParameter, match=r"use e\.g\. 90s, 15m or 1h"):
        parse_duration(text)
