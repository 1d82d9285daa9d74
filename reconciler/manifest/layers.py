"""`Layered`: a mapping seen through layers, lowest priority first.

An environment is the layers that end up under it (reconciler/manifest/templates.py lists
them: `appDefaults`, templates, the app's `defaults`, the environment itself). The merge
rules are stated once, here, and shared by the semantic rules and the model builder, so both
see the same effective settings and can say which file and line each value came from:

- mappings merge by key, the nearest (highest) layer's value winning key by key;
- scalars and lists are replaced by the nearest layer that sets them;
- except the lists of `COMBINED_LISTS` in a layer that writes `{prepend: [...], append:
  [...]}`: its items go before (after) the list of the layers above it, a lower layer's
  outside a higher one's, whichever layer above holds the list itself.

A layer is `(data, path)`: `path` is where `data` is written (a path of the document, or a
use of a shared block: `Document.at` finds its place either way).
"""

from __future__ import annotations

from typing import Any, TypeGuard

from reconciler.manifest.problems import Path

COMBINED_LISTS = ("regions", "domains", "policies", "policyTests")
"""The settings lists a shared block (a template, `appDefaults`) may prepend or append to."""
COMBINATION_KEYS = ("prepend", "append")

Layer = tuple[dict[str, Any], Path]


def is_combination(value: Any) -> TypeGuard[dict[str, Any]]:
    """`{prepend: [...], append: [...]}` (either or both) rather than a list."""
    return isinstance(value, dict) and bool(value) and set(value) <= set(COMBINATION_KEYS)


class Layered:
    """A mapping seen through layers (lowest priority first)."""

    def __init__(self, layers: list[Layer]) -> None:
        self.layers = layers

    @property
    def path(self) -> Path:
        return self.layers[-1][1]

    def names(self) -> list[str]:
        return list(dict.fromkeys(k for data, _ in self.layers for k in data))

    def top(self, key: str) -> tuple[Any, Path] | None:
        """The highest layer's value for `key`, and where it is, without merging."""
        for data, path in reversed(self.layers):
            if key in data:
                return data[key], (*path, key)
        return None

    def child(self, key: str) -> Layered | None:
        """`key` as a Layered mapping when the winning value is a mapping, else None."""
        found: list[Layer] = []
        for data, path in reversed(self.layers):
            if key not in data:
                continue
            if not isinstance(data[key], dict):
                break
            found.append((data[key], (*path, key)))
        return Layered(found[::-1]) if found else None

    def value(self, key: str) -> Any:
        """The merged value of `key` (mappings deep-merged)."""
        child = self.child(key)
        if child is not None:
            return {k: child.value(k) for k in child.names()}
        found = self.top(key)
        return None if found is None else found[0]

    def items(self, key: str) -> tuple[list[tuple[Any, Path]], Path] | None:
        """The list `key` ends up as, each item with where it is written, and where the list
        itself is (the nearest plain list, else the nearest combination); None when no layer
        has the key. A layer whose value is neither a list nor a combination is left out
        (the schema reports it)."""
        before: list[tuple[Any, Path]] = []
        listed: list[tuple[Any, Path]] = []
        after: list[tuple[Any, Path]] = []
        where: Path | None = None
        plain = False
        for data, path in self.layers:
            if key not in data:
                continue
            value, here = data[key], (*path, key)
            if isinstance(value, list):
                listed = [(item, (*here, index)) for index, item in enumerate(value)]
                where, plain = here, True
            elif is_combination(value):
                before += _pieces(value, here, "prepend")
                after = _pieces(value, here, "append") + after
                where = where if plain else here
        if where is None:
            return None
        return before + listed + after, where


def _pieces(combination: dict[str, Any], path: Path, side: str) -> list[tuple[Any, Path]]:
    items = combination.get(side)
    if not isinstance(items, list):
        return []
    return [(item, (*path, side, index)) for index, item in enumerate(items)]
