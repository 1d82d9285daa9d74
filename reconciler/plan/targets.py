"""`--target ADDRESS`: limit a plan to subtrees of the address space.

A target is an address or a prefix of one: `project.shop` covers everything
in shop; `app.shop/web` the app and every environment-level change under it;
`variable.shop/web/production` that environment's variables;
`variable.shop/web/production/KEY` one variable. The same rule decides what
live state the plan reads, so a targeted plan reads only what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.address import Address
from reconciler.errors import UsageError
from reconciler.plan import kinds


@dataclass(frozen=True)
class Target:
    kind: str
    parts: tuple[str, ...]

    def __str__(self) -> str:
        return str(Address.of(self.kind, *self.parts))

    def covers(self, kind: str, parts: tuple[str, ...]) -> bool:
        """Whether the change at `kind.parts` is this target or below it."""
        if kinds.get(self.kind).container:
            return parts[: len(self.parts)] == self.parts
        return kind == self.kind and parts[: len(self.parts)] == self.parts

    def may_cover_under(self, parts: tuple[str, ...], kind: str | None) -> bool:
        """Whether something of `kind` (any kind: None) at or under `parts` may be covered."""
        common = min(len(parts), len(self.parts))
        if parts[:common] != self.parts[:common]:
            return False
        if kind is None or kinds.get(self.kind).container:
            return True
        return kind == self.kind


def parse_address(text: str) -> tuple[str, tuple[str, ...]]:
    try:
        parsed = Address.parse(text)
    except ValueError:
        parsed = None
    if parsed is None or parsed.kind not in kinds.names():
        raise UsageError(
            f"invalid address {text!r}",
            hint="use KIND.PATH with KIND one of "
            + ", ".join(kinds.names())
            + " (e.g. project.shop, app.shop/web, settings.shop/web/production)",
        )
    return parsed.kind, parsed.parts


def parse_target(text: str) -> Target:
    kind, parts = parse_address(text.strip())
    depth = kinds.get(kind).depth
    if len(parts) > depth or any(not p for p in parts):
        raise UsageError(
            f"invalid target {text!r}: a {kind} address has at most {depth} "
            "non-empty part(s) separated by '/'"
        )
    return Target(kind, parts)


@dataclass(frozen=True)
class Scope:
    """The targets of a plan; no targets means everything."""

    targets: tuple[Target, ...] = ()

    @classmethod
    def parse(cls, texts: tuple[str, ...]) -> Scope:
        return cls(tuple(parse_target(t) for t in texts))

    @property
    def everything(self) -> bool:
        return not self.targets

    def covers(self, change_address: str) -> bool:
        if self.everything:
            return True
        kind, parts = parse_address(change_address)
        return any(t.covers(kind, parts) for t in self.targets)

    def reads(self, *parts: str, kind: str | None = None) -> bool:
        """Whether the plan must read what sits at `parts` (for `kind`, or any kind)."""
        if self.everything:
            return True
        return any(t.may_cover_under(tuple(parts), kind) for t in self.targets)
