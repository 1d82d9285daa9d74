"""`reconciler test`: run the manifest's gateway policy tests (offline, or --live)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import click

from reconciler.cli.colour import quiet_color_option
from reconciler.cli.interrupts import run_async
from reconciler.cli.options import connection_options, manifest_option, report_errors
from reconciler.report.output import echo

if TYPE_CHECKING:
    from reconciler.manifest.model import Manifest
    from reconciler.policy_tests.run import EnvironmentTests, TestResult


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
@quiet_color_option
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
    from reconciler.pipeline import load_manifest
    from reconciler.plan.targets import Scope
    from reconciler.platform.connect import is_local
    from reconciler.policy_tests.run import run_tests
    from reconciler.report import policy_tests as report

    scope = Scope.parse(targets)
    if via and not live:
        raise click.UsageError("--live-via is for --live runs: add --live, or drop --live-via")
    if via is not None:
        _check_via(via)
    if live and is_local(base_url):
        raise click.UsageError(
            "--live sends real requests, and --base-url local has no server to receive them: "
            "run `reconciler emulator` and pass its address as --base-url and --live-via"
        )
    manifest = load_manifest(files)
    echo_warnings(manifest.warnings)
    environments = list(environments_with_tests(manifest, scope.covers))
    if live:
        results = run_async(_live(environments, base_url, parallelism, verbose, via))
    else:
        results = run_tests(environments)
    if output_format == "json":
        echo(report.render_json(results, live=live), nl=False)
    elif output_format == "junit":
        echo(report.render_junit(results), nl=False)
    else:
        echo(report.render_text(results), nl=False)
    if any(result.status == "failed" for result in results):
        sys.exit(1)


def _check_via(via: str) -> None:
    import httpx

    try:
        url = httpx.URL(via)
    except httpx.InvalidURL as error:
        problem = f"it does not parse ({error})"
    else:
        if url.scheme in ("http", "https") and url.host:
            return
        problem = "it needs http:// or https:// and a host"
    raise click.UsageError(
        f"--live-via {via!r} is not a URL to send requests to: {problem} "
        "(e.g. http://127.0.0.1:8787)"
    )


def environments_with_tests(
    manifest: Manifest, covers: Callable[[str], bool]
) -> Iterator[EnvironmentTests]:
    """Every environment that holds tests and whose `policies.<address>` `covers` accepts,
    with its policy list compiled."""
    from reconciler.address import Address, TreePath
    from reconciler.manifest.model import listed
    from reconciler.policy_tests import compile_policies
    from reconciler.policy_tests.run import EnvironmentTests

    for project in manifest.projects:
        for app in listed(project.apps):
            for environment in app.environments:
                path = TreePath.of(project.slug, app.slug, environment.name)
                if environment.policy_tests and covers(str(Address("policies", path))):
                    policies = [p.to_api() for p in listed(environment.policies)]
                    yield EnvironmentTests(
                        str(path), compile_policies(policies), environment.policy_tests
                    )


async def _live(
    environments: list[EnvironmentTests],
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
