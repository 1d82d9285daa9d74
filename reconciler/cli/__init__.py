"""The `reconciler` command group.

Commands are loaded lazily so that `reconciler validate` never imports the HTTP
client or the emulator, and each command lives in its own module under
`reconciler/cli/`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import os
import re
import sys
from typing import Any

import click

from reconciler import __version__, sensitive
from reconciler.cli.interrupts import interrupt_on_sigterm
from reconciler.collector import skip_collection_at_exit
from reconciler.errors import OutputError
from reconciler.report.output import (
    GuardedOutput,
    echo,
    guard_stdout,
    release_stdout,
    reset_colour,
)

# command name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "validate": "reconciler.cli.validate:validate",
    "schema": "reconciler.cli.validate:schema",
    "plan": "reconciler.cli.plan:plan",
    "apply": "reconciler.cli.apply:apply",
    "show": "reconciler.cli.show:show",
    "export": "reconciler.cli.export:export",
    "status": "reconciler.cli.status:status",
    "projects": "reconciler.cli.projects:projects",
    "emulator": "reconciler.cli.emulator:emulator",
    "test": "reconciler.cli.test:test",
}


def _allow_every_env() -> None:
    if "reconciler.manifest.secret_sources" in sys.modules:  # else nothing was restricted
        from reconciler.manifest.secret_sources import allow_env

        allow_env(None)


class LazyGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run a command and exit with its code, the same way for every command.

        A usage error exits 1 like every other error: click's own convention is 2, but
        `plan --detailed-exitcode` gives 2 the meaning "changes present" (Terraform's
        convention), so a mistyped flag in CI must not read as a plan with changes.
        SIGTERM (what CI sends to cancel a job) is handled as Ctrl-C. Standard output that
        cannot be written (a full disk, a closed pipe) is one error line and exit 1.
        """
        kwargs["standalone_mode"] = False
        sensitive.forget_credentials()  # one command per process: what it remembers is its own
        _allow_every_env()  # and what it lets manifests read: `--allow-env` says, when given
        reset_colour()  # and what --no-color turns off
        skip_collection_at_exit()
        output = guard_stdout()
        restore_sigterm = interrupt_on_sigterm()
        directory = _working_directory()
        try:
            code = _settle_output(output, self._run(*args, **kwargs))
        finally:
            restore_sigterm()
            release_stdout(output)
            if directory is not None:  # --chdir, for a caller in the same process (tests)
                with contextlib.suppress(OSError):
                    os.chdir(directory)
        sys.exit(code)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The group's own options, refusing Terraform's one-dash spelling of them (`-chdir`)
        with the two-dash one."""
        options = itertools.takewhile(lambda arg: arg.startswith("-"), args)
        _refuse_single_dash(ctx, self, list(options))
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command and its arguments; an option of it written with one dash, as Terraform
        writes them (`-out`, `-target=ADDRESS`), is refused naming the two-dash one: click
        would read `-out` as the short options `-o -u -t`, and `-file` as `-f ile`."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _refuse_single_dash(ctx, command, rest, name)
        return name, command, rest

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        """The exit code of the command (`sys.exit` included) or of click's refusal."""
        try:
            result = super().main(*args, **kwargs)
        except SystemExit as exit:
            return exit.code
        except click.ClickException as error:
            error.show()
            return 1
        except click.Abort:
            _echo_error("Aborted!")
            return 1
        except OutputError as error:  # raised outside a command's own error boundary
            _echo_error(f"Error: {error}")
            return 1
        return result if isinstance(result, int) else 0

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, target in COMMANDS.items() if _module_exists(target)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _module_exists(target):
            return None
        module_name, attribute = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command


def _settle_output(output: GuardedOutput, code: Any) -> Any:
    """Flush what is left; an output failure the command did not already fail on is reported
    and exits 1 (a command that failed has said why; an interrupt keeps its 130)."""
    with contextlib.suppress(OutputError):  # recorded in output.failure
        output.flush()
    if output.failure is None or output.failure_accepted or code not in (0, None, 2):
        return code
    _echo_error(f"Error: {output.failure}")
    return 1


def _echo_error(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr is gone too: the code is all
        echo(text, err=True)


_SINGLE_DASH = re.compile(r"-([a-z][a-z0-9-]+)(=.*)?", re.DOTALL)


def _refuse_single_dash(
    ctx: click.Context, command: click.Command, args: list[str], name: str | None = None
) -> None:
    """A `NoSuchOption` saying "did you mean --out" for the first `-out` in `args` (before a
    `--`) whose two-dash form is an option of `command`."""
    long_options = {opt for param in command.params for opt in getattr(param, "opts", ())}
    for arg in itertools.takewhile(lambda arg: arg != "--", args):
        found = _SINGLE_DASH.fullmatch(arg)
        if found is None or f"--{found[1]}" not in long_options:
            continue
        where = ctx
        if name is not None:  # the command's own usage line above the error
            where = command.make_context(name, [], parent=ctx, resilient_parsing=True)
        raise click.NoSuchOption(arg.partition("=")[0], possibilities=[f"--{found[1]}"], ctx=where)


def _working_directory() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # deleted under us: nothing to come back to
        return None


def _change_directory(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """`--chdir DIR`: every path of the command (manifests, plan files, the local platform's
    state) is then read from DIR, as with Terraform's `-chdir`."""
    if value is None:
        return
    try:
        os.chdir(value)
    except OSError as error:
        raise click.BadParameter(
            f"cannot change to {value!r}: {error.strerror or error}", ctx=ctx, param=param
        ) from None


def _module_exists(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reconciler")
@click.option(
    "--chdir",
    metavar="DIR",
    is_eager=True,
    expose_value=False,
    callback=_change_directory,
    help="Switch to DIR before running the command: its paths are read from there.",
)
def main() -> None:
    """Declarative infrastructure-as-code for the deployment platform.

    Keep projects, apps, environment settings, variables, domains and gateway
    policies in YAML; `plan` shows what will change, `apply` converges.

    \b
    Shell completion, e.g. for bash (zsh, fish: see the docs):
      eval "$(_RECONCILER_COMPLETE=bash_source reconciler)"
    """
