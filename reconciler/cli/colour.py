"""`--no-color`, on every command: no colour, bold or italics in what it prints (as NO_COLOR)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from reconciler.report import output

F = TypeVar("F", bound=Callable[..., Any])


def _turn_off(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        output.turn_colour_off()
    return value


def color_option(func: F) -> F:
    """`--no-color`; the command receives it as `no_color` (its renderers ask
    `reconciler.report.output.colour_allowed`, which the option turns off for the whole run)."""
    return click.option(
        "--no-color",
        is_flag=True,
        is_eager=True,
        callback=_turn_off,
        help="No colour, bold or italics (also: NO_COLOR set to anything).",
    )(func)


def quiet_color_option(func: F) -> F:
    """`--no-color` for a command that takes no parameter for it."""
    return click.option(
        "--no-color",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_turn_off,
        help="No colour, bold or italics (also: NO_COLOR set to anything).",
    )(func)
