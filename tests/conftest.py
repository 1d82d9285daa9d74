"""Shared pytest configuration. Fixtures live in tests/fixtures/, one module per concern."""

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

# No property test may fail for being slow: CI runs on 2 shared cores, where one example can
# take far longer than hypothesis's 200 ms default deadline, which then reports a "flaky" failure
# in place of the counterexample. The profile is loaded for every run (HYPOTHESIS_PROFILE picks
# another, e.g. `dev` for the default deadline while working on a slow property).
settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

pytest_plugins = [
    "tests.fixtures.emulator",
    "tests.fixtures.manifests",
    "tests.fixtures.cli",
    "tests.fixtures.workspace",
    "tests.fixtures.webhooks",
]


@pytest.fixture(autouse=True)
def _forget_sensitive_values() -> Iterator[None]:
    """Each test starts with no credential remembered and every environment variable allowed
    to manifests, as each command does (reconciler.sensitive, reconciler.manifest.secret_sources)."""
    from reconciler import sensitive
    from reconciler.manifest import secret_sources

    sensitive.forget_credentials()
    secret_sources.allow_env(None)
    yield
    sensitive.forget_credentials()
    secret_sources.allow_env(None)
