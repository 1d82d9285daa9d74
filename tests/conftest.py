"""Shared pytest configuration. Fixtures live in tests/fixtures/, one module per concern."""

from collections.abc import Iterator

import pytest

pytest_plugins = [
    "tests.fixtures.emulator",
    "tests.fixtures.manifests",
    "tests.fixtures.cli",
]


@pytest.fixture(autouse=True)
def _forget_sensitive_values() -> Iterator[None]:
    """Each test starts with no registered secret, as each command does (reconciler.sensitive)."""
    from reconciler import sensitive

    sensitive.forget_all()
    yield
    sensitive.forget_all()
