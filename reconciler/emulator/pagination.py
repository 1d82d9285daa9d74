"""Opaque, filter-bound cursors over a stable sort key (never offsets).

A cursor is base64url of `{"f": <hash of operation and filters>, "k": <last sort key>}`; the
next page holds the items whose key sorts after it, so inserts between pages neither repeat nor
skip items already ordered before the cursor.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from reconciler.emulator.errors import invalid

DEFAULT_LIMIT = 100


def _filters_hash(operation: str, filters: dict[str, Any]) -> str:
    canonical = json.dumps([operation, filters], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_cursor(operation: str, filters: dict[str, Any], key: Sequence[Any]) -> str:
    raw = json.dumps({"f": _filters_hash(operation, filters), "k": list(key)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(operation: str, filters: dict[str, Any], cursor: str) -> list[Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
        key, hashed = data["k"], data["f"]
        if not isinstance(key, list):
            raise ValueError
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise invalid("cursor", "is not a cursor returned by this operation") from error
    if hashed != _filters_hash(operation, filters):
        raise invalid("cursor", "was issued for other filters; start again without a cursor")
    return key


def paginate(
    operation: str,
    body: dict[str, Any],
    filters: dict[str, Any],
    items: list[Any],
    key: Callable[[Any], Sequence[Any]],
) -> tuple[list[Any], dict[str, Any]]:
    """One page of `items` (already filtered); returns (page, pagination member)."""
    limit = body.get("limit", DEFAULT_LIMIT)
    ordered = sorted(items, key=lambda item: list(key(item)))
    cursor = body.get("cursor")
    if cursor is not None:
        after = decode_cursor(operation, filters, cursor)
        ordered = [item for item in ordered if list(key(item)) > after]
    page = ordered[:limit]
    has_more = len(ordered) > limit
    next_cursor = encode_cursor(operation, filters, key(page[-1])) if has_more else ""
    return page, {"hasMore": has_more, "cursor": next_cursor}
