"""Options and the error boundary shared by every command.

One place decides how a failure reaches the user: a `ReconcilerError` becomes
its message on stderr and its exit code; anything unexpected becomes a short
"internal error" line (never a traceback, which could carry a secret from a
local variable) unless `RECONCILER_DEBUG=1` asks for it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, overload

import click

from reconciler.credentials import API_KEY_ENV, FINGERPRINT_KEY_ENV
from reconciler.errors import ReconcilerError
from reconciler.report.output import echo

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")

ENV_BASE_URL = "RECONCILER_BASE_URL"
ENV_API_KEY = API_KEY_ENV
ENV_FINGERPRINT_KEY = FINGERPRINT_KEY_ENV
ENV_DEBUG = "RECONCILER_DEBUG"
ENV_PARALLELISM = "RECONCILER_PARALLELISM"
# Measured at 5, 50 and 100 ms of latency (docs/performance.md, "The default parallelism"):
# 32 takes a 1,000-app plan over 100 ms within 1.3 x its bound, and on a rate-limited platform
# the calls already in flight at its first 429 (at most this many) stay under 5% of a
# 200-app plan's requests; the client's pace does the rest.
DEFAULT_PARALLELISM = 32


def report_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn every failure of a command into a message and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except ReconcilerError as error:
            echo(f"Error: {error}", err=True)
            sys.exit(error.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            echo("Interrupted.", err=True)
            sys.exit(130)
        except Exception as error:  # the boundary: nothing escapes as a traceback
            if os.environ.get(ENV_DEBUG) == "1":
                raise
            echo(
                f"Error: internal error ({type(error).__name__}). This is a bug in reconciler; "
                f"rerun with {ENV_DEBUG}=1 to see the traceback.",
                err=True,
            )
            sys.exit(1)

    return wrapper


@overload
def manifest_option(func: F, *, required: bool = True) -> F: ...


@overload
def manifest_option(func: None = None, *, required: bool = True) -> Callable[[F], F]: ...


def manifest_option(func: F | None = None, *, required: bool = True) -> F | Callable[[F], F]:
    """`-f PATH`, repeatable: manifest files or directories.

    `required=False` is for commands that also take paths as arguments.
    """

    def decorate(f: F) -> F:
        return click.option(
            "-f",
            "--file",
            "files",
            multiple=True,
            required=required,
            type=click.Path(path_type=str),
            help="Manifest file or directory (every *.yaml/*.yml below it). Repeatable.",
        )(f)

    return decorate if func is None else decorate(func)


def allow_env_option(func: F) -> F:
    """`--allow-env PATTERN`, repeatable: the environment variables manifests may read."""

    def restrict(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
        if value:
            from reconciler.manifest.secret_sources import allow_env

            allow_env(value)

    return click.option(
        "--allow-env",
        "allowed_env",
        multiple=True,
        metavar="PATTERN",
        expose_value=False,
        callback=restrict,
        help="Let manifests read (fromEnv) only the environment variables matching PATTERN, a "
        "shell glob such as 'SHOP_*' (repeatable). For CI: the workflow, not the manifest, "
        "decides which variables a manifest may read. Without it, any variable but "
        "reconciler's own (RECONCILER_*).",
    )(func)


def connection_options(func: F) -> F:
    """`--base-url`, `--parallelism`, `-v`: how to reach the platform."""
    func = click.option(
        "--base-url",
        envvar=ENV_BASE_URL,
        help=f"Platform API base URL, or 'local[:PATH]' for the built-in emulator "
        f"(state in .reconciler/local-platform.json or PATH). Env: {ENV_BASE_URL}. "
        f"The API key is read from {ENV_API_KEY}.",
    )(func)
    func = click.option(
        "--parallelism",
        type=click.IntRange(1, 256),
        default=DEFAULT_PARALLELISM,
        envvar=ENV_PARALLELISM,
        show_default=True,
        help=f"Most API requests in flight at once. Env: {ENV_PARALLELISM}.",
    )(func)
    func = click.option(
        "-v",
        "--verbose",
        is_flag=True,
        help="Log each API call (operation, status, time) to stderr; the key is redacted.",
    )(func)
    return func
