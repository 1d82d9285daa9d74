"""Reading the CI files: YAML as CI services read it, and the `reconciler ...` commands of
their shell scripts, checked against the CLI's own option parser."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from reconciler.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
# where they go in a repository, so that no manifest directory holds them (a directory's
# manifests leave out hidden files and directories): `validate -f examples/` reads none
WORKFLOWS = ROOT / "examples" / ".github" / "workflows"
GITHUB = WORKFLOWS / "reconciler.yml"
DRIFT = WORKFLOWS / "reconciler-drift.yml"
MATRIX = WORKFLOWS / "reconciler-plans.yml"
GITLAB = ROOT / "examples" / ".gitlab-ci.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
MARKER = "<!-- reconciler-plan -->"
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "<", "&", "(", ")", "2>", "2>&1"}
# Values the scripts give these shell variables (DEPLOY_FLAG: its non-empty form) and arrays
# (`files`: the -f arguments the action builds from its `manifests` input; `allowed`: the
# --allow-env arguments from its `allow-env` input; `base` and `held`: the pull request's base
# and the reviewed digest).
SHELL_VARIABLES = {
    "MANIFESTS": "platform/",
    "DEPLOY_FLAG": "--deploy",
    "out": "out",
    "ALLOW_ENV": "SHOP_*",
}
SHELL_ARRAYS = {
    "files": ["-f", "platform/"],
    "extra": [],
    "checks": [],
    "base": ["--base-ref", "FETCH_HEAD"],
    "held": ["--reviewed", "calls:v1:presence:" + "0" * 64],
    "allowed": ["--allow-env", "SHOP_*"],
}


def load(path: Path) -> dict[str, Any]:
    return yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # `on:` stays a string key


def action_scripts() -> list[str]:
    return [step["run"] for step in load(ACTION)["runs"]["steps"] if "run" in step]


def gitlab_scripts() -> list[str]:
    pipeline = load(GITLAB)
    return [
        line
        for job in pipeline.values()
        if isinstance(job, dict) and "script" in job
        for line in job["script"]
    ]


def reconciler_invocations(script: str) -> list[list[str]]:
    """Each `reconciler ...` command of a shell script, as argv after `reconciler`."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # heredoc bodies (python) are not shell
            continue
        for start, token in enumerate(tokens):
            if token != "reconciler" or (
                start and tokens[start - 1] not in SHELL_OPERATORS | {"then", "do"}
            ):
                continue
            argv = []
            for arg in tokens[start + 1 :]:
                if arg in SHELL_OPERATORS or arg.startswith((">", "2>")):
                    break
                argv.append(arg)
            if argv and argv[-1].isdigit():  # `2>` split as `2` and `>`
                argv.pop()
            found.append([word for arg in argv for word in _expand(arg)])
    return found


def _expand(arg: str) -> list[str]:
    array = re.fullmatch(r"\$\{(\w+)\[@\]\}", arg)
    if array:
        return SHELL_ARRAYS[array.group(1)]
    return [re.sub(r"\$\{?(\w+)\}?", lambda m: SHELL_VARIABLES.get(m.group(1), m.group(0)), arg)]


def check_all_accepted(commands: list[list[str]]) -> None:
    """Check every command whose module exists; skip (naming them) the ones still missing."""
    missing = []
    for argv in commands:
        assert argv[0] in COMMANDS, f"`reconciler {argv[0]}` is not a command"
        if importlib.util.find_spec(COMMANDS[argv[0]].split(":")[0]) is None:
            missing.append(argv[0])
        else:
            check_accepted(argv)
    if missing:
        pytest.skip(f"not in this checkout yet: {', '.join(sorted(set(missing)))}")


def check_accepted(argv: list[str]) -> None:
    name, args = argv[0], argv[1:]
    command = main.get_command(click.Context(main), name)
    assert command is not None
    try:
        command.make_context(f"reconciler {name}", list(args))
    except click.UsageError as error:
        raise AssertionError(f"`reconciler {' '.join(argv)}` is refused: {error}") from None
