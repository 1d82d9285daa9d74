"""The `reconciler` command group.

Commands are loaded lazily so that `reconciler validate` never imports the HTTP
client or the emulator, and each command lives in its own module under
`reconciler/cli/`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from reconciler import __version__

# command name -> "module:attribute" of a click.Command
COMMANDS: dict[str, str] = {
    "validate": "reconciler.cli.validate:validate",
    "schema": "reconciler.cli.validate:schema",
    "plan": "reconciler.cli.plan:plan",
    "apply": "reconciler.cli.apply:apply",
    "export": "reconciler.cli.export:export",
    "status": "reconciler.cli.status:status",
    "emulator": "reconciler.cli.emulator:emulator",
}


class LazyGroup(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run a command; a usage error exits 1 like every other error.

        click's own convention is 2 for usage errors, but `plan --detailed-exitcode`
        gives 2 the meaning "changes present" (Terraform's convention), so a mistyped
        flag in CI must not read as a plan with changes.
        """
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.ClickException as error:
            error.show()
            sys.exit(1)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name, target in COMMANDS.items() if _module_exists(target)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not _module_exists(target):
            return None
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)


def _module_exists(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reconciler")
def main() -> None:
    """Declarative infrastructure-as-code for the deployment platform.

    Keep projects, apps, environment settings, variables, domains and gateway
    policies in YAML; `plan` shows what will change, `apply` converges.
    """
