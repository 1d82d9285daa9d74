"""A resolved secret must fit the spec's variable value bound: 1 to 16384 characters.

Longer values are refused when they are read (at plan time and again when apply resolves
them), naming the source, the length and the bound, never the value. The bound counts
characters, as the spec says, not UTF-8 bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.manifest.model import MAX_VALUE_CHARS, FromEnv
from reconciler.manifest.secret_sources import from_file
from reconciler.plan import secrets
from reconciler.plan.changes import SecretRef
from reconciler.sensitive import Secret

BOUND = MAX_VALUE_CHARS
VALUE_MARK = "v@lue-"


def _value(length: int, unit: str = VALUE_MARK) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def test_the_bound_is_the_spec_s() -> None:
    assert BOUND == 16384


def test_an_env_secret_of_exactly_the_bound_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDS_SECRET", _value(BOUND))
    assert secrets.resolve_secret(FromEnv("BOUNDS_SECRET")) == Secret(_value(BOUND))


def test_an_env_secret_one_character_longer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOUNDS_SECRET", _value(BOUND + 1))
    with pytest.raises(secrets.SecretTooLong) as raised:
        secrets.resolve_secret(FromEnv("BOUNDS_SECRET"))
    message = str(raised.value)
    assert message.startswith(
        f"secret fromEnv:BOUNDS_SECRET has {BOUND + 1} characters; a variable value may have "
        f"at most {BOUND}"
    ), message
    assert VALUE_MARK not in message


def test_a_file_secret_too_long_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "big.pem"
    path.write_text(_value(BOUND + 10), encoding="utf-8")
    with pytest.raises(secrets.SecretTooLong) as raised:
        secrets.resolve_secret(from_file("big.pem", tmp_path))
    assert f"fromFile:{path} has {BOUND + 10} characters" in str(raised.value)
    assert VALUE_MARK not in str(raised.value)


@pytest.mark.parametrize(("length", "fits"), [(BOUND, True), (BOUND + 1, False)])
def test_characters_are_counted_not_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, length: int, fits: bool
) -> None:
    """16384 `é` are 32768 UTF-8 bytes and still a valid value."""
    path = tmp_path / "accents.txt"
    path.write_text("é" * length, encoding="utf-8")
    monkeypatch.setenv("BOUNDS_ACCENTS", "é" * length)
    for source in (from_file("accents.txt", tmp_path), FromEnv("BOUNDS_ACCENTS")):
        if fits:
            assert secrets.resolve_secret(source) == Secret("é" * length)
        else:
            with pytest.raises(secrets.SecretTooLong, match=f"has {length} characters"):
                secrets.resolve_secret(source)


def test_apply_s_resolution_refuses_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value that grew between plan and apply is caught when apply resolves it."""
    monkeypatch.setenv("BOUNDS_SECRET", _value(BOUND + 1))
    with pytest.raises(secrets.SecretTooLong, match=f"at most {BOUND}"):
        secrets.resolve_ref(SecretRef("fromEnv:BOUNDS_SECRET"))


def test_a_too_long_secret_is_a_secret_that_cannot_be_sent() -> None:
    """Callers that refuse unavailable secrets refuse these as well."""
    assert issubclass(secrets.SecretTooLong, secrets.SecretUnavailable)
