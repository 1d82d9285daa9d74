"""What every resource kind shares: addresses, where calls go, and normalised comparison.

Each kind module (project, app, settings, variables, policies, domains) turns a
desired object and its live counterpart into at most a few `Change`s. They all
compare *normalised* values (`1` and `1.0` equal, absent lists empty, server
defaults filled in) so that what the platform stores never shows up as a diff.
A differing list of plain values carries the items that changed (computed with
deepdiff), so a reviewer of a 60-entry IP list sees the one entry that changed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.errors import UnexpectedResponse
from reconciler.manifest.model import UNSET, App, Project
from reconciler.plan.changes import ABSENT, Call, FieldDiff, ItemEdit
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
    path: str,
    before: Any,
    after: Any,
    *,
    walk_lists: bool = False,
    unordered_lists: Collection[str] = (),
) -> list[FieldDiff]:
    """Field-level differences between two JSON-like values, paths in manifest names.

    Mappings are walked key by key (`runtime.healthcheck.path`); a key missing on one side
    is `ABSENT` there. Lists are one field (for settings the whole new list is what is sent,
    so that is what a reviewer should see) unless `walk_lists` is set, when lists of the same
    length holding mappings are walked item by item (`match[1].remoteIp.notIn`). A differing
    list of plain values carries its item edits (`value_diff`); `unordered_lists` names the
    ones the platform treats as sets, by path with the indexes left out (`match[].method.methods`).
    """
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        diffs: list[FieldDiff] = []
        for key in _ordered_keys(before, after):
            sub = f"{path}.{key}" if path else str(key)
            diffs.extend(
                nested_diffs(
                    sub,
                    before.get(key, ABSENT),
                    after.get(key, ABSENT),
                    walk_lists=walk_lists,
                    unordered_lists=unordered_lists,
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
            diffs.extend(
                nested_diffs(
                    f"{path}[{index}]", old, new, walk_lists=True, unordered_lists=unordered_lists
                )
            )
        return diffs
    if _comparable(before) == _comparable(after):
        return []
    return [value_diff(path, before, after, unordered=_without_indexes(path) in unordered_lists)]


def value_diff(path: str, before: Any, after: Any, *, unordered: bool = False) -> FieldDiff:
    """The diff of one field, with its item edits when both sides are lists of plain values."""
    items: tuple[ItemEdit, ...] = ()
    if is_plain_list(before) and is_plain_list(after):
        items = list_item_edits(before, after, unordered=unordered)
    return FieldDiff(path=path, before=plain(before), after=plain(after), items=items)


def is_plain_list(value: Any) -> bool:
    """A list (or tuple) of strings, numbers, booleans and nulls: one whose items deepdiff pairs."""
    return isinstance(value, (list, tuple)) and all(
        item is None or isinstance(item, (str, int, float, bool)) for item in value
    )


def list_item_edits(
    before: Sequence[Any], after: Sequence[Any], *, unordered: bool = False
) -> tuple[ItemEdit, ...]:
    """The items that differ between two lists of plain values, in list order (via deepdiff).

    An ordered list (`command`) is aligned as a sequence: an insertion in the middle is that one
    insertion, a replaced argument one `change`. An `unordered` one (the platform treats it as
    a set: IP ranges, methods, watch paths) only gains and loses items; when it differs only
    in order or repetition, the ordered edits say what is sent. Numbers compare by value.
    Empty when deepdiff reports something these cannot say (then the whole lists are shown).
    """
    if unordered:
        edits = _deepdiff_edits(before, after, unordered=True)
        if edits:
            return edits
    return _deepdiff_edits(before, after, unordered=False)


_ITEM_REPORTS = {"iterable_item_added", "iterable_item_removed", "values_changed", "type_changes"}


def _deepdiff_edits(
    before: Sequence[Any], after: Sequence[Any], *, unordered: bool
) -> tuple[ItemEdit, ...]:
    # imported here: deepdiff costs about 80 ms at start-up, and most runs never diff a list
    from deepdiff import DeepDiff

    old = [_comparable(item) for item in before]
    new = [_comparable(item) for item in after]
    tree = DeepDiff(old, new, ignore_order=unordered, view="tree")
    if set(tree) - _ITEM_REPORTS:
        return ()
    levels = [(report, level) for report, found in tree.items() for level in found]
    # with ignore_order deepdiff names a replaced item's position on the `before` side only:
    # its `after` position is that of an inserted value no other edit claims
    claimed = {_param(level.up.t2_child_rel) for _, level in levels}
    edits: list[ItemEdit] = []
    for report, level in levels:
        i = _param(level.up.t1_child_rel)
        j = _param(level.up.t2_child_rel)
        if report != "iterable_item_removed" and j is None:
            j = next((k for k, v in enumerate(new) if v == level.t2 and k not in claimed), None)
            if j is None:
                return ()
            claimed.add(j)
        if report == "iterable_item_added":
            edits.append(ItemEdit("insert", None, j, None, after[j]))
        elif report == "iterable_item_removed":
            edits.append(ItemEdit("remove", i, None, before[i], None))
        elif unordered:  # a set has no item "changed in place": one left, another came
            edits.append(ItemEdit("remove", i, None, before[i], None))
            edits.append(ItemEdit("insert", None, j, None, after[j]))
        else:
            edits.append(ItemEdit("change", i, j, before[i], after[j]))
    return tuple(sorted(edits, key=_list_order))


def _param(relationship: Any) -> int | None:
    return None if relationship is None else int(relationship.param)


def _list_order(edit: ItemEdit) -> tuple[int, int]:
    """Edits by position, a removal before what takes its place."""
    if edit.op == "remove":
        return (edit.before_index or 0, 0)
    return (edit.after_index or 0, 1)


def _without_indexes(path: str) -> str:
    """`match[1].remoteIp.notIn` as `match[].remoteIp.notIn`: the same field in every item."""
    return re.sub(r"\[\d+\]", "[]", path)


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
