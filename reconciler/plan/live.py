"""What the plan read from the platform: read permissions, id labels and the live-state digest.

The planner reads through the kinds' `read` hooks; each kind notes what it read here (its
`record` hook), so that the planner stays about deciding changes:

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reconciler.address import TreePath
from reconciler.json_types import JsonObject, JsonValue
from reconciler.platform.operations import get_operation, permission

VOLATILE = frozenset({"createdAt", "updatedAt", "currentDeploymentId", "isRolledBack"})


@dataclass
class LiveRecord:
    permissions: set[str] = field(default_factory=set)
    labels: dict[str, TreePath] = field(default_factory=dict)
    """object ID -> where that project, app or environment is (`shop/web/production`)."""
    state: dict[str, JsonValue] = field(default_factory=dict)
    rolled_back: set[TreePath] = field(default_factory=set)
    """The live apps whose production is rolled back (isRolledBack)."""
    other_environments: dict[TreePath, tuple[str, ...]] = field(default_factory=dict)
    """An app -> the slugs of its environments other than production and preview (a
    newer platform's), which the plan reports and leaves alone."""

    def read(self, operation: str, object_id: str | None = None) -> None:
        """Note that the plan read with `operation` (named as a kind names it): apply needs its
        permission."""
        self.permissions.add(permission(get_operation(operation), object_id))

    def slug_holder(self, kind: str, slug: str, holder_id: str | None) -> None:
        """Who held a slug the plan looked up (a rename target, a temporary slug): its ID."""
        self.state[f"{kind} slug {slug}"] = holder_id

    def environment(self, project: str, app: str, name: str) -> JsonObject | None:
        """The environment as read (volatile fields left out); None when it was not read."""
        listed = self.state.get(f"environments {TreePath.of(project, app)}")
        environments = listed if isinstance(listed, list | tuple) else ()
        return next(
            (e for e in environments if isinstance(e, Mapping) and e.get("slug") == name), None
        )

    def project_ids(self) -> dict[str, str]:
        """slug -> ID of every project read."""
        return {
            position.leaf: object_id
            for object_id, position in self.labels.items()
            if position.depth == 1
        }

    def digest(self) -> str:
        text = json.dumps(self.state, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stable(value: JsonObject | None) -> dict[str, JsonValue] | None:
    """`value` without its volatile fields (None stays None)."""
    if value is None:
        return None
    return {k: v for k, v in value.items() if k not in VOLATILE}


def stable_listing(found: Iterable[JsonObject], by: str) -> list[dict[str, JsonValue]]:
    """A listing's objects without their volatile fields, in the order of their `by` member
    (the order the platform lists them in is not part of live state)."""
    return sorted((stable(item) or {} for item in found), key=lambda item: str(item.get(by)))


def fingerprint_mode(key: bytes | None) -> str:
    return "keyed" if key else "presence"
