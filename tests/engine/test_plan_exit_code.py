"""`plan --detailed-exitcode` exits 0 only when live state matches the manifest.

Drift jobs read 0 as "in sync". Live state that differs from the manifest is exit 2 whether
apply may change it or not: a delete that delete protection blocks, a replace refused without
`--allow-replace`, anything. The summary of every format says what the exit code says.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reconciler.cli.plan import EXIT_CHANGES, EXIT_NO_CHANGES, detailed_exit_code
from reconciler.plan.changes import Change, Plan
from reconciler.report.plan_json import render_markdown, render_text
from tests.engine import test_render as samples
from tests.fixtures.cli import write_manifest

NO_CHANGES = "No changes."
# one sample change of each action (create, update, delete, replace, blocked) and kind
BUILDERS: dict[str, Callable[[], Change]] = {
    name: getattr(samples, name)
    for name in (
        "app_blocked",
        "app_replace",
        "app_update",
        "domain_create",
        "domain_delete",
        "policies_update",
        "project_create",
        "secret_unknown_update",
        "settings_update",
        "variable_delete",
    )
}


@given(st.lists(st.sampled_from(sorted(BUILDERS)), max_size=4, unique=True))
def test_exit_code_and_summaries_agree_for_every_action_and_kind(names: list[str]) -> None:
    plan = Plan(changes=tuple(BUILDERS[name]() for name in names))
    code = detailed_exit_code(plan)
    assert code == (EXIT_CHANGES if names else EXIT_NO_CHANGES)
    in_sync = code == EXIT_NO_CHANGES
    assert (NO_CHANGES in render_text(plan)) == in_sync
    assert (NO_CHANGES in render_markdown(plan)) == in_sync


def _plan(cli: Any, path: Path, *flags: str) -> Any:
    return cli("plan", "-f", str(path), "--detailed-exitcode", *flags)


def test_a_plan_whose_only_change_is_a_blocked_delete_exits_2(cli, seed, tmp_path) -> None:
    seed.project("shop", "Shop")
    seed.app("shop", "vault", git={}, delete_protection=True)
    path = write_manifest(
        tmp_path, "version: 1\nprune: {apps: true}\nprojects:\n  shop: {name: Shop, apps: {}}\n"
    )
    result = _plan(cli, path)
    assert result.exit_code == EXIT_CHANGES, result.output
    assert NO_CHANGES not in result.stdout
    assert "1 deletion blocked by delete protection" in result.stdout


def test_a_blocked_replace_exits_2(cli, seed, tmp_path) -> None:
    seed.project("shop", "Shop")
    seed.app("shop", "web", git={}, delete_protection=True)
    path = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    name: Shop\n    apps:\n"
        "      web: {name: web, oci: {image: 'ghcr.io/acme/web:1'}}\n",
    )
    result = _plan(cli, path)
    assert result.exit_code == EXIT_CHANGES, result.output
    assert NO_CHANGES not in result.stdout


def test_a_replace_refused_without_allow_replace_exits_2(cli, seed, tmp_path) -> None:
    seed.project("shop", "Shop")
    seed.app("shop", "web", git={})
    path = write_manifest(
        tmp_path,
        "version: 1\nprojects:\n  shop:\n    name: Shop\n    apps:\n"
        "      web: {name: web, oci: {image: 'ghcr.io/acme/web:1'}}\n",
    )
    assert _plan(cli, path).exit_code == EXIT_CHANGES


def test_live_state_matching_the_manifest_exits_0(cli, seed, tmp_path) -> None:
    seed.project("shop", "Shop")
    seed.app("shop", "vault", git={}, delete_protection=True)
    path = write_manifest(tmp_path, "version: 1\nprojects:\n  shop: {name: Shop, apps: {}}\n")
    result = _plan(cli, path)
    assert result.exit_code == EXIT_NO_CHANGES, result.output
    assert NO_CHANGES in result.stdout
