"""Running a page's examples the way a reader would: bash, the installed `reconciler`, a fresh
directory holding a copy of `examples/` and the page's input files, the built-in emulator.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.docs.pages import ROOT, Example, Page

# Printed after each command with its exit status; `(exit N)` then gives `$?` back, so a
# documented `$ echo $?` sees the command's own status.
_SEPARATOR = "\x1edocs-example-exit"
TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class CommandRun:
    shell: str
    output: list[str]
    status: int


class SetupFailed(AssertionError):
    pass


def prepare_directory(page: Page, directory: Path) -> None:
    shutil.copytree(ROOT / "examples", directory / "examples")
    for file in page.files:
        target = directory / file.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file.text)


def run_example(example: Example, page: Page, directory: Path) -> list[CommandRun]:
    """Each command's merged stdout and stderr (in the order a terminal shows them) and its
    exit status; the setup commands first, each of which must succeed."""
    prepare_directory(page, directory)
    shells = [*example.setup, *(command.shell for command in example.commands)]
    script = ["set -o pipefail"]
    for shell in shells:
        script += [
            shell,
            f"__status=$?; printf '\\n{_SEPARATOR} %d\\n' $__status; (exit $__status)",
        ]
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", "\n".join(script)],
        cwd=directory,
        env=clean_environment(directory),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    runs = _split(completed.stdout, shells)
    for run in runs[: len(example.setup)]:
        if run.status != 0:
            raise SetupFailed(f"setup `{run.shell}` exited {run.status}:\n" + "\n".join(run.output))
    return runs[len(example.setup) :]


def generated_output(page: Page, command: str, directory: Path) -> str:
    """What a generated section's command prints on stdout (it must succeed)."""
    prepare_directory(page, directory)
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", command],
        cwd=directory,
        env=clean_environment(directory),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=True,
    ).stdout


def _split(output: str, shells: list[str]) -> list[CommandRun]:
    pieces = re.split(rf"\n{_SEPARATOR} (\d+)\n", output)
    texts, statuses = pieces[0:-1:2], pieces[1::2]
    assert len(statuses) == len(shells), f"the example stopped early:\n{output}"
    return [
        CommandRun(shell, text.rstrip("\n").split("\n") if text.strip() else [], int(status))
        for shell, text, status in zip(shells, texts, statuses, strict=True)
    ]


def clean_environment(directory: Path) -> dict[str, str]:
    """A clean environment: no RECONCILER_* setting of the machine leaks into an example."""
    home = directory / ".home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.pathsep.join([_scripts_directory(), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "COLUMNS": "80",
        "TERM": "dumb",
        # Each write reaches the pipe at once, so stdout and stderr interleave as on a terminal.
        "PYTHONUNBUFFERED": "1",
    }


def _scripts_directory() -> str:
    """Where the `reconciler` command of the environment running the tests is installed."""
    here = Path(sys.executable).parent
    if (here / "reconciler").exists():
        return str(here)
    found = shutil.which("reconciler")
    assert found, "the `reconciler` command is not installed (pip install -e '.[test]')"
    return str(Path(found).parent)
