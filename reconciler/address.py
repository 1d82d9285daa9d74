"""Positions in the tree and the addresses of the things a plan changes.

A position is the path of slugs down the tree (project, app, environment, then the kind's own
key: a variable's name, a domain's host), written `shop/web/production`: the label a plan shows
for an object. An address is a kind at a position: `variable.shop/web/production/KEY`. Both are
written and read here only: every other module passes a `TreePath` or an `Address` and asks it
for its parts instead of joining or splitting the text.
"""

from __future__ import annotations

from dataclasses import dataclass

ENVIRONMENT_DEPTH = 3
"""project/app/environment: where the environment-level kinds live."""


@dataclass(frozen=True, order=True)
class TreePath:
    """Where an object is in the tree: `shop/web/production`. Ordered as its slugs are."""

    slugs: tuple[str, ...]

    @classmethod
    def of(cls, *slugs: str) -> TreePath:
        return cls(slugs)

    @classmethod
    def parse(cls, text: str) -> TreePath:
        """`shop/web/production` -> the path of that environment."""
        return cls(tuple(text.split("/")))

    def __str__(self) -> str:
        return "/".join(self.slugs)

    @property
    def depth(self) -> int:
        """1 for a project, 2 for an app, 3 for an environment, 4 for what is in one."""
        return len(self.slugs)

    @property
    def leaf(self) -> str:
        """The last slug: a variable's name, a domain's host, an app's slug."""
        return self.slugs[-1]

    @property
    def parent(self) -> TreePath:
        """The path above: an environment's app, an app's project."""
        return TreePath(self.slugs[:-1])

    def child(self, slug: str) -> TreePath:
        """The path of `slug` under this one."""
        return TreePath((*self.slugs, slug))

    @property
    def environment(self) -> TreePath:
        """project/app/environment of a path at or below an environment."""
        return TreePath(self.slugs[:ENVIRONMENT_DEPTH])

    def lineage(self) -> tuple[TreePath, ...]:
        """This path and every one above it, nearest first."""
        return tuple(TreePath(self.slugs[:depth]) for depth in range(self.depth, 0, -1))


@dataclass(frozen=True, order=True)
class Address:
    kind: str
    path: TreePath

    @classmethod
    def of(cls, kind: str, *parts: str) -> Address:
        return cls(kind, TreePath(parts))

    @classmethod
    def parse(cls, text: str) -> Address:
        """`variable.shop/web/production/KEY`; a ValueError for text that is no address (a
        kind, a dot, a path)."""
        kind, dot, path = text.partition(".")
        if not dot or not kind or not path:
            raise ValueError(f"{text!r} is not an address (KIND.PATH)")
        return cls(kind, TreePath.parse(path))

    def __str__(self) -> str:
        return f"{self.kind}.{self.path}"

    @property
    def parts(self) -> tuple[str, ...]:
        """The slugs of its path: `("shop", "web", "production", "KEY")`."""
        return self.path.slugs

    @property
    def leaf(self) -> str:
        """The last part: a variable's name, a domain's host, an app's slug."""
        return self.path.leaf

    @property
    def parent(self) -> TreePath:
        """The path above the leaf: a variable's environment, an app's project."""
        return self.path.parent

    def sibling(self, leaf: str) -> Address:
        """The address of the same kind and scope with another leaf."""
        return Address(self.kind, self.parent.child(leaf))

    @property
    def environment(self) -> TreePath:
        """project/app/environment of an address at or below an environment."""
        return self.path.environment

