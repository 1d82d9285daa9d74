"""When each kind of change reaches traffic (the platform API spec: settings, variables,
policies and a project slug from the next deployment; an app's new image deploys nothing)."""

from __future__ import annotations

import pytest

from reconciler.manifest.model import App, Manifest, Project, Prune
from reconciler.plan.changes import Action, Change, FieldDiff
from reconciler.plan.golive import environments_to_deploy, goes_live


def change(address: str, action: Action = Action.UPDATE, *paths: str) -> Change:
    kind = address.split(".")[0]
    diffs = tuple(FieldDiff(path, "a", "b") for path in paths)
    return Change(address, kind, action, {}, {}, diffs=diffs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (change("settings.shop/web/production", Action.CREATE, "runtime.vCpus"), "next_deployment"),
        (change("variable.shop/web/preview/A", Action.DELETE), "next_deployment"),
        (change("policies.shop/web/production", Action.UPDATE), "next_deployment"),
        (change("project.shop", Action.UPDATE, "slug"), "next_deployment"),
        (change("project.shop", Action.UPDATE, "name"), "at_apply"),
        (change("app.shop/web", Action.UPDATE, "oci.image"), "next_deployment"),
        (change("app.shop/web", Action.UPDATE, "git.defaultBranch"), "next_deployment"),
        (change("app.shop/web", Action.UPDATE, "name", "deleteProtection"), "at_apply"),
        (change("app.shop/web", Action.CREATE, "oci.image"), "at_apply"),
        (change("app.shop/web", Action.REPLACE, "sourceType"), "at_apply"),
        (change("domain.shop/web/production/a.example.com", Action.CREATE), "at_apply"),
        (change("app.shop/old", Action.BLOCKED), "at_apply"),
    ],
    ids=lambda v: v.address + ":" + v.action.value if isinstance(v, Change) else v,
)
def test_goes_live(made: Change, expected: str) -> None:
    assert goes_live(made) == expected


def test_environments_to_deploy_in_plan_order_without_repeats() -> None:
    manifest = Manifest(
        1,
        Prune(),
        (Project("shop", apps=(App("web"), App("api"))),),
    )
    changes = [
        change("variable.shop/web/production/A", Action.CREATE),
        change("settings.shop/web/production", Action.UPDATE),
        change("app.shop/api", Action.UPDATE, "oci.image"),
        change("project.shop", Action.UPDATE, "slug"),
        change("domain.shop/web/preview/a.example.com", Action.CREATE),
    ]
    assert list(map(str, environments_to_deploy(manifest, changes, lambda _: True))) == [
        "shop/web/production",
        "shop/api/production",
        "shop/api/preview",
        "shop/web/preview",
    ]
    # an image or a project slug deploys a preview only once it has had a deployment
    assert list(map(str, environments_to_deploy(manifest, changes, lambda _: False))) == [
        "shop/web/production",
        "shop/api/production",
    ]
