"""`reconciler show`: a saved plan, rendered again without the platform (Terraform's `show`).

Also where a plan's rendering options live, shared with `reconciler plan`: the format, every
permission string or the fewest that cover them, where a cut pull-request comment says the
whole plan is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reconciler.cli.colour import color_option
from reconciler.cli.options import report_errors
from reconciler.report import output

if TYPE_CHECKING:
    from reconciler.plan.changes import Plan

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Shown:
    """How a plan is rendered: `--format`, `--show-permissions`, `--full-plan-url`."""

    output_format: str
    show_permissions: bool = False
    full_plan_url: str | None = None


def show_options(func: F) -> F:
    """`--show-permissions` and `--full-plan-url`."""
    func = click.option(
        "--full-plan-url",
        metavar="URL",
        help="With --format markdown: where the whole plan can be read (e.g. the CI run's "
        "artifacts), named in the comment when it leaves something out to fit GitHub's limit.",
    )(func)
    func = click.option(
        "--show-permissions",
        is_flag=True,
        help="List every permission string apply needs, ID-specific where the object exists, "
        "instead of the fewest that cover them (reads and writes on every object as wildcards).",
    )(func)
    return func


def render_plan(plan: Plan, shown: Shown) -> str:
    """The plan in `shown.output_format` (text coloured only on a terminal, with colour
    allowed), ending with a line break."""
    from reconciler.report import plan_json as render

    if shown.output_format == "sarif":
        from reconciler.checks.sarif import render_sarif

        return render_sarif(plan.findings, overrides=plan.overrides)
    if shown.output_format == "json":
        return render.render_json(plan)
    if shown.output_format == "markdown":
        text = render.render_markdown(
            plan, show_permissions=shown.show_permissions, full_plan_url=shown.full_plan_url
        )
        return text if text.endswith("\n") else text + "\n"
    colour = output.colour_allowed() and output.stdout_is_terminal()
    return render.render_text(plan, color=colour, show_permissions=shown.show_permissions)


@click.command()
@click.argument("planfile", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
    help="text as `plan` prints it, markdown for a pull-request comment, json (the documented "
    "plan JSON).",
)
@show_options
@color_option
@report_errors
def show(
    planfile: Path,
    output_format: str,
    show_permissions: bool,
    full_plan_url: str | None,
    no_color: bool,
) -> None:
    """Show a plan saved by `plan --out` (or the JSON of `plan --format json`) as `plan`
    printed it: no platform, no key and no manifest needed.

    A saved plan's checksum is checked first; what it holds is what `apply PLANFILE` applies
    (after checking it against live state again).

    \b
    Examples:
      reconciler show plan.json
      reconciler show plan.json --format markdown > comment.md
    """
    from reconciler import pipeline

    plan = pipeline.read_plan(planfile, str(planfile))
    shown = Shown(output_format, show_permissions, full_plan_url)
    output.echo_plan(plan, render_plan(plan, shown))
