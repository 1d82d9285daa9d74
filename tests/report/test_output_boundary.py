"""The output boundary: a registered secret never appears in anything written through any
channel (stdout, stderr, a rich console, a file), in any of the forms it may take there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import sensitive
from reconciler.errors import OutputError
from reconciler.report import output

secrets = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=12, max_size=40
).filter(lambda s: s.strip() == s and len(s.split()) == 1)
padding = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


def _forms(secret: str) -> list[str]:
    """How a secret may stand in output: as is, JSON-escaped (ASCII or not)."""
    return [secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]]


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=secrets, before=padding, after=padding, form=st.integers(0, 2))
def test_a_registered_secret_never_leaves_through_any_channel(
    secret: str,
    before: str,
    after: str,
    form: int,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    sensitive.forget_all()
    sensitive.register(secret)
    text = before + _forms(secret)[form] + after
    guard = output.guard_stdout()
    try:
        output.echo(text)
        output.echo(text, err=True)
        sys.stdout.write(text)  # what click or rich write straight to the streams
        sys.stderr.write(text)
        output.console().print(text, markup=False, highlight=False)
        output.console(err=True).print(text, markup=False, highlight=False)
    finally:
        output.release_stdout(guard)
    written = capsys.readouterr()
    for stream in (written.out, written.err):
        assert secret not in stream
    target = tmp_path / "out.txt"
    with pytest.raises(OutputError):
        output.write_file(target, text)
    assert not target.exists()


@pytest.mark.parametrize(
    "secret",
    [
        r"C:\new\tmp\secret",  # `\n` and `\t` read as JSON escapes are other characters
        "00\\\\00000000",  # the property test's counterexample: `\\` reads as one backslash
        "tab\\there-and-more",
    ],
)
def test_a_secret_with_backslashes_printed_as_written_is_redacted(
    secret: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sensitive.register(secret)
    assert secret not in sensitive.redact("key=" + secret)
    assert sensitive.contains_registered("key=" + secret)
    output.echo("key=" + secret)
    assert secret not in capsys.readouterr().out


def test_text_without_a_registered_value_is_written_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sensitive.register("a-long-enough-secret-value")
    output.echo("port = 3000, NODE_ENV = production")
    assert capsys.readouterr().out == "port = 3000, NODE_ENV = production\n"
    output.write_file(tmp_path / "f.yaml", "version: 1\n")
    assert (tmp_path / "f.yaml").read_text() == "version: 1\n"
