"""The newer platform the forward-compatibility tests run against: the emulator keeping what
the spec does not list, with `gpu` kept in `runtime`, `cacheDir` in `build`, and a `staging`
environment on every app."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reconciler.emulator.app import EmulatorConfig
from tests.fixtures.emulator import API_KEY, EmulatorServer

NEWER = EmulatorConfig(
    dev_key=API_KEY,
    accept_unknown=True,
    unknown_settings={"gpu": "runtime", "cacheDir": "build"},
    extra_environments=("staging",),
)


@pytest.fixture
def newer_emulator(start_emulator: Callable[[EmulatorConfig], EmulatorServer]) -> EmulatorServer:
    return start_emulator(NEWER)
