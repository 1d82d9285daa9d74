"""A package face whose names load their modules on first use (PEP 562).

`reconciler.platform` and `reconciler.policy_tests` name what their modules define, so callers
write `from reconciler.platform import connect`; importing the package must not import every
module behind those names (httpx; the policy engine and re2), which most commands never use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: each name in `where` is taken from the
    module it maps to when first asked for; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name]), name)

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *where})

    return __getattr__, __dir__
