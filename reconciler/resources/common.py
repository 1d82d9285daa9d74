"""What every resource kind shares: addresses, where calls go, and normalised comparison.

Each kind module (project, app, settings, variables, policies, domains) turns a
desired object and its live counterpart into at most a few `Change`s. They all
compare *normalised* values (`1` and `1.0` equal, absent lists empty, server
defaults filled in) so that what the platform stores never shows up as a diff.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.engine.changes import ABSENT, Call, FieldDiff
from reconciler.manifest.model import UNSET, App, Project
from reconciler.platform.errors import UnexpectedResponse
from reconciler.platform.operations import get_operation, permission

SENSITIVE = "(sensitive value)"


def address(kind: str, *parts: str) -> str:
    """`app.shop/web`, `variable.shop/web/production/KEY`."""
    return f"{kind}." + "/".join(parts)


def make_call(operation: str, body: Mapping[str, Any], *, object_id: str | None = None) -> Call:
    """A call with the permission it needs (ID-specific when the scope object's ID is known)."""
    return Call(
        operation=operation,
        body=dict(body),
        permission=permission(operation, object_id),
        creates=get_operation(operation).creates,
    )


@dataclass(frozen=True)
class EnvironmentRef:
    """Where the calls of one environment go.

    References are IDs when live state gave them (they survive a rename in the same apply),
    otherwise the manifest's slugs (for objects the same apply creates first).
    """

    project: str
    app: str
    environment: str
    environment_id: str | None = None

    def body(self, **fields: Any) -> dict[str, Any]:
        return {"project": self.project, "app": self.app, "environment": self.environment, **fields}


def identity_diffs(
    desired: Project | App, live: Mapping[str, Any], body: dict[str, Any]
) -> list[FieldDiff]:
    """Slug (a rename through a pinned id), name and delete protection: what projects and apps
    share. Each differing field is also added to the update `body`."""
    diffs = []
    if live.get("slug") != desired.slug:
        diffs.append(FieldDiff("slug", live.get("slug"), desired.slug))
        body["slug"] = desired.slug
    if desired.name is not UNSET and live.get("name") != desired.name:
        diffs.append(FieldDiff("name", live.get("name"), desired.name))
        body["name"] = desired.name
    live_protection = bool(live.get("deleteProtection", False))
    if desired.delete_protection is not UNSET and live_protection != desired.delete_protection:
        diffs.append(FieldDiff("deleteProtection", live_protection, desired.delete_protection))
        body["deleteProtection"] = desired.delete_protection
    return diffs


def require_fields(operation: str, items: Any, *fields: str) -> Any:
    """`items` (an object or a list of objects) after checking each has non-empty string `fields`.

    The plan keys everything on these (ids, slugs, variable keys, host names); an answer
    without them is reported as an unexpected response instead of crashing later.
    """
    for item in items if isinstance(items, list) else [items]:
        for name in fields:
            value = item.get(name) if isinstance(item, Mapping) else None
            if not isinstance(value, str) or not value:
                raise UnexpectedResponse(
                    f"{operation}: the platform returned an object without a `{name}` string",
                    operation=operation,
                )
    return items


def number(value: Any) -> Any:
    """Numbers compare by value: `1`, `1.0` and `True`-free ints all become floats."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


def plain(value: Any) -> Any:
    """JSON-like data as plain dicts and lists (tuples and read-only mappings thawed)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def display_number(value: Any) -> Any:
    """`1.0` shown as `1`, `0.25` as `0.25`: how a person wrote it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def nested_diffs(
    path: str, before: Any, after: Any, *, walk_lists: bool = False
) -> list[FieldDiff]:
    """Field-level differences between two JSON-like values, paths in manifest names.

    Mappings are walked key by key (`runtime.healthcheck.path`); a key missing on one side
    is `ABSENT` there. Lists are compared whole (for settings the whole new list is what is
    sent, so that is what a reviewer should see) unless `walk_lists` is set, when lists of
    the same length holding mappings are walked item by item (`match[1].remoteIp.notIn`).
    """
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        diffs: list[FieldDiff] = []
        for key in _ordered_keys(before, after):
            sub = f"{path}.{key}" if path else str(key)
            diffs.extend(
                nested_diffs(
                    sub, before.get(key, ABSENT), after.get(key, ABSENT), walk_lists=walk_lists
                )
            )
        return diffs
    if (
        walk_lists
        and isinstance(before, (list, tuple))
        and isinstance(after, (list, tuple))
        and len(before) == len(after)
        and all(isinstance(item, Mapping) for item in (*before, *after))
    ):
        diffs = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            diffs.extend(nested_diffs(f"{path}[{index}]", old, new, walk_lists=True))
        return diffs
    if _comparable(before) == _comparable(after):
        return []
    return [FieldDiff(path=path, before=plain(before), after=plain(after))]


def _ordered_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    keys = list(after)
    keys.extend(k for k in before if k not in after)
    return keys


def _comparable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    return number(value)


def batched(items: Sequence[Any], size: int) -> list[list[Any]]:
    """`items` in consecutive chunks of at most `size`."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]
