"""Live resources (spec-shaped dicts) -> manifest data: defaults left out, order, secrets."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from reconciler.errors import ExportError
from reconciler.export import (
    ExportedApp,
    ExportedEnvironment,
    ExportedProject,
    ExportOptions,
    SecretNames,
    build_export,
    exported_environment,
    policy_entry,
)
from reconciler.plan.kinds.domains import parse_domains
from reconciler.plan.kinds.policies import read_policies
from tests.export.fakes import exported_app, exported_project


def environment(slug: str = "production", **resource: Any) -> ExportedEnvironment:
    variables = resource.pop("variables", [])
    policies = resource.pop("policies", [])
    domains = resource.pop("domains", [])
    return exported_environment(
        {"id": f"env_{slug}00", "slug": slug, "kind": slug, "description": "", **resource},
        variables,
        policies,
        parse_domains(domains),
    )


def app(*environments: ExportedEnvironment, **resource: Any) -> ExportedApp:
    base = {"id": "app_web00001", "slug": "web", "name": "Web", "createdAt": 1}
    return exported_app({**base, **resource}, *environments)


def project(*apps: ExportedApp, **resource: Any) -> ExportedProject:
    base = {"id": "proj_shop0001", "slug": "shop", "name": "Shop", "createdAt": 1}
    return exported_project({**base, **resource}, *apps)


def exported(live: ExportedProject, **options: Any) -> dict[str, Any]:
    return build_export([live], ExportOptions(**options)).projects[live.slug]


def one_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """The manifest entry of one policy as `gateway.listPolicies` answers it."""
    return policy_entry(read_policies([policy])[0])


def web_production(live: ExportedProject, **options: Any) -> dict[str, Any]:
    return exported(live, **options)["apps"]["web"]["environments"]["production"]


def test_project_and_app_keys_in_the_order_people_write_them() -> None:
    live = project(
        app(
            environment(regions=[{"name": "fra", "replicas": {"min": 1, "max": 2}}]),
            git={"repository": "acme/web", "defaultBranch": "main"},
            sourceType="git",
            deleteProtection=True,
            currentDeploymentId="d_1",
            isRolledBack=False,
        ),
        deleteProtection=True,
        updatedAt=5,
    )
    entry = exported(live)
    assert list(entry) == ["name", "id", "deleteProtection", "apps"]
    web = entry["apps"]["web"]
    assert list(web) == ["name", "id", "deleteProtection", "git", "environments"]
    assert web["git"] == {"repository": "acme/web", "defaultBranch": "main"}
    assert entry["id"] == "proj_shop0001" and web["id"] == "app_web00001"


def test_ids_left_out_on_request_and_false_protection_omitted() -> None:
    entry = exported(project(app(oci={"image": "ghcr.io/acme/web:1.4.2"})), pin_ids=False)
    assert entry == {
        "name": "Shop",
        "apps": {"web": {"name": "Web", "oci": {"image": "ghcr.io/acme/web:1.4.2"}}},
    }


def test_app_without_a_connected_repository_has_no_source() -> None:
    web = exported(project(app(sourceType="git")), pin_ids=False)["apps"]["web"]
    assert web == {"name": "Web"}


def test_settings_at_spec_stated_defaults_are_left_out_and_the_rest_written_as_read() -> None:
    """storageMib 0 ("0 means none") and the healthcheck defaults are the spec's; a root
    directory of `.`, no watch paths and no command are only what a platform may fill in."""
    env = environment(
        build={"rootDirectory": ".", "watchPaths": [], "autoDeploy": True},
        runtime={
            "port": 3000,
            "vCpus": 1.0,
            "memoryMib": 512,
            "storageMib": 0,
            "command": [],
            "shutdownSignal": "SIGTERM",
            "upstreamProtocol": "http1",
            "healthcheck": {
                "method": "GET",
                "path": "/healthz",
                "intervalSeconds": 10,
                "timeoutSeconds": 5,
                "failureThreshold": 3,
                "initialDelaySeconds": 0,
            },
        },
    )
    production = web_production(project(app(env)))
    assert production["build"] == {"rootDirectory": ".", "watchPaths": [], "autoDeploy": True}
    assert production["runtime"] == {
        "port": 3000,
        "vCpus": 1,
        "memoryMib": 512,
        "command": [],
        "healthcheck": {"method": "GET", "path": "/healthz"},
        "shutdownSignal": "SIGTERM",
        "upstreamProtocol": "http1",
    }
    assert isinstance(production["runtime"]["vCpus"], int)


def test_settings_that_differ_from_defaults_are_all_written() -> None:
    env = environment(
        build={
            "dockerfile": "Dockerfile.prod",
            "rootDirectory": "services/web",
            "buildCommand": "npm run build",
            "watchPaths": ["src/**", "package.json"],
            "autoDeploy": False,
        },
        runtime={
            "vCpus": 0.25,
            "storageMib": 1024,
            "command": ["node", "server.js"],
            "openapiSpecPath": "/openapi.json",
            "healthcheck": {
                "method": "POST",
                "path": "/ping",
                "intervalSeconds": 30,
                "timeoutSeconds": 2,
                "failureThreshold": 5,
                "initialDelaySeconds": 15,
            },
        },
    )
    production = web_production(project(app(env)))
    assert list(production["build"]) == [
        "dockerfile",
        "rootDirectory",
        "buildCommand",
        "watchPaths",
        "autoDeploy",
    ]
    assert production["build"]["autoDeploy"] is False
    assert production["runtime"]["vCpus"] == 0.25
    assert production["runtime"]["storageMib"] == 1024
    assert production["runtime"]["command"] == ["node", "server.js"]
    assert production["runtime"]["openapiSpecPath"] == "/openapi.json"
    assert production["runtime"]["healthcheck"] == {
        "method": "POST",
        "path": "/ping",
        "intervalSeconds": 30,
        "timeoutSeconds": 2,
        "failureThreshold": 5,
        "initialDelaySeconds": 15,
    }


def test_environment_keys_in_manifest_order_and_empty_environments_dropped() -> None:
    production = environment(
        policies=[
            {"id": "pol_1", "name": "deny", "enabled": True, "firewall": {"action": "ACTION_DENY"}}
        ],
        domains=[{"domain": "www.Shop.example.com"}, {"domain": "shop.example.com"}],
        variables=[{"key": "A", "kind": "recoverable", "value": "1", "createdAt": 1}],
        regions=[{"name": "fra", "replicas": {"min": 2, "max": 6}}],
        runtime={"port": 8080},
        build={"buildCommand": "make"},
    )
    preview = environment("preview", runtime={"storageMib": 0})  # only defaults: nothing to say
    web = exported(project(app(production, preview)))["apps"]["web"]
    assert list(web["environments"]) == ["production"]
    assert list(web["environments"]["production"]) == [
        "build",
        "runtime",
        "regions",
        "variables",
        "domains",
        "policies",
    ]
    assert web["environments"]["production"]["domains"] == [
        "shop.example.com",
        "www.shop.example.com",
    ]
    assert web["environments"]["production"]["regions"] == [
        {"name": "fra", "replicas": {"min": 2, "max": 6}}
    ]


def test_variables_literal_described_and_write_only() -> None:
    env = environment(
        variables=[
            {"key": "STRIPE_KEY", "kind": "writeonly", "createdAt": 1},
            {"key": "NODE_ENV", "kind": "recoverable", "value": "production", "createdAt": 1},
            {
                "key": "API_URL",
                "kind": "recoverable",
                "value": "https://api",
                "description": "backend",
            },
            {"key": "TLS_KEY", "kind": "writeonly", "description": "edge cert", "createdAt": 1},
        ]
    )
    result = build_export([project(app(env))])
    variables = result.projects["shop"]["apps"]["web"]["environments"]["production"]["variables"]
    assert list(variables) == ["API_URL", "NODE_ENV", "STRIPE_KEY", "TLS_KEY"]
    assert variables["NODE_ENV"] == "production"
    assert variables["API_URL"] == {"value": "https://api", "description": "backend"}
    assert variables["STRIPE_KEY"] == {"fromEnv": "SHOP_WEB_PRODUCTION_STRIPE_KEY"}
    assert variables["TLS_KEY"] == {
        "fromEnv": "SHOP_WEB_PRODUCTION_TLS_KEY",
        "description": "edge cert",
    }
    assert [(s.env_name, s.address) for s in result.secrets] == [
        ("SHOP_WEB_PRODUCTION_STRIPE_KEY", "variable.shop/web/production/STRIPE_KEY"),
        ("SHOP_WEB_PRODUCTION_TLS_KEY", "variable.shop/web/production/TLS_KEY"),
    ]


def test_fingerprint_marker_never_exported_as_part_of_the_description() -> None:
    secrets = pytest.importorskip("reconciler.plan.secrets")
    marked = secrets.with_fingerprint("stripe live key", "0123456789abcdef")
    assert marked != "stripe live key"
    bare = secrets.with_fingerprint(None, "0123456789abcdef")
    env = environment(
        variables=[
            {"key": "STRIPE_KEY", "kind": "writeonly", "description": marked},
            {"key": "OTHER", "kind": "writeonly", "description": bare},
        ]
    )
    variables = web_production(project(app(env)))["variables"]
    assert variables["STRIPE_KEY"] == {
        "fromEnv": "SHOP_WEB_PRODUCTION_STRIPE_KEY",
        "description": "stripe live key",
    }
    assert variables["OTHER"] == {"fromEnv": "SHOP_WEB_PRODUCTION_OTHER"}


def test_generated_names_are_valid_and_unique() -> None:
    names = SecretNames()
    assert names.name_for("a-b", "c", "production", "K") == "A_B_C_PRODUCTION_K"
    assert names.name_for("a", "b-c", "production", "K") == "A_B_C_PRODUCTION_K_2"
    assert names.name_for("a", "b.c", "production", "K") == "A_B_C_PRODUCTION_K_3"
    assert names.name_for("3d-shop", "web", "preview", "key") == "_3D_SHOP_WEB_PREVIEW_KEY"
    assert len({s.env_name for s in names.inputs}) == 4


def test_policy_without_ids_and_defaults_with_every_match_member() -> None:
    live = {
        "id": "pol_9",
        "name": "admin",
        "enabled": False,
        "match": [
            {"path": {"path": {"ignoreCase": False, "prefix": "/admin"}}},
            {"path": {"path": {"regex": "^/v[0-9]+/", "ignoreCase": True}}},
            {"method": {"methods": ["POST", "PUT"]}},
            {"header": {"name": "X-Debug", "present": True}},
            {"queryParam": {"name": "token", "value": {"exact": "x", "ignoreCase": False}}},
            {
                "remoteIp": {"notIn": ["203.0.113.0/24"]},
                "header": {"name": "a", "value": {"prefix": "b"}},
            },
        ],
        "logging": {"requestHeaders": True, "responseHeaders": False, "query": True},
    }
    assert one_policy(live) == {
        "name": "admin",
        "enabled": False,
        "match": [
            {"path": {"path": {"prefix": "/admin"}}},
            {"path": {"path": {"regex": "^/v[0-9]+/", "ignoreCase": True}}},
            {"method": {"methods": ["POST", "PUT"]}},
            {"header": {"name": "X-Debug", "present": True}},
            {"queryParam": {"name": "token", "value": {"exact": "x"}}},
            {
                "header": {"name": "a", "value": {"prefix": "b"}},
                "remoteIp": {"notIn": ["203.0.113.0/24"]},
            },
        ],
        "logging": {"requestHeaders": True, "query": True},
    }
    assert list(one_policy(live)["match"][5]) == ["header", "remoteIp"]


def test_policy_empty_match_and_all_false_logging() -> None:
    entry = one_policy(
        {"id": "p", "name": "log", "enabled": True, "match": [], "logging": {"query": False}}
    )
    assert entry == {"name": "log", "enabled": True, "logging": {}}


def test_policy_without_a_rule_is_reported() -> None:
    with pytest.raises(ExportError, match='policy "odd"'):
        one_policy({"id": "p", "name": "odd", "enabled": True})


def test_yaml_is_a_faithful_and_readable_rendering() -> None:
    env = environment(
        variables=[
            {"key": "PEM", "kind": "recoverable", "value": "-----BEGIN-----\nabc\n-----END-----\n"},
            {"key": "FLAG", "kind": "recoverable", "value": "on"},
            {"key": "VERSION", "kind": "recoverable", "value": "1.10"},
            {"key": "PORT", "kind": "recoverable", "value": "3000"},
            {"key": "EMPTYISH", "kind": "recoverable", "value": "null"},
        ],
        build={"watchPaths": ["*.py", "src/**"]},
        policies=[
            {"id": "x", "name": "deny: all", "enabled": True, "firewall": {"action": "ACTION_DENY"}}
        ],
    )
    result = build_export(
        [project(app(env, git={"repository": "acme/web", "defaultBranch": "main"}))]
    )
    text = result.render()
    assert text.startswith("# yaml-language-server: $schema=https://")
    assert text.splitlines()[1].startswith("# Exported by `reconciler export`")
    assert "#   SHOP_WEB_PRODUCTION_" not in text  # no write-only variables here
    assert yaml.safe_load(text) == {"version": 1, "projects": result.projects}
    assert "git: {repository: acme/web, defaultBranch: main}" in text
    assert "PEM: |" in text
    assert "!!" not in text  # no tags: the loader refuses them
    # policies stay in block style, one key per line, like the docs
    assert "- name: 'deny: all'\n" in text


def test_headers_name_the_secrets_each_file_needs_and_the_pinning() -> None:
    shop_env = environment(variables=[{"key": "STRIPE_KEY", "kind": "writeonly"}])
    blog = project(
        app(
            environment(variables=[{"key": "TOKEN", "kind": "writeonly"}]),
            id="app_site0001",
            slug="site",
        ),
        id="proj_blog0001",
        slug="blog",
    )
    result = build_export([project(app(shop_env)), blog])
    files = result.render_by_project()
    assert "#   SHOP_WEB_PRODUCTION_STRIPE_KEY\n" in files["shop"]
    assert "BLOG_SITE_PRODUCTION_TOKEN" not in files["shop"]
    assert "#   BLOG_SITE_PRODUCTION_TOKEN\n" in files["blog"]
    both = result.render()
    assert "SHOP_WEB_PRODUCTION_STRIPE_KEY" in both and "BLOG_SITE_PRODUCTION_TOKEN" in both
    assert "`id:` pins" in both
    unpinned = build_export([blog], ExportOptions(pin_ids=False)).render()
    assert "`id:` pins" not in unpinned and "id: app_" not in unpinned
    assert yaml.safe_load(files["blog"]) == result.documents_by_project()["blog"]


def test_single_stream_and_per_project_documents() -> None:
    other = project(id="proj_blog0001", slug="blog", name="Blog")
    result = build_export([project(), other])
    assert result.single_document() == {
        "version": 1,
        "projects": {"shop": result.projects["shop"], "blog": result.projects["blog"]},
    }
    per_project = result.documents_by_project()
    assert set(per_project) == {"shop", "blog"}
    assert per_project["blog"] == {"version": 1, "projects": {"blog": result.projects["blog"]}}


def test_a_write_only_value_is_never_written_even_if_the_platform_returned_one() -> None:
    env = environment(variables=[{"key": "K", "kind": "writeonly", "value": "sentinel-secret"}])
    result = build_export([project(app(env))])
    assert "sentinel-secret" not in result.render()
    assert [s.env_name for s in result.secrets] == ["SHOP_WEB_PRODUCTION_K"]


@pytest.mark.parametrize(
    "value",
    [
        "\x85",
        "a\u2028b",
        "x\r\ny",
        "end\n\n",
        " lead\nx",
        "\n",
        "tab\tx",
        "\ufeffbom",
        "\x00",
        "on",
    ],
)
def test_values_yaml_would_reinterpret_read_back_exactly(value: str) -> None:
    env = environment(variables=[{"key": "V", "kind": "recoverable", "value": value}])
    text = build_export([project(app(env))]).render()
    loaded = yaml.safe_load(text)
    assert (
        loaded["projects"]["shop"]["apps"]["web"]["environments"]["production"]["variables"]["V"]
        == value
    )
    assert "\n...\n" not in text  # no document-end markers from keep-chomping blocks


def test_what_both_environments_share_moves_to_defaults() -> None:
    shared_policy = {
        "id": "p1",
        "name": "deny",
        "enabled": True,
        "firewall": {"action": "ACTION_DENY"},
    }
    regions = [{"name": "fra", "replicas": {"min": 1, "max": 2}}]
    production = environment(
        runtime={"port": 3000, "vCpus": 1, "healthcheck": {"method": "GET", "path": "/h"}},
        build={"autoDeploy": True, "buildCommand": "make"},
        regions=regions,
        variables=[
            {"key": "NODE_ENV", "kind": "recoverable", "value": "production"},
            {"key": "LOG", "kind": "recoverable", "value": "info"},
            {"key": "TOKEN", "kind": "writeonly"},
        ],
        policies=[shared_policy],
        domains=[{"domain": "shop.example.com"}],
    )
    preview = environment(
        "preview",
        runtime={"port": 3000, "vCpus": 0.25, "healthcheck": {"method": "GET", "path": "/h"}},
        build={"autoDeploy": True, "buildCommand": "make"},
        regions=regions,
        variables=[
            {"key": "NODE_ENV", "kind": "recoverable", "value": "staging"},
            {"key": "LOG", "kind": "recoverable", "value": "info"},
            {"key": "TOKEN", "kind": "writeonly"},
        ],
        policies=[{**shared_policy, "id": "p2"}],  # IDs differ, policies do not
    )
    web = exported(project(app(production, preview)), pin_ids=False)["apps"]["web"]
    assert list(web) == ["name", "defaults", "environments"]
    assert web["defaults"] == {
        "build": {"buildCommand": "make", "autoDeploy": True},
        "runtime": {"port": 3000, "healthcheck": {"method": "GET", "path": "/h"}},
        "regions": [{"name": "fra", "replicas": {"min": 1, "max": 2}}],
        "variables": {"LOG": "info"},
        "policies": [{"name": "deny", "enabled": True, "firewall": {"action": "ACTION_DENY"}}],
    }
    assert web["environments"] == {
        "production": {
            "runtime": {"vCpus": 1},
            "variables": {
                "NODE_ENV": "production",
                "TOKEN": {"fromEnv": "SHOP_WEB_PRODUCTION_TOKEN"},
            },
            "domains": ["shop.example.com"],
        },
        "preview": {
            "runtime": {"vCpus": 0.25},
            "variables": {"NODE_ENV": "staging", "TOKEN": {"fromEnv": "SHOP_WEB_PREVIEW_TOKEN"}},
        },
    }


def test_identical_environments_are_all_defaults_and_factoring_can_be_turned_off() -> None:
    envs = [environment(name, runtime={"port": 8080}) for name in ("production", "preview")]
    web = exported(project(app(*envs)))["apps"]["web"]
    assert web["defaults"] == {"runtime": {"port": 8080}} and "environments" not in web
    plain = exported(project(app(*envs)), factor_defaults=False)["apps"]["web"]
    assert "defaults" not in plain
    assert plain["environments"] == {
        "production": {"runtime": {"port": 8080}},
        "preview": {"runtime": {"port": 8080}},
    }


def test_defaults_rebuild_each_environment_through_the_loader(tmp_path) -> None:
    from reconciler.manifest.validate import load_manifest

    production = environment(
        runtime={"port": 1, "vCpus": 1},
        variables=[{"key": "A", "kind": "recoverable", "value": "x"}],
    )
    preview = environment(
        "preview",
        runtime={"port": 1, "vCpus": 2},
        variables=[{"key": "A", "kind": "recoverable", "value": "x"}],
    )
    live = project(app(production, preview))
    merged_path = tmp_path / "merged.yaml"
    merged_path.write_text(build_export([live]).render())
    plain_path = tmp_path / "plain.yaml"
    plain_path.write_text(build_export([live], ExportOptions(factor_defaults=False)).render())
    merged = load_manifest([merged_path]).projects[0].apps[0]
    plain = load_manifest([plain_path]).projects[0].apps[0]
    assert {e.name: e for e in merged.environments} == {e.name: e for e in plain.environments}
