"""The published distribution: `python -m build` makes an sdist and, from it, a wheel; both pass
`twine check`; they hold the package, its schemas and py.typed and no tests; the wheel installs
into a fresh virtual environment and its `reconciler` command plans against the local emulator.

Building and installing take about a minute, so they happen once per test session (shared by
the xdist workers through a lock file) and the tests are marked slow; .ci/run still runs them.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

import pytest

import reconciler

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DISTRIBUTION = PROJECT["name"]
PACKAGE_DATA = ("reconciler/py.typed", "reconciler/schemas/manifest.schema.json")

JSON = ("--format", "json", "--detailed-exitcode")

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path
    venv: Path

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


def _run(*argv: str | Path, cwd: Path | None = None, timeout: int = 600) -> str:
    result = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{argv}: {result.stdout}\n{result.stderr}"
    return result.stdout


def _build_and_install(into: Path) -> None:
    dist = into / "dist"
    # Without --sdist/--wheel, build makes the sdist and then the wheel *from the sdist*,
    # so a file the sdist misses fails the wheel (or the tests below) here.
    _run(sys.executable, "-m", "build", "--outdir", dist, ROOT)
    (wheel,) = dist.glob("*.whl")
    _run(sys.executable, "-m", "venv", into / "venv")
    _run(into / "venv" / "bin" / "python", "-m", "pip", "install", "--quiet", wheel)
    (into / "done").touch()


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    # Every xdist worker has its own base temp under the session's root: the first worker to
    # take the lock builds there, the others find it done. (Without xdist the parent is shared
    # by every session, so the session's own base temp is used.)
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "reconciler-dist"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "done").exists():
            for leftover in ("dist", "venv"):
                shutil.rmtree(shared / leftover, ignore_errors=True)
            _build_and_install(shared)
    (sdist,) = (shared / "dist").glob("*.tar.gz")
    (wheel,) = (shared / "dist").glob("*.whl")
    return Built(sdist, wheel, shared / "venv")


def _wheel_names(built: Built) -> list[str]:
    with zipfile.ZipFile(built.wheel) as archive:
        return archive.namelist()


def _sdist_names(built: Built) -> list[str]:
    with tarfile.open(built.sdist) as archive:
        return [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]


def test_twine_check_passes(built: Built) -> None:
    output = _run(sys.executable, "-m", "twine", "check", "--strict", built.sdist, built.wheel)
    assert output.count("PASSED") == 2


def test_wheel_metadata_names_the_distribution_and_the_command(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        info = f"{DISTRIBUTION.replace('-', '_')}-{reconciler.__version__}.dist-info"
        metadata = HeaderParser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert metadata["Name"] == "reconciler-cli"
    assert metadata["Version"] == reconciler.__version__
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "reconciler = reconciler.cli:main" in entry_points


def test_wheel_holds_the_package_data_and_no_tests(built: Built) -> None:
    names = _wheel_names(built)
    for needed in PACKAGE_DATA:
        assert needed in names
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"reconciler", f"reconciler_cli-{reconciler.__version__}.dist-info"}
    assert not any("/tests/" in name or name.startswith("tests/") for name in names)


def test_sdist_holds_the_sources_and_no_tests(built: Built) -> None:
    names = _sdist_names(built)
    for needed in (*PACKAGE_DATA, "pyproject.toml", "README.md", "reconciler/cli/__init__.py"):
        assert needed in names
    assert not any(name.startswith(("tests/", "examples/", ".ci/", "action.yml")) for name in names)


def test_shipped_schema_is_the_repository_schema(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        shipped = archive.read("reconciler/schemas/manifest.schema.json").decode()
    assert shipped == (ROOT / "schemas" / "manifest.schema.json").read_text()


def test_installed_command_reports_its_version(built: Built, tmp_path: Path) -> None:
    output = _run(built.bin("reconciler"), "--version", cwd=tmp_path)
    assert output.strip() == f"reconciler, version {reconciler.__version__}"
    where = _run(
        built.bin("python"), "-c", "import reconciler; print(reconciler.__file__)", cwd=tmp_path
    )
    assert Path(where.strip()).is_relative_to(built.venv), "ran the source tree, not the wheel"


def test_installed_command_plans_against_the_local_emulator(built: Built, tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "quickstart.yaml", tmp_path / "platform.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECONCILER_")}
    result = subprocess.run(
        [built.bin("reconciler"), "plan", "-f", "platform.yaml", "--base-url", "local", *JSON],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr  # changes: the emulator starts empty
    plan = json.loads(result.stdout)
    assert "project.*.create_project" in plan["permissions"]
    assert not (tmp_path / ".reconciler").exists()  # a plan writes nothing


def test_installed_schema_command_prints_the_packaged_schema(built: Built, tmp_path: Path) -> None:
    output = _run(built.bin("reconciler"), "schema", cwd=tmp_path)
    assert json.loads(output) == json.loads((ROOT / "schemas" / "manifest.schema.json").read_text())
