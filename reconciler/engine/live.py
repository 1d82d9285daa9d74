"""What the plan read from the platform: read permissions, id labels and the live-state digest.

The plan reads through the resource modules' `read_*` functions; this module
keeps the bookkeeping that every read shares, so `plan.py` stays about
deciding changes:

- the permission each read needs (ID-specific once the object's ID is known),
- a label for every ID seen (`shop/web/production`), to say where a domain is
  attached,
- the normalised live state the plan depends on, whose digest lets apply refuse
  a saved plan computed from state that has changed since. Volatile fields
  (timestamps, deployment pointers, domain verification status) are left out:
  they change on their own and no change in the plan depends on them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.platform.operations import permission
from reconciler.resources.domains import attachment_by_ids, host_of
from reconciler.resources.policies import normalise_policy

_VOLATILE = frozenset({"createdAt", "updatedAt", "currentDeploymentId", "isRolledBack"})


@dataclass
class LiveRecord:
    permissions: set[str] = field(default_factory=set)
    labels: dict[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    rolled_back: set[str] = field(default_factory=set)
    """`project/app` of the live apps whose production is rolled back (isRolledBack)."""

    def read(self, operation: str, object_id: str | None = None) -> None:
        self.permissions.add(permission(operation, object_id))

    def project(self, slug: str, live: Mapping[str, Any] | None) -> None:
        self.state[f"project {slug}"] = _stable(live)
        if live is not None:
            self.labels[live["id"]] = f"project {live.get('slug', slug)}"

    def slug_holder(self, kind: str, slug: str, holder: Mapping[str, Any] | None) -> None:
        """Who held a slug the plan looked up (a rename target, a temporary slug)."""
        self.state[f"{kind} slug {slug}"] = None if holder is None else holder.get("id")

    def apps(self, project_slug: str, apps: Sequence[Mapping[str, Any]]) -> None:
        self.state[f"apps {project_slug}"] = sorted(
            (_stable(a) for a in apps), key=lambda a: str(a.get("id"))
        )
        for app in apps:
            self.labels[app["id"]] = f"{project_slug}/{app.get('slug')}"
            if app.get("isRolledBack") is True:
                self.rolled_back.add(f"{project_slug}/{app.get('slug')}")

    def environments(self, app_label: str, environments: Sequence[Mapping[str, Any]]) -> None:
        self.state[f"environments {app_label}"] = sorted(
            (_stable(e) for e in environments), key=lambda e: str(e.get("slug"))
        )
        for environment in environments:
            if environment.get("id"):
                self.labels[environment["id"]] = f"{app_label}/{environment.get('slug')}"

    def environment(self, project: str, app: str, name: str) -> Mapping[str, Any] | None:
        """The environment as read (volatile fields left out); None when it was not read."""
        listed = self.state.get(f"environments {project}/{app}") or ()
        return next((e for e in listed if e.get("slug") == name), None)

    def variables(self, env_label: str, variables: Sequence[Mapping[str, Any]]) -> None:
        self.state[f"variables {env_label}"] = sorted(
            ({k: v for k, v in item.items() if k not in _VOLATILE} for item in variables),
            key=lambda v: str(v.get("key")),
        )

    def policies(self, env_label: str, policies: Sequence[Mapping[str, Any]]) -> None:
        self.state[f"policies {env_label}"] = [normalise_policy(p) for p in policies]

    def domains(self, env_label: str, domains: Sequence[Mapping[str, Any]]) -> None:
        self.state[f"domains {env_label}"] = sorted(host_of(d) for d in domains)
        for domain in domains:
            if domain.get("environmentId"):
                self.labels.setdefault(domain["environmentId"], env_label)

    def lookup(self, host: str, found: Mapping[str, Any] | None) -> None:
        where = None
        if found is not None:
            where = {k: found.get(k) for k in ("projectId", "appId", "environmentId")}
        self.state[f"domain {host}"] = where

    def describe(self, domain: Mapping[str, Any]) -> str:
        """Where a looked-up domain is attached, in slugs where this plan has seen the IDs."""
        return attachment_by_ids(domain, self.labels)

    def digest(self) -> str:
        text = json.dumps(self.state, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stable(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {k: v for k, v in value.items() if k not in _VOLATILE}


def fingerprint_mode(key: bytes | None) -> str:
    return "keyed" if key else "presence"
