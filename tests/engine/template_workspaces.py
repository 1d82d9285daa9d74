"""A generated company workspace written twice: with templates, `appDefaults` and parameters,
and written out in full (each environment as the documentation's merge rules make it, built
here independently of reconciler's expansion). Both must plan the same JSON.

`PROJECTS` teams of `APPS` apps each: every fifth app is a worker, the others public web apps
with their own host name (a parameter) and, for odd ones, their own replica count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PROJECTS = 4
APPS = 50

NODE_BUILD = {"rootDirectory": ".", "buildCommand": "npm run build"}
NODE_RUNTIME = {
    "port": 3000,
    "memoryMib": 512,
    "healthcheck": {"method": "GET", "path": "/healthz"},
}
NODE_VARIABLES = {"NODE_ENV": "production", "LOG_FORMAT": "json"}
FIREWALL = {
    "name": "internal-only",
    "enabled": True,
    "match": [{"path": {"path": {"prefix": "/internal"}}}, {"remoteIp": {"notIn": ["10.0.0.0/8"]}}],
    "firewall": {"action": "ACTION_DENY"},
}
LOG_API = {
    "name": "log-api",
    "enabled": True,
    "match": [{"path": {"path": {"prefix": "/api"}}}],
    "logging": {"requestHeaders": True},
}
OWN_POLICY = {
    "name": "admin-only",
    "enabled": True,
    "match": [{"path": {"path": {"prefix": "/admin"}}}],
    "firewall": {"action": "ACTION_DENY"},
}

TEMPLATES = {
    "node-service": {
        "description": "Node.js services",
        "build": NODE_BUILD,
        "runtime": NODE_RUNTIME,
        "variables": NODE_VARIABLES,
    },
    "firewall-baseline": {"policies": {"prepend": [FIREWALL]}},
    "public-web": {
        "params": {
            "host": {"type": "string"},
            "replicas": {"type": "integer", "default": 2},
        },
        "extends": ["node-service"],
        "variables": {"PUBLIC_URL": "https://${host}/"},
        "environments": {
            "production": {
                "extends": ["firewall-baseline"],
                "runtime": {"vCpus": 1},
                "regions": [{"name": "fra", "replicas": {"min": "${replicas}", "max": 8}}],
                "domains": ["${host}"],
            },
            "preview": {"runtime": {"vCpus": 0.25}, "domains": ["preview.${host}"]},
        },
    },
    "worker": {
        "extends": ["node-service"],
        "runtime": {"command": ["node", "dist/worker.js"], "healthcheck": None},
        "regions": [{"name": "iad", "replicas": {"min": 1, "max": 2}}],
    },
}
APP_DEFAULTS = {
    "variables": {"COMPANY": "acme"},
    "environments": {"production": {"policies": {"append": [LOG_API]}}},
}


def _team(p: int) -> str:
    return f"team-{p}"


def _host(p: int, a: int) -> str:
    return f"app-{a}.{_team(p)}.example.com"


def _replicas(a: int) -> int | None:
    return a % 3 + 1 if a % 2 else None


def _worker(a: int) -> bool:
    return a % 5 == 0


def _own_production(a: int) -> dict[str, Any]:
    """What an app writes for production itself (some apps)."""
    own: dict[str, Any] = {}
    if a % 4 == 1:
        own["variables"] = {"FEATURE_FLAGS": f"set-{a}"}
    if a % 7 == 3:
        own["policies"] = [OWN_POLICY]
    return own


def with_templates(projects: int = PROJECTS, apps_each: int = APPS) -> dict[str, str]:
    """The workspace in files: the shared blocks in one, a project in each of the others."""
    files = {
        "00-shared.yaml": {"version": 1, "appDefaults": APP_DEFAULTS, "templates": TEMPLATES},
    }
    for p in range(projects):
        apps: dict[str, Any] = {}
        for a in range(apps_each):
            entry: dict[str, Any] = {"git": {"repository": f"acme/{_team(p)}-app-{a}"}}
            if _worker(a):
                entry["extends"] = ["worker"]
            else:
                params: dict[str, Any] = {"host": _host(p, a)}
                if _replicas(a) is not None:
                    params["replicas"] = _replicas(a)
                entry["extends"] = [{"template": "public-web", "params": params}]
            own = _own_production(a)
            if own:
                entry["environments"] = {"production": own}
            apps[f"app-{a}"] = entry
        project = {"appDefaults": {"variables": {"TEAM": _team(p)}}, "apps": apps}
        files[f"{p + 10}-{_team(p)}.yaml"] = {"version": 1, "projects": {_team(p): project}}
    return {name: yaml.safe_dump(doc, sort_keys=False) for name, doc in files.items()}


def written_out(projects: int = PROJECTS, apps_each: int = APPS) -> dict[str, str]:
    """The same workspace with every environment written in full, and no shared blocks."""
    files = {}
    for p in range(projects):
        apps: dict[str, Any] = {}
        for a in range(apps_each):
            entry: dict[str, Any] = {"git": {"repository": f"acme/{_team(p)}-app-{a}"}}
            entry["environments"] = {
                "production": _environment(p, a, "production"),
                "preview": _environment(p, a, "preview"),
            }
            apps[f"app-{a}"] = entry
        files[f"{p + 10}-{_team(p)}.yaml"] = {
            "version": 1,
            "projects": {_team(p): {"apps": apps}},
        }
    return {name: yaml.safe_dump(doc, sort_keys=False) for name, doc in files.items()}


def _environment(p: int, a: int, name: str) -> dict[str, Any]:
    """The environment as the layers make it: appDefaults (workspace, project), the app's
    template (with node-service under it), the app's own settings."""
    variables = {"COMPANY": "acme", "TEAM": _team(p), **NODE_VARIABLES}
    runtime: dict[str, Any] = dict(NODE_RUNTIME)
    env: dict[str, Any] = {"build": dict(NODE_BUILD)}
    if _worker(a):
        runtime.update({"command": ["node", "dist/worker.js"], "healthcheck": None})
        env["regions"] = [{"name": "iad", "replicas": {"min": 1, "max": 2}}]
    else:
        host = _host(p, a)
        variables["PUBLIC_URL"] = f"https://{host}/"
        if name == "production":
            runtime["vCpus"] = 1
            replicas = _replicas(a) or 2
            env["regions"] = [{"name": "fra", "replicas": {"min": replicas, "max": 8}}]
            env["domains"] = [host]
        else:
            runtime["vCpus"] = 0.25
            env["domains"] = [f"preview.{host}"]
    env["runtime"] = runtime
    own = _own_production(a) if name == "production" else {}
    variables.update(own.get("variables", {}))
    env["variables"] = variables
    if name == "production":
        firewall = [] if _worker(a) else [FIREWALL]
        env["policies"] = [*firewall, *own.get("policies", []), LOG_API]
    return env


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory
