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


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_a_path_that_is_not_a_regular_file_is_never_replaced(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "real.json"
    target.write_text("keep me")
    path = tmp_path / "out.json"
    if kind == "symlink":
        path.symlink_to(target)
    elif kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    before = os.lstat(path)
    with pytest.raises(files.NotARegularFile, match="not a regular file; refusing to replace it"):
        write_atomically(path, "new")
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "real.json"]


def test_an_absent_path_or_a_regular_file_is_replaceable(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    files.check_replaceable(path)
    path.write_text("old")
    files.check_replaceable(path)
    write_atomically(path, "new")
    assert path.read_text() == "new"
