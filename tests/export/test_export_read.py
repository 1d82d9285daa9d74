"""Reading live state for export: which calls, how few, and how results are grouped."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from reconciler.errors import ExportError
from reconciler.export import export_workspace, read_workspace
from tests.export.fakes import FakeClient, not_found

PROJECTS = {
    "shop": {"id": "proj_shop0001", "slug": "shop", "name": "Shop", "createdAt": 1},
    "blog": {"id": "proj_blog0001", "slug": "blog", "name": "Blog", "createdAt": 2},
}
APPS = {
    "shop": [
        {"id": "app_web00001", "slug": "web", "name": "Web", "oci": {"image": "nginx:1"}},
        {"id": "app_api00001", "slug": "api", "name": "API", "oci": {"image": "api:2"}},
    ],
    "blog": [{"id": "app_site0001", "slug": "site", "name": "Site", "oci": {"image": "ghost:5"}}],
}
DOMAINS = [
    {"id": "dom_1", "domain": "shop.example.com", "environmentId": "env_shop_web_production"},
    {"id": "dom_2", "domain": "beta.shop.example.com", "environmentId": "env_shop_web_preview"},
    {"id": "dom_3", "domain": "blog.example.com", "environmentId": "env_blog_site_production"},
]


def workspace_client() -> FakeClient:
    def environments(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"id": f"env_{body['project']}_{body['app']}_{slug}", "slug": slug, "kind": slug}
            for slug in ("preview", "production")  # the API's order is not the export's
        ]

    def variables(body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"key": f"{body['app'].upper()}_{body['environment'].upper()}", "kind": "writeonly"}
        ]

    def domains(body: dict[str, Any]) -> list[dict[str, Any]]:
        wanted = body.get("project")
        return [d for d in DOMAINS if wanted is None or d["environmentId"].split("_")[1] == wanted]

    return FakeClient(
        {
            "projects.listProjects": lambda body: list(PROJECTS.values()),
            "projects.getProject": lambda body: PROJECTS[body["project"]],
            "apps.listApps": lambda body: APPS[body["project"]],
            "environments.listEnvironments": environments,
            "environments.listEnvironmentVariables": variables,
            "gateway.listPolicies": lambda body: [],
            "domains.listDomains": domains,
        }
    )


def test_whole_workspace_reads_each_list_once_and_domains_workspace_wide() -> None:
    client = workspace_client()
    projects = asyncio.run(read_workspace(client))
    assert [p.slug for p in projects] == ["blog", "shop"]
    counts = Counter(client.operations())
    assert counts == {
        "projects.listProjects": 1,
        "apps.listApps": 2,
        "environments.listEnvironments": 3,
        "environments.listEnvironmentVariables": 6,
        "gateway.listPolicies": 6,
        "domains.listDomains": 1,
    }
    assert ("domains.listDomains", {}) in client.calls
    shop = next(p for p in projects if p.slug == "shop")
    web = next(a for a in shop.apps if a.slug == "web")
    assert [e.slug for e in web.environments] == ["production", "preview"]
    assert [d.host for d in web.environments[0].domains] == ["shop.example.com"]
    assert [d.host for d in web.environments[1].domains] == ["beta.shop.example.com"]
    api = next(a for a in shop.apps if a.slug == "api")
    assert all(e.domains == () for e in api.environments)


def test_named_projects_read_by_slug_with_domains_per_project() -> None:
    client = workspace_client()
    result = asyncio.run(export_workspace(client, ["shop", "shop"]))
    assert list(result.projects) == ["shop"]
    counts = Counter(client.operations())
    assert counts["projects.getProject"] == 1
    assert "projects.listProjects" not in counts
    assert ("domains.listDomains", {"project": "shop"}) in client.calls
    assert counts["domains.listDomains"] == 1
    envs = result.projects["shop"]["apps"]["web"]["environments"]
    assert envs["production"]["domains"] == ["shop.example.com"]
    assert envs["preview"]["domains"] == ["beta.shop.example.com"]
    assert sorted(s.env_name for s in result.secrets) == [
        "SHOP_API_PREVIEW_API_PREVIEW",
        "SHOP_API_PRODUCTION_API_PRODUCTION",
        "SHOP_WEB_PREVIEW_WEB_PREVIEW",
        "SHOP_WEB_PRODUCTION_WEB_PRODUCTION",
    ]


def test_unknown_project_is_a_clear_error() -> None:
    client = workspace_client()
    client.handlers["projects.getProject"] = not_found("projects.getProject")
    with pytest.raises(ExportError, match='project "nope" does not exist'):
        asyncio.run(read_workspace(client, ["nope"]))


def test_empty_workspace_makes_no_domain_call() -> None:
    client = FakeClient({"projects.listProjects": lambda body: []})
    assert asyncio.run(read_workspace(client)) == []
    assert client.operations() == ["projects.listProjects"]


def test_garbage_from_the_platform_is_reported_not_crashed_on() -> None:
    client = workspace_client()
    client.handlers["apps.listApps"] = lambda body: [{"name": "no slug"}]
    with pytest.raises(
        ExportError, match=r'project "shop": .*apps\.listApps: .* without a `id` string'
    ):
        asyncio.run(read_workspace(client, ["shop"]))


@pytest.mark.parametrize(
    ("variable", "refused"),
    [
        ({"kind": "recoverable", "value": "1"}, "without a `key` string"),
        ({"key": "K", "value": "1"}, "without a `kind` string"),
        ({"key": "K", "kind": "recoverable", "value": 1}, r"data\[0\]\.value is not a string"),
    ],
)
def test_a_malformed_variable_is_refused_naming_the_project_as_a_plan_refuses_it(
    variable: dict[str, Any], refused: str
) -> None:
    client = workspace_client()
    client.handlers["environments.listEnvironmentVariables"] = lambda body: [variable]
    with pytest.raises(
        ExportError, match=f'project "shop": .*environments.listEnvironmentVariables: .*{refused}'
    ):
        asyncio.run(read_workspace(client, ["shop"]))


def test_a_response_missing_a_member_is_an_error_naming_the_project() -> None:
    client = workspace_client()
    client.handlers["environments.listEnvironments"] = lambda body: [
        {"id": "env_1", "slug": "production", "regions": [{"name": "fra"}]}  # no replicas
    ]
    with pytest.raises(ExportError, match='project "shop": the platform returned an object'):
        asyncio.run(read_workspace(client, ["shop"]))


@pytest.mark.parametrize(
    ("policy", "refused"),
    [
        ({"name": "p", "enabled": "yes", "logging": {}}, "`enabled` that is not a boolean"),
        ({"name": "p", "match": {"path": {}}, "logging": {}}, "`match` that is not a list"),
        ({"name": "p", "firewall": "deny"}, "`firewall` that is not an object"),
        ({"enabled": True, "logging": {}}, "without a `name` string"),
    ],
)
def test_a_malformed_policy_is_refused_as_a_plan_refuses_it(
    policy: dict[str, Any], refused: str
) -> None:
    """Export once wrote these as it read them (`enabled: "yes"` as true); a plan refuses
    them, and export reads policies with the plan's reader."""
    client = workspace_client()
    client.handlers["gateway.listPolicies"] = lambda body: [policy]
    with pytest.raises(ExportError, match=f'project "shop": .*gateway.listPolicies: .*{refused}'):
        asyncio.run(read_workspace(client, ["shop"]))


