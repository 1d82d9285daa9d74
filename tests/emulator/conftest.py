"""Fixtures of the emulator conformance suite."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.emulator.helpers import LONG_STEP_MS, make_app, make_project
from tests.fixtures.emulator import EmulatorServer, default_config


@pytest.fixture(scope="module")
def long_step_emulator() -> Iterator[EmulatorServer]:
    """The fixtures' emulator, but deployments and domains take one step per `LONG_STEP_MS` of
    its clock: they move only when a test advances the clock, however slowly a loaded machine
    serves the calls in between."""
    server = EmulatorServer(replace(default_config(), step_ms=LONG_STEP_MS))
    yield server
    server.stop()


@pytest.fixture
def web_on_the_test_clock(long_step_emulator: EmulatorServer) -> EmulatorServer:
    """`long_step_emulator`, reset, with the project `shop` and its git app `web`."""
    long_step_emulator.reset()
    make_project(long_step_emulator)
    make_app(long_step_emulator)
    return long_step_emulator
