"""Live states built through the platform API, covering every field kind export writes."""

from __future__ import annotations

from typing import Any

FINGERPRINTED = "stripe live key [fp:0123456789abcdef]"

EVERY_MATCH_MEMBER = [
    {
        "name": "admin-only-from-office",
        "enabled": True,
        "match": [
            {"path": {"path": {"prefix": "/admin", "ignoreCase": False}}},
            {"remoteIp": {"notIn": ["203.0.113.0/24", "2001:db8::/32"]}},
        ],
        "firewall": {"action": "ACTION_DENY"},
    },
    {
        "name": "block-scanners",
        "enabled": False,
        "match": [
            {"path": {"path": {"regex": "^/(wp-admin|\\.env)", "ignoreCase": True}}},
            {"header": {"name": "User-Agent", "value": {"prefix": "curl/", "ignoreCase": True}}},
            {"queryParam": {"name": "debug", "present": True}},
        ],
        "firewall": {"action": "ACTION_DENY"},
    },
    {
        "name": "log-api-writes",
        "enabled": True,
        "match": [
            {"path": {"path": {"exact": "/api/orders"}}, "method": {"methods": ["POST", "PUT"]}},
            {"header": {"name": "X-Trace", "present": True}},
            {"queryParam": {"name": "mode", "value": {"exact": "full"}}},
            {"remoteIp": {"in": ["10.0.0.0/8"]}},
        ],
        "logging": {"requestHeaders": True, "responseHeaders": False, "query": True},
    },
    {"name": "log-everything", "enabled": True, "logging": {}},
]


def seed_policies(emulator: Any) -> bool:
    """Every match member, in the spec's shapes, on shop/web/production; True when accepted."""
    body = {"project": "shop", "app": "web", "environment": "production"}
    response = emulator.call("gateway.setPolicies", {**body, "policies": EVERY_MATCH_MEMBER})
    return response.status_code < 300


def ok(emulator: Any, operation: str, body: dict[str, Any]) -> dict[str, Any]:
    response = emulator.call(operation, body)
    assert response.status_code < 300, f"{operation}: {response.status_code} {response.text}"
    return response.json().get("data") or {}


def seed_every_field_kind(emulator: Any) -> None:
    """Two projects; git, image and not-yet-connected apps; every setting, both variable
    kinds with and without descriptions, domains, protection (policies: `seed_policies`)."""
    ok(emulator, "projects.createProject", {"name": "Shop", "slug": "shop"})
    ok(emulator, "projects.updateProject", {"project": "shop", "deleteProtection": True})
    ok(emulator, "projects.createProject", {"name": "Internal Blog", "slug": "blog"})

    web = {"project": "shop", "app": "web"}
    ok(
        emulator,
        "apps.createApp",
        {
            "project": "shop",
            "name": "Web",
            "slug": "web",
            "git": {"repository": "acme/shop-web", "defaultBranch": "release"},
        },
    )
    ok(emulator, "apps.updateApp", {**web, "deleteProtection": True})
    ok(
        emulator,
        "apps.createApp",
        {
            "project": "shop",
            "name": "API",
            "slug": "api",
            "oci": {"image": "ghcr.io/acme/api:1.4.2"},
        },
    )
    ok(emulator, "apps.createApp", {"project": "shop", "name": "Later", "slug": "later", "git": {}})
    ok(
        emulator,
        "apps.createApp",
        {"project": "blog", "name": "Site", "slug": "site", "oci": {"image": "ghost:5"}},
    )

    production = {**web, "environment": "production"}
    preview = {**web, "environment": "preview"}
    ok(
        emulator,
        "environments.updateSettings",
        {
            **production,
            "dockerfile": "Dockerfile.prod",
            "rootDirectory": "services/web",
            "buildCommand": "npm run build",
            "watchPaths": ["src/**", "package.json"],
            "autoDeploy": False,
            "port": 3000,
            "vCpus": 1.5,
            "memoryMib": 1024,
            "storageMib": 512,
            "command": ["node", "server.js", "--port", "3000"],
            "healthcheck": {
                "method": "POST",
                "path": "/healthz",
                "intervalSeconds": 30,
                "timeoutSeconds": 2,
                "failureThreshold": 5,
                "initialDelaySeconds": 15,
            },
            "shutdownSignal": "SIGINT",
            "upstreamProtocol": "h2c",
            "openapiSpecPath": "/openapi.json",
            "regions": [
                {"name": "fra", "replicas": {"min": 2, "max": 6}},
                {"name": "iad", "replicas": {"min": 1, "max": 1}},
            ],
        },
    )
    ok(
        emulator,
        "environments.updateSettings",
        {
            **preview,
            "vCpus": 1,
            "healthcheck": {"method": "GET", "path": "/"},
        },
    )
    ok(
        emulator,
        "environments.setEnvironmentVariables",
        {
            **production,
            "variables": [
                {"key": "NODE_ENV", "value": "production", "kind": "recoverable"},
                {
                    "key": "API_URL",
                    "value": "https://api.example.com",
                    "kind": "recoverable",
                    "description": "backend",
                },
                {"key": "FEATURE_FLAG", "value": "on", "kind": "recoverable"},
                {"key": "VERSION", "value": "1.10", "kind": "recoverable"},
                {
                    "key": "CA_BUNDLE",
                    "value": "-----BEGIN CERT-----\nMIIB\n-----END CERT-----\n",
                    "kind": "recoverable",
                },
                {
                    "key": "STRIPE_KEY",
                    "value": "sk_live_sentinel_1",
                    "kind": "writeonly",
                    "description": FINGERPRINTED,
                },
                {"key": "SESSION_SECRET", "value": "sentinel_2", "kind": "writeonly"},
            ],
        },
    )
    ok(
        emulator,
        "environments.setEnvironmentVariables",
        {
            **preview,
            "variables": [
                {"key": "NODE_ENV", "value": "staging", "kind": "recoverable"},
            ],
        },
    )
    for host, where in (
        ("shop.example.com", production),
        ("www.shop.example.com", production),
        ("beta.shop.example.com", preview),
    ):
        ok(emulator, "domains.createDomain", {**where, "domain": host})
    site = {"project": "blog", "app": "site", "environment": "production"}
    ok(emulator, "domains.createDomain", {**site, "domain": "blog.example.org"})
