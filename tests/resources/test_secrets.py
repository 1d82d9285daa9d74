"""secrets.py: sources, fingerprints, description markers, references."""

from __future__ import annotations

import pytest

from reconciler.credentials import CREDENTIALS
from reconciler.errors import UsageError
from reconciler.manifest.model import FromEnv
from reconciler.manifest.secret_sources import from_file
from reconciler.plan import secrets
from reconciler.plan.changes import SecretRef
from reconciler.sensitive import Secret


def _text(value: Secret | None) -> str | None:
    return None if value is None else value.reveal()


def test_from_env_is_read_and_missing_or_empty_is_none(monkeypatch):
    monkeypatch.setenv("PLAN_TEST_SECRET", "s3cret")
    monkeypatch.setenv("PLAN_TEST_EMPTY", "")
    monkeypatch.delenv("PLAN_TEST_UNSET", raising=False)
    assert _text(secrets.resolve_secret(FromEnv("PLAN_TEST_SECRET"))) == "s3cret"
    assert secrets.resolve_secret(FromEnv("PLAN_TEST_EMPTY")) is None
    assert secrets.resolve_secret(FromEnv("PLAN_TEST_UNSET")) is None


def test_from_file_keeps_a_trailing_newline_and_missing_is_none(tmp_path):
    (tmp_path / "tls.key").write_text("line one\nline two\n")
    assert _text(secrets.resolve_secret(from_file("tls.key", tmp_path))) == "line one\nline two\n"
    assert secrets.resolve_secret(from_file("nope", tmp_path)) is None


def test_from_file_reads_windows_line_ends_as_newlines(tmp_path):
    """Universal newlines, as the README says: CRLF and a lone CR are read as LF."""
    (tmp_path / "crlf.key").write_bytes(b"one\r\ntwo\rthree\r\n")
    assert _text(secrets.resolve_secret(from_file("crlf.key", tmp_path))) == "one\ntwo\nthree\n"


def test_a_binary_file_is_an_error_naming_the_declared_path_only(tmp_path):
    (tmp_path / "declared").mkdir()
    (tmp_path / "declared" / "bin.key").write_bytes(b"\xff\xfe\x00secretbytes")
    with pytest.raises(secrets.SecretUnavailable) as raised:
        secrets.resolve_secret(from_file("declared/bin.key", tmp_path))
    assert "declared/bin.key" in str(raised.value)
    assert "secretbytes" not in str(raised.value)


ADDRESS = "variable.shop/web/production/TOKEN"


def test_fingerprint_is_keyed_truncated_and_bound_to_the_variables_address():
    value = Secret("value")
    fp = secrets.fingerprint(b"key", ADDRESS, value)
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fp == secrets.fingerprint(b"key", ADDRESS, Secret("value"))
    assert fp != secrets.fingerprint(b"other", ADDRESS, value)
    assert fp != secrets.fingerprint(b"key", "variable.shop/web/production/OTHER", value)
    assert fp != secrets.fingerprint(b"key", "variable.shop/web/preview/TOKEN", value)
    assert fp != secrets.fingerprint(b"key", "variable.shop/api/production/TOKEN", value)
    assert fp != secrets.fingerprint(b"key", "variable.blog/web/production/TOKEN", value)
    assert fp != secrets.fingerprint(b"key", ADDRESS, Secret("value2"))
    assert "value" not in fp


@pytest.mark.parametrize("description", [None, "", "api token", "x" * 232, "y" * 255])
def test_fingerprint_marker_round_trips_and_fits_255(description):
    marked = secrets.with_fingerprint(description, "0123456789abcdef")
    assert len(marked) <= 255
    user, fp = secrets.split_fingerprint(marked)
    assert fp == "0123456789abcdef"
    if description and len(description) <= 232:
        assert user == description
    if not description:
        assert user is None


def test_split_without_a_marker_returns_the_description():
    assert secrets.split_fingerprint("plain [fp2:nothex]") == ("plain [fp2:nothex]", None)
    assert secrets.split_fingerprint(None) == (None, None)
    assert secrets.FINGERPRINT_SUFFIX_LENGTH == 23


