"""Talking to the platform: the `Platform` interface, its HTTP client and the table of
operations. Loaded lazily: naming `reconciler.platform.Platform` does not import httpx."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from reconciler.lazy_names import lazy_names

# httpx imports its own command-line client when click and rich are installed (the CLI uses
# both), and with it rich's console, progress bar and syntax highlighter and pygments'
# lexers: about half of httpx's import time, in every command that calls the platform, for
# a tool this process never runs. None in sys.modules makes that one import fail, and httpx
# then defines a stand-in `main` (its own fallback for a missing dependency). Set before
# `client` or `connect` import httpx; an httpx._main imported earlier is left as it is.
# typeshed types sys.modules without the None entry the import system documents for this.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

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
__getattr__, __dir__ = lazy_names(__name__, _WHERE)
