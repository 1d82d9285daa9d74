"""A `fromEnv`/`fromFile` secret longer than the spec's 16384 characters stops plan and apply.

The platform refuses such a value with a 400 that fails the whole `setEnvironmentVariables`
batch (every variable of the environment sent with it), so reconciler refuses it before any
write, naming the variable's source, its length and the bound, never the value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cli import CliResult, Seed, shop_manifest, write_manifest

BOUND = 16384
MANIFEST = shop_manifest(
    """\
    web:
      name: Web
      oci: {image: ghcr.io/acme/web:1.0}
      environments:
        production:
          variables:
            NODE_ENV: production
            LOG_LEVEL: info
            BIG_SECRET: {fromEnv: SHOP_BIG_SECRET}
    """
)


def _secret(length: int) -> str:
    # a recognisable value, so a test would see any piece of it leak into the output
    return ("s3cr3t-" * (length // 7 + 1))[:length]


@pytest.fixture
def manifest(tmp_path: Path) -> str:
    return str(write_manifest(tmp_path, MANIFEST))


def _assert_refused(result: CliResult, value: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "fromEnv:SHOP_BIG_SECRET" in result.output, result.output
    assert "variable.shop/web/production/BIG_SECRET" in result.output, result.output
    assert f"{BOUND + 1} characters" in result.output, result.output
    assert f"at most {BOUND}" in result.output, result.output
    assert "s3cr3t" not in result.output and value[:40] not in result.output


def test_a_secret_one_character_too_long_is_refused_before_any_write(
    cli: Any, seed: Seed, manifest: str
) -> None:
    value = _secret(BOUND + 1)
    result = cli("apply", "-f", manifest, "--auto-approve", env={"SHOP_BIG_SECRET": value})
    _assert_refused(result, value)
    assert seed.writes() == []


@pytest.mark.parametrize("fingerprint_key", [None, "a-fingerprint-key-of-the-test"])
def test_a_plan_says_nothing_of_a_secrets_length(
    cli: Any, manifest: str, fingerprint_key: str | None
) -> None:
    """Plan reads no secret without the fingerprint key, and with it reads one only to
    fingerprint it: a value too long is apply's to refuse, so the plan reads the same."""
    shown = [
        cli("plan", "-f", manifest, env={"SHOP_BIG_SECRET": _secret(length),
                                          "RECONCILER_FINGERPRINT_KEY": fingerprint_key})
        for length in (BOUND, BOUND + 1)
    ]  # fmt: skip
    assert shown[0].exit_code == 0, shown[0].output
    assert (shown[0].exit_code, shown[0].output) == (shown[1].exit_code, shown[1].output)


def test_a_secret_of_exactly_the_bound_is_applied(
    cli: Any, seed: Seed, emulator: Any, manifest: str
) -> None:
    value = _secret(BOUND)
    env = {"SHOP_BIG_SECRET": value}
    planned = cli("plan", "-f", manifest, env=env)
    assert planned.exit_code == 0, planned.output
    applied = cli("apply", "-f", manifest, "--auto-approve", env=env)
    assert applied.exit_code == 0, applied.output
    assert "s3cr3t" not in planned.output + applied.output
    tables = emulator.state()["variables"].values()  # environment ID -> key -> variable
    assert [table["BIG_SECRET"]["value"] == value for table in tables if table] == [True]


def test_the_bound_counts_characters_not_bytes(cli: Any, seed: Seed, manifest: str) -> None:
    """16384 two-byte characters are a valid value: the spec bounds characters."""
    value = "é" * BOUND
    result = cli("apply", "-f", manifest, "--auto-approve", env={"SHOP_BIG_SECRET": value})
    assert result.exit_code == 0, result.output