def test_a_first_form_marker_is_split_off_and_told_apart():
    """Descriptions written before fingerprints were bound to the address end in `[fp:...]`:
    the description is the user's without it, and the plan knows to replace it once."""
    old = "api token [fp:0123456789abcdef]"
    assert secrets.split_fingerprint(old) == ("api token", "0123456789abcdef")
    assert secrets.first_form_fingerprint(old)
    assert not secrets.first_form_fingerprint("api token [fp2:0123456789abcdef]")
    assert not secrets.first_form_fingerprint("api token")
    assert not secrets.first_form_fingerprint(None)


def test_resolve_ref_reads_the_source_now_and_names_it_when_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAN_TEST_REF", "v1")
    assert secrets.resolve_ref(SecretRef("fromEnv:PLAN_TEST_REF")).reveal() == "v1"
    (tmp_path / "f").write_text("file-value")
    reference = secrets.reference_for(from_file("f", tmp_path))
    assert secrets.resolve_ref(SecretRef(reference)).reveal() == "file-value"
    monkeypatch.delenv("PLAN_TEST_REF")
    with pytest.raises(secrets.SecretUnavailable) as raised:
        secrets.resolve_ref(SecretRef("fromEnv:PLAN_TEST_REF"))
    assert "the environment variable PLAN_TEST_REF is not set" in str(raised.value)
    assert raised.value.exit_code == 1
    (tmp_path / "f").unlink()
    with pytest.raises(secrets.SecretUnavailable, match=r"the file f \(fromFile 'f'\) does not"):
        secrets.resolve_ref(SecretRef(reference))


def test_resolve_ref_reads_only_files_a_manifest_declares(tmp_path):
    """A saved plan edited to send another file's content reads nothing: the reference must be
    one the manifests planned in this process declare, read under their rules."""
    (tmp_path / "undeclared.key").write_text("not-for-the-platform")
    with pytest.raises(secrets.SecretUnavailable) as raised:
        secrets.resolve_ref(SecretRef(f"fromFile:{tmp_path / 'undeclared.key'}"))
    assert "which no manifest declares now" in str(raised.value)
    assert "not-for-the-platform" not in str(raised.value)


def test_manifest_literals_resolve_in_the_process_that_planned_them():
    ref = secrets.register_manifest_value("variable.s/a/production/K", Secret("literal-secret"))
    assert ref == "manifest:variable.s/a/production/K"
    assert secrets.resolve_ref(SecretRef(ref)).reveal() == "literal-secret"
    with pytest.raises(secrets.SecretUnavailable):
        secrets.resolve_ref(SecretRef("manifest:variable.s/a/production/UNKNOWN"))


def test_ref_matches_checks_the_plan_time_fingerprint():
    fp = secrets.fingerprint(b"k", ADDRESS, Secret("v"))
    ref = SecretRef("fromEnv:X", fp)
    assert secrets.ref_matches(ref, Secret("v"), key=b"k", address=ADDRESS)
    assert not secrets.ref_matches(ref, Secret("changed"), key=b"k", address=ADDRESS)
    assert not secrets.ref_matches(ref, Secret("v"), key=b"k", address=ADDRESS + "2")
    assert secrets.ref_matches(SecretRef("fromEnv:X"), Secret("x"), key=b"k", address=ADDRESS)


@pytest.mark.parametrize("credential", sorted(CREDENTIALS))
def test_the_tools_own_credentials_are_never_read_as_a_secret(monkeypatch, credential):
    """validate refuses them in a manifest; the reader refuses them too, so a saved plan edited
    to send `fromEnv:RECONCILER_API_KEY` cannot either."""
    monkeypatch.setenv(credential, "the-credential-value-0123456789")
    with pytest.raises(secrets.SecretUnavailable) as raised:
        secrets.resolve_ref(SecretRef(f"fromEnv:{credential}"))
    assert f"{credential} holds reconciler's own" in str(raised.value)
    assert "the-credential-value" not in str(raised.value)


def test_a_fingerprint_key_needs_16_characters():
    assert secrets.fingerprint_key_from(None) is None and secrets.fingerprint_key_from("") is None
    assert secrets.fingerprint_key_from("k" * 16) == b"k" * 16
    assert secrets.fingerprint_key_from("é" * 16) == "é".encode() * 16  # characters, not bytes
    with pytest.raises(UsageError) as raised:
        secrets.fingerprint_key_from("fifteen-chars!!")
    assert raised.value.exit_code == 1
    assert "RECONCILER_FINGERPRINT_KEY has 15 characters" in str(raised.value)
    assert "fifteen-chars" not in str(raised.value)
