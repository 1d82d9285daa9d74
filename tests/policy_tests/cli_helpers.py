"""Manifests with policies and policy tests, and `reconciler test` run in-process."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.cli import CliResult, platform_env, run_cli

FAST_DEPLOY = ("--auto-approve", "--deploy", "--poll-interval", "0.02s", "--wait-timeout", "30s")


@dataclass(frozen=True)
class Sample:
    """One policy test: a request and the outcome the gateway gives it."""

    name: str
    path: str
    expect: str
    method: str = "GET"
    client_ip: str = "198.51.100.7"
    query: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, Any] = field(default_factory=dict)
    decided_by: str | None = None
    logged_by: Sequence[str] | None = None

    def flipped(self) -> Sample:
        """The same request expecting the other outcome (and no deciding policy)."""
        return replace(self, expect="allow" if self.expect == "deny" else "deny", decided_by=None)

    def to_manifest(self) -> dict[str, Any]:
        request: dict[str, Any] = {
            "method": self.method,
            "path": self.path,
            "clientIp": self.client_ip,
        }
        if self.query:
            request["query"] = dict(self.query)
        if self.headers:
            request["headers"] = dict(self.headers)
        test: dict[str, Any] = {"name": self.name, "request": request, "expect": self.expect}
        if self.decided_by is not None:
            test["decidedBy"] = self.decided_by
        if self.logged_by is not None:
            test["loggedBy"] = list(self.logged_by)
        return test


def firewall(name: str, *match: dict[str, Any], enabled: bool = True) -> dict[str, Any]:
    policy: dict[str, Any] = {
        "name": name,
        "enabled": enabled,
        "firewall": {"action": "ACTION_DENY"},
    }
    if match:
        policy["match"] = list(match)
    return policy


def logging(name: str, *match: dict[str, Any], enabled: bool = True) -> dict[str, Any]:
    policy: dict[str, Any] = {"name": name, "enabled": enabled, "logging": {"requestHeaders": True}}
    if match:
        policy["match"] = list(match)
    return policy


def manifest_text(
    policies: Sequence[dict[str, Any]],
    samples: Sequence[Sample],
    *,
    app: str = "web",
    environment: str = "production",
    settings: Mapping[str, Any] | None = None,
) -> str:
    """A manifest of shop/<app> whose <environment> holds the policies, the samples as its
    policy tests and `settings` (runtime, ...)."""
    document = {
        "version": 1,
        "projects": {
            "shop": {
                "apps": {
                    app: {
                        "oci": {"image": "ghcr.io/acme/web:1.0"},
                        "environments": {
                            environment: {
                                **(settings or {}),
                                "policies": list(policies),
                                "policyTests": [s.to_manifest() for s in samples],
                            }
                        },
                    }
                }
            }
        },
    }
    return yaml.safe_dump(document, sort_keys=False)


def write(directory: Path, text: str, name: str = "platform.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def run_test(*args: str | Path, env: Mapping[str, str | None] | None = None) -> CliResult:
    return run_cli(["test", *map(str, args)], env=env)


def run_json(*args: str | Path, env: Mapping[str, str | None] | None = None) -> tuple[int, Any]:
    """`reconciler test ARGS --format json`: the exit code and the parsed document."""
    result = run_test(*args, "--format", "json", env=env)
    assert result.stdout, result.stderr
    return result.exit_code, json.loads(result.stdout)


def deployed(
    emulator: Any, directory: Path, policies: Sequence[dict[str, Any]], samples: Sequence[Sample]
) -> Path:
    """A manifest of the policies and samples, applied to `emulator` and deployed (production,
    so that its gateway serves the list); its path."""
    manifest = write(
        directory, manifest_text(policies, samples, settings={"runtime": {"port": 8080}})
    )
    applied = run_cli(["apply", "-f", str(manifest), *FAST_DEPLOY], env=platform_env(emulator))
    assert applied.exit_code == 0, applied.output
    return manifest
