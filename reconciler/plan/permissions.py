"""The permissions a plan lists for its apply, as every string or as the fewest that cover them.

A plan needs one permission string per operation and object, `<scope>.<id or *>.<action>`
(`environment.env_123.set_policies`): what `plan --show-permissions` and the JSON list. A key
holding a wildcard `<scope>.*.<action>` may do that action on every object of the scope, so a
shorter list covers the same apply (`compact`), the one `plan` prints by default:

- a read (`read_*`) is listed as its wildcard: apply plans again before it writes, reading
  every object of the kind the manifests manage, and a read changes nothing;
- a write is listed once per object it changes, or as its wildcard where it changes every
  object of its scope that the plan needs anything of (then the ID-specific strings would name
  every object the key is used on anyway);
- a wildcard the plan needs already (a list operation, an object created by the plan, whose
  ID nobody knows yet) stays.

Every needed string is implied by the compact list (`implied`), and the compact list grants
no action the plan does not need: tests/plan/test_permissions.py checks both, and
tests/proof/test_access.py applies plans with a key holding exactly the compact list.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

WILDCARD = "*"
READ_PREFIX = "read_"


def parse(permission: str) -> tuple[str, str, str] | None:
    """(scope, target, action) of `scope.target.action`; None for any other text."""
    parts = permission.split(".")
    if len(parts) != 3 or not all(parts):
        return None
    scope, target, action = parts
    return scope, target, action


def wildcard(scope: str, action: str) -> str:
    return f"{scope}.{WILDCARD}.{action}"


def compact(needed: Iterable[str]) -> tuple[str, ...]:
    """The fewest strings, by the rules of the module's docstring, that imply each of `needed`
    (sorted; text that is not a permission string is kept as it is)."""
    targets: dict[tuple[str, str], set[str]] = {}
    objects: dict[str, set[str]] = {}
    kept: set[str] = set()
    for permission in needed:
        parsed = parse(permission)
        if parsed is None:
            kept.add(permission)
            continue
        scope, target, action = parsed
        targets.setdefault((scope, action), set()).add(target)
        if target != WILDCARD:
            objects.setdefault(scope, set()).add(target)
    for (scope, action), ids in targets.items():
        if WILDCARD in ids or action.startswith(READ_PREFIX) or _every(ids, objects[scope]):
            kept.add(wildcard(scope, action))
        else:
            kept.update(f"{scope}.{target}.{action}" for target in ids)
    return tuple(sorted(kept))


def _every(ids: Collection[str], objects: Collection[str]) -> bool:
    """Whether `ids` is every object of the scope, and more than one (one ID-specific string is
    no longer than its wildcard, and grants less)."""
    return len(ids) > 1 and len(ids) == len(objects)


def implied(permission: str, granted: Collection[str]) -> bool:
    """Whether a key holding `granted` holds `permission`: the string itself or its wildcard."""
    parsed = parse(permission)
    if permission in granted:
        return True
    return parsed is not None and wildcard(parsed[0], parsed[2]) in granted
