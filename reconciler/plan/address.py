"""Addresses of the things a plan changes: `variable.shop/web/production/KEY`.

An address is a kind and the path of slugs down the tree (project, app, environment, then the
kind's own key: a variable's name, a domain's host). It is written and read here only: every
other module asks an `Address` for its parts instead of splitting the text.
"""

from __future__ import annotations

from dataclasses import dataclass

ENVIRONMENT_DEPTH = 3
"""project/app/environment: where the environment-level kinds live."""


@dataclass(frozen=True, order=True)
class Address:
    kind: str
    parts: tuple[str, ...]

    @classmethod
    def of(cls, kind: str, *parts: str) -> Address:
        return cls(kind, parts)

    @classmethod
    def parse(cls, text: str) -> Address:
        """`variable.shop/web/production/KEY`; a ValueError for text that is no address (a
        kind, a dot, a path)."""
        kind, dot, path = text.partition(".")
        if not dot or not kind or not path:
            raise ValueError(f"{text!r} is not an address (KIND.PATH)")
        return cls(kind, tuple(path.split("/")))

    def __str__(self) -> str:
        return f"{self.kind}." + "/".join(self.parts)

    @property
    def leaf(self) -> str:
        """The last part: a variable's name, a domain's host, an app's slug."""
        return self.parts[-1]

    @property
    def scope(self) -> tuple[str, ...]:
        """The parts above the leaf: `("shop", "web", "production")` for a variable."""
        return self.parts[:-1]

    def sibling(self, leaf: str) -> Address:
        """The address of the same kind and scope with another leaf."""
        return Address(self.kind, (*self.scope, leaf))

    @property
    def environment(self) -> tuple[str, ...]:
        """project/app/environment of an address at or below an environment."""
        return self.parts[:ENVIRONMENT_DEPTH]

    @property
    def label(self) -> str:
        """The path as plans name objects: `shop/web/production`."""
        return "/".join(self.parts)
