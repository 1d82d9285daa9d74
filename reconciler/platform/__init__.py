"""Talking to the platform: the `Platform` interface, its HTTP client and the table of
operations. Loaded lazily: naming `reconciler.platform.Platform` does not import httpx."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what `__getattr__` returns, for type checkers
    from reconciler.platform.client import PlatformClient
    from reconciler.platform.connect import connect
    from reconciler.platform.log import CallLog
    from reconciler.platform.operations import OPERATIONS, Operation, permission
    from reconciler.platform.protocol import Platform
    from reconciler.platform.retry import RetryPolicy

    __all__ = [
        "OPERATIONS",
        "CallLog",
        "Operation",
        "Platform",
        "PlatformClient",
        "RetryPolicy",
        "connect",
        "permission",
    ]

_WHERE = {
    "OPERATIONS": "reconciler.platform.operations",
    "CallLog": "reconciler.platform.log",
    "Operation": "reconciler.platform.operations",
    "Platform": "reconciler.platform.protocol",
    "PlatformClient": "reconciler.platform.client",
    "RetryPolicy": "reconciler.platform.retry",
    "connect": "reconciler.platform.connect",
    "permission": "reconciler.platform.operations",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