@pytest.mark.parametrize("member", ["id", "slug"])
def test_an_environment_without_an_id_or_slug_string_is_refused(member: str) -> None:
    client = workspace_client()
    client.handlers["environments.listEnvironments"] = lambda body: [
        {"id": "env_1", "slug": "production", member: ""}
    ]
    with pytest.raises(ExportError, match=f"listEnvironments: .* without a `{member}` string"):
        asyncio.run(read_workspace(client, ["shop"]))


def test_a_domain_without_a_host_is_refused_and_hosts_compare_as_the_plan_compares_them() -> None:
    client = workspace_client()
    client.handlers["domains.listDomains"] = lambda body: [
        {"domain": "Shop.Example.com.", "environmentId": "env_shop_web_production"}
    ]
    (shop,) = asyncio.run(read_workspace(client, ["shop"]))
    assert [d.host for d in shop.apps[1].environments[0].domains] == ["shop.example.com"]
    client.handlers["domains.listDomains"] = lambda body: [{"environmentId": "env_1"}]
    with pytest.raises(ExportError, match=r"the workspace: .*domains\.listDomains: .* `domain`") as e:
        asyncio.run(read_workspace(client, ["shop"]))
    assert e.value.hint == "is the base URL the platform API? rerun with -v to see the calls"


def test_a_project_listing_export_cannot_read_says_so_with_the_hint() -> None:
    """Every answer export cannot read is an ExportError that says where and what to check,
    the workspace's own listings too (not an UnexpectedResponse without a hint)."""
    client = workspace_client()
    client.handlers["projects.listProjects"] = lambda body: [{"slug": "shop"}]
    with pytest.raises(ExportError, match=r"the workspace: .*listProjects: .* `id` string") as e:
        asyncio.run(read_workspace(client))
    assert e.value.hint == "is the base URL the platform API? rerun with -v to see the calls"
