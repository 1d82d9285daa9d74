"""Shared pytest configuration. Fixtures live in tests/fixtures/, one module per concern."""

pytest_plugins = [
    "tests.fixtures.emulator",
    "tests.fixtures.manifests",
    "tests.fixtures.cli",
]
