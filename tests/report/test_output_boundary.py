"""The output boundary: a secret value cannot be written through any channel (stdout, stderr, a
rich console, a file), because it is a `Secret`, which no formatting reveals; and text is written
as it is, whatever the secrets hold, so that what is written tells nothing of them."""

from __future__ import annotations

import copy
import json
import pickle
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler import sensitive
from reconciler.report import output
from reconciler.sensitive import Secret

values = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40
).map(lambda tail: "SNTL-" + tail)
"""Secret values, each starting with a marker that nothing else written holds."""
padding = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30
).filter(lambda s: "SNTL" not in s)


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=values, before=padding, after=padding)
def test_a_secret_value_never_leaves_through_any_channel(
    value: str, before: str, after: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = Secret(value)
    texts = [
        f"{before}{secret}{after}",
        before + str(secret) + after,
        f"{before}{secret!r}{after}",
        "{}{}{}".format(before, secret, after),  # noqa: UP032 - each way of formatting
        "%s%s%s" % (before, secret, after),  # noqa: UP031
        f"{before}{[secret]}{after}",
        f"{before}{ {'value': secret} }{after}",
        f"{before}{secret:>60}{after}",
    ]
    guard = output.guard_stdout()
    try:
        for text in texts:
            output.echo(text)
            output.echo(text, err=True)
            sys.stdout.write(text)  # what click or rich write straight to the streams
            output.console().print(secret, markup=False, highlight=False)
            output.console(err=True).print([secret], markup=False, highlight=False)
    finally:
        output.release_stdout(guard)
    written = capsys.readouterr()
    assert "SNTL" not in written.out and "SNTL" not in written.err
    output.write_file(tmp_path / "out.txt", "\n".join(texts))
    assert "SNTL" not in (tmp_path / "out.txt").read_text()


def test_a_secret_is_refused_by_every_encoder_and_kept_by_copies() -> None:
    secret = Secret("hunter2-value")
    with pytest.raises(TypeError):
        json.dumps({"value": secret})
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert copy.deepcopy({"value": secret})["value"] is secret
    assert json.dumps(secret, default=sensitive.reveal_in_json) == '"hunter2-value"'
    with pytest.raises(AttributeError):
        secret._value = "changed"  # type: ignore[misc]
    assert secret == Secret("hunter2-value") and secret != Secret("other")
    assert secret != "hunter2-value"  # never equal to text: compare Secrets, or reveal


def test_text_is_written_as_it_is_whatever_the_secrets_hold(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """What the boundary writes does not depend on any secret: a text equal to the key in use
    (a guess a manifest wrote) is written as written, as it would be were the key another."""
    guard = output.guard_stdout()
    try:
        output.echo("LOG: a-long-enough-api-key-value, port = 3000, NODE_ENV = production")
    finally:
        output.release_stdout(guard)
    assert capsys.readouterr().out == (
        "LOG: a-long-enough-api-key-value, port = 3000, NODE_ENV = production\n"
    )
    output.write_file(tmp_path / "f.yaml", "version: 1\nX: a-long-enough-api-key-value\n")
    assert (tmp_path / "f.yaml").read_text() == "version: 1\nX: a-long-enough-api-key-value\n"
