from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from reconciler import files
from reconciler.files import write_atomically


def test_writes_the_text_with_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    write_atomically(target, "{}", mode=0o600)
    assert target.read_text() == "{}"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "shop.yaml"
    target.write_text("old")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_atomically(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["shop.yaml"]
