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
from typing import Any, TypeGuard

from reconciler.emulator.errors import ApiError, invalid

DEFAULT_LIMIT = 100


def _filters_hash(operation: str, filters: dict[str, Any]) -> str:
    canonical = json.dumps([operation, filters], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def encode_cursor(operation: str, filters: dict[str, Any], key: Sequence[Any]) -> str:
    raw = json.dumps({"f": _filters_hash(operation, filters), "k": list(key)})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(operation: str, filters: dict[str, Any], cursor: str, key_size: int) -> list[int]:
    """The sort key a cursor holds; 400 unless the cursor is exactly one this operation issues
    for these filters (same encoding, a key of `key_size` integers): the key is compared with
    the items' keys, and a forged one of other types cannot be."""
    data = _cursor_document(cursor)
    if data.get("f") != _filters_hash(operation, filters):
        if isinstance(data.get("f"), str):
            raise invalid("cursor", "was issued for other filters; start again without a cursor")
        raise _not_issued()
    key = data.get("k")
    if not _is_sort_key(key, key_size) or encode_cursor(operation, filters, key) != cursor:
        raise _not_issued()
    return key


def _cursor_document(cursor: str) -> dict[str, Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
    except (ValueError, UnicodeDecodeError) as error:  # binascii.Error is a ValueError
        raise _not_issued() from error
    if not isinstance(data, dict):
        raise _not_issued()
    return data


def _is_sort_key(key: object, key_size: int) -> TypeGuard[list[int]]:
    """Sort keys are tuples of integers (creation time, insertion order, position)."""
    return (
        isinstance(key, list)
        and len(key) == key_size
        and all(isinstance(part, int) and not isinstance(part, bool) for part in key)
    )


def _not_issued() -> ApiError:
    return invalid("cursor", "is not a cursor returned by this operation")


def paginate(
    operation: str,
    body: dict[str, Any],
    filters: dict[str, Any],
    items: list[Any],
    key: Callable[[Any], Sequence[int]],
    *,
    key_size: int = 2,
) -> tuple[list[Any], dict[str, Any]]:
    """One page of `items` (already filtered); returns (page, pagination member).

    `key` gives each item's sort key, `key_size` integers (by default creation time and
    insertion order), against which a cursor is checked."""
    limit = body.get("limit", DEFAULT_LIMIT)
    ordered = sorted(items, key=lambda item: list(key(item)))
    cursor = body.get("cursor")
    if cursor is not None:
        after = decode_cursor(operation, filters, cursor, key_size)
        ordered = [item for item in ordered if list(key(item)) > after]
    page = ordered[:limit]
    has_more = len(ordered) > limit
    next_cursor = encode_cursor(operation, filters, key(page[-1])) if has_more else ""
    return page, {"hasMore": has_more, "cursor": next_cursor}
