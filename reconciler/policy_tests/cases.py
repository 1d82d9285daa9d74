"""What a policy test is to this package: any object with these attributes.

The manifest's `PolicyTest` (reconciler/manifest/model.py) has them; this package sits beside
the manifest package and imports nothing from it, so it names the shape instead of the class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from reconciler.diagnostics import Place

__all__ = ["Place", "PolicyTestCase"]


class PolicyTestCase(Protocol):
    """A sample request and what the gateway must do with it (see the manifest's `PolicyTest`):
    `decided_by`/`logged_by` None are not checked; `logged_by` `()` means none."""

    @property
    def name(self) -> str: ...

    @property
    def method(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def client_ip(self) -> str: ...

    @property
    def expect(self) -> str: ...

    @property
    def query(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def headers(self) -> Mapping[str, tuple[str, ...]]: ...

    @property
    def decided_by(self) -> str | None: ...

    @property
    def logged_by(self) -> tuple[str, ...] | None: ...

    @property
    def pos(self) -> Place | None: ...
