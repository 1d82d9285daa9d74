"""`reconciler test`: run the manifest's gateway policy tests (offline, or --live)."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from reconciler.cli.options import connection_options, manifest_option, report_errors

if TYPE_CHECKING:
    from reconciler.policy_tests.run import Environment, TestResult


@click.command("test")
@manifest_option
@click.option(
    "--target",
    "targets",
    multiple=True,
    metavar="ADDRESS",
    help="Only the tests of environments under this address (project.shop, app.shop/web, "
    "policies.shop/web/production). Repeatable.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "junit"]),
    default="text",
    show_default=True,
    help="text: a line per test, why a failing one failed; json: format_version 1.0; "
    "junit: JUnit XML, one testsuite per environment.",
)
@click.option(
    "--live",
    is_flag=True,
    help="Send each test's request to the gateway in front of the environment's serving "
    "deployment (reads the platform; needs --base-url) instead of evaluating it offline.",
)
@click.option(
    "--live-via",
    "via",
    metavar="URL",
    help="With --live: send to URL with the environment's host in the Host header, instead "
    "of to https://HOST (the emulator: its own address, e.g. http://127.0.0.1:8787).",
)
@connection_options
@report_errors
def test(
    files: tuple[str, ...],
    targets: tuple[str, ...],
    output_format: str,
    live: bool,
    via: str | None,
    base_url: str | None,
    parallelism: int,
    verbose: bool,
) -> None:
    """Evaluate the manifest's `policyTests` against its ordered gateway policies, exactly as
    the platform's gateway runs them; a failing test says which policy decided and why.
    Exit 0 when every test passes, 1 when one fails or the manifest is invalid.

    \b
    Examples:
      reconciler test -f platform/
      reconciler test -f platform/ --format junit > policy-tests.xml
      reconciler test -f platform/ --live --base-url https://api.example.com
    """
    from reconciler.cli.validate import echo_warnings
    from reconciler.engine.targets import Scope
    from reconciler.manifest.validate import load_manifest
    from reconciler.platform.connect import LOCAL
    from reconciler.policy_tests import report
    from reconciler.policy_tests.run import environments_with_tests, run_tests

    scope = Scope.parse(targets)
    if via and not live:
        raise click.UsageError("--live-via is for --live runs: add --live, or drop --live-via")
    if live and (base_url or "").strip().partition(":")[0] == LOCAL:
        raise click.UsageError(
            "--live sends real requests, and --base-url local has no server to receive them: "
            "run `reconciler emulator` and pass its address as --base-url and --live-via"
        )
    manifest = load_manifest(files)
    echo_warnings(manifest.warnings)
    environments = list(environments_with_tests(manifest, scope.covers))
    if live:
        results = asyncio.run(_live(environments, base_url, parallelism, verbose, via))
    else:
        results = run_tests(environments)
    if output_format == "json":
        click.echo(report.render_json(results, live=live), nl=False)
    elif output_format == "junit":
        click.echo(report.render_junit(results), nl=False)
    else:
        click.echo(report.render_text(results), nl=False)
    if any(result.status == "failed" for result in results):
        sys.exit(1)


async def _live(
    environments: list[Environment],
    base_url: str | None,
    parallelism: int,
    verbose: bool,
    via: str | None,
) -> list[TestResult]:
    from reconciler.platform.connect import connect
    from reconciler.policy_tests.live import run_live

    client = connect(base_url, parallelism=parallelism, verbose=verbose, read_only=True)
    async with client:
        return await run_live(environments, client, via=via)
