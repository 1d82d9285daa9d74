"""The `write` fixture: a manifest from tests/checks/manifests.py in a temporary directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checks.manifests import manifest_text

Write = Callable[..., Path]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def write(name: str = "m.yaml", **parts: str) -> Path:
        path = tmp_path / name
        path.write_text(manifest_text(**parts))
        return path

    return write
