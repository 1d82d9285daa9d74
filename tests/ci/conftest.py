"""`workspace`: a repository checkout holding the quickstart example in platform/, for the
action's steps to run in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.ci.scripts import ROOT


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "platform").mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "quickstart.yaml", root / "platform" / "quickstart.yaml")
    return root
