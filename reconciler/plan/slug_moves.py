"""Slug moves: renames, deletes and creates that share a slug, in an order that works.

Slugs are unique in their scope: project slugs in the workspace, app slugs in their project.
A call that puts an object into a slug (a create, or a rename through a pinned `id:`) succeeds
only once the object holding that slug has left it: renamed away, or deleted by `prune.apps`.
So the plan makes such a change depend on the change that frees its slug and lists it after
that one, and apply (`reconciler/apply/call_graph.py`) sends the call that takes a slug only after
the call that frees it, whatever the manifest's key order. What each call frees and takes is
read from the calls themselves (`slug_steps`), so a saved plan is ordered the same way.

Renames that wait for one another in a cycle (a swap, a rotation) are broken at one of them:
it moves to a temporary slug first, which frees its own, and takes its new slug last. An apply
that stops in between leaves it at the temporary slug, from where the next plan renames it
without a cycle.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Hashable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass

from reconciler.address import Address
from reconciler.errors import ReconcilerError
from reconciler.plan import kinds
from reconciler.plan.changes import Action, Change, Note
from reconciler.plan.kinds.base import SlugScope

Scope = SlugScope

_CREATES = frozenset({"projects.createProject", "apps.createApp"})
_UPDATES = frozenset({"projects.updateProject", "apps.updateApp"})
_DELETES = frozenset({"projects.deleteProject", "apps.deleteApp"})
_NAMES_OBJECT = ("project", "app")  # the members of an update call that say which object
TEMPORARY_SUFFIX = "-renaming"
_SLUG_MAX = 255  # the spec's bound for project and app slugs (3 to 255 characters)
_CANDIDATES = 20  # temporary slugs tried (each one read, for projects) before giving up


@dataclass(frozen=True)
class SlugStep:
    """What one call does to the slugs of its scope."""

    frees: str | None = None
    takes: str | None = None


def slug_scope(change: Change) -> Scope | None:
    """The scope a change moves slugs in (None for kinds without slugs)."""
    return kinds.get(change.kind).slug_scope(change)


def slug_steps(change: Change) -> tuple[SlugStep, ...]:
    """One step per call of a project or app change, read from the calls (empty for others)."""
    if slug_scope(change) is None:
        return ()
    slug = (change.before or {}).get("slug")
    current = slug if isinstance(slug, str) else None
    steps = []
    for call in change.calls:
        wanted = call.body.get("slug")
        step = SlugStep()
        if call.operation.name in _CREATES and isinstance(wanted, str):
            step = SlugStep(takes=wanted)
        elif call.operation.name in _DELETES:
            step = SlugStep(frees=current)
        elif call.operation.name in _UPDATES and isinstance(wanted, str) and wanted != current:
            step = SlugStep(frees=current, takes=wanted)
        if step != SlugStep():
            current = step.takes
        steps.append(step)
    return tuple(steps)


def temporary_slugs(slug: str) -> Iterator[str]:
    """Candidates for parking an object that now has `slug`: `<slug>-renaming`, then
    `<slug>-renaming-2`, ... Only lowercase letters, digits and hyphens are added to a valid
    slug, cut so that each stays within the spec's 255 characters."""
    for number in range(1, _CANDIDATES + 1):
        suffix = TEMPORARY_SUFFIX + (f"-{number}" if number > 1 else "")
        yield slug[: _SLUG_MAX - len(suffix)] + suffix


async def temporary_slug(
    cycle: Cycle, taken: Collection[str], is_free: Callable[[str], Awaitable[bool]] | None
) -> str:
    """The first candidate for the breaker of `cycle` that is not `taken` (and, where the plan
    does not know every live slug of the scope, that `is_free` confirms)."""
    current = (cycle.breaker.before or {}).get("slug")
    assert isinstance(current, str)
    for candidate in temporary_slugs(current):
        if candidate not in taken and (is_free is None or await is_free(candidate)):
            return candidate
    raise ReconcilerError(
        f"no free temporary slug for renaming {cycle.breaker.address}: every candidate "
        f"{current}{TEMPORARY_SUFFIX}-N is taken",
        hint="rename one of the objects of the cycle in a separate apply",
    )


@dataclass(frozen=True)
class Cycle:
    """Renames that each wait for the slug of the next; `breaker` moves out of the way first."""

    scope: Scope
    members: tuple[Change, ...]

    @property
    def breaker(self) -> Change:
        return self.members[0]


class SlugMoves:
    """The slug moves of a plan's changes.

    `held` names the live holder of every slug the plan has seen, per scope (all apps of a
    read project; the manifest's projects and the holders of the slugs they are renamed to);
    `reserved` is every slug the manifest wants, per scope. A temporary slug avoids both.
    """

    def __init__(
        self,
        changes: Sequence[Change],
        held: Mapping[Scope, Mapping[str, str]] | None = None,
        reserved: Mapping[Scope, Collection[str]] | None = None,
    ) -> None:
        self.changes = list(changes)
        self.held = held or {}
        self.reserved = reserved or {}
        self._freed_by: dict[tuple[Scope, str], Change] = {}
        for change in self.changes:
            scope = slug_scope(change)
            if scope is None:
                continue
            for step in slug_steps(change):
                if step.frees is not None:
                    self._freed_by[(scope, step.frees)] = change
            blocked = (change.before or {}).get("slug") if change.action is Action.BLOCKED else None
            if isinstance(blocked, str):
                # would free its slug if delete protection allowed: what takes it waits, and
                # apply skips that instead of meeting a 409
                self._freed_by[(scope, blocked)] = change

    def freer(self, change: Change, slug: str) -> Change | None:
        """The change that frees `slug` in the scope of `change` (possibly itself), if any."""
        scope = slug_scope(change)
        return None if scope is None else self._freed_by.get((scope, slug))

    def starts_after(self, change: Change) -> Change | None:
        """The other change whose call `change`'s first slug move waits for, if any."""
        moves = [step for step in slug_steps(change) if step != SlugStep()]
        if not moves or moves[0].takes is None:
            return None
        freer = self.freer(change, moves[0].takes)
        return None if freer is change else freer

    def cycles(self) -> list[Cycle]:
        """Plain renames that wait for one another in a ring, each broken at its first address."""
        waits_for = {
            change.address: freer
            for change in self.changes
            if _single_rename(change) is not None
            and (freer := self.starts_after(change)) is not None
            and _single_rename(freer) is not None
        }
        by_address = {change.address: change for change in self.changes}
        found: list[Cycle] = []
        seen: set[str] = set()
        for start in sorted(waits_for):
            path: list[str] = []
            address = start
            while address in waits_for and address not in seen:
                seen.add(address)
                path.append(address)
                address = waits_for[address].address
            if address in path:  # the walk came back to itself: a ring
                ring = sorted(path[path.index(address) :])
                scope = slug_scope(by_address[ring[0]])
                assert scope is not None
                found.append(Cycle(scope, tuple(by_address[a] for a in ring)))
        return found

    def taken(self, scope: Scope) -> set[str]:
        """Every slug of `scope` a temporary slug must not be: live, wanted, or moved to."""
        slugs = set(self.held.get(scope, {})) | set(self.reserved.get(scope, ()))
        for change in self.changes:
            if slug_scope(change) == scope:
                for step in slug_steps(change):
                    slugs.update(s for s in (step.frees, step.takes) if s is not None)
        return slugs

    def resolved(self, temporaries: Mapping[str, str]) -> tuple[list[Change], list[Note]]:
        """The changes with each cycle broken (`temporaries`: breaker address -> temporary
        slug), each taker depending on the change that frees its slug, and the plan notes
        for slugs held by objects the plan does not move."""
        cycles = {cycle.breaker.address: cycle for cycle in self.cycles()}
        broken = [
            _park(change, cycles[change.address], temporaries[change.address])
            if change.address in temporaries
            else change
            for change in self.changes
        ]
        moves = SlugMoves(broken, self.held, self.reserved)
        notes: list[Note] = []
        return [moves._waiting(change, notes) for change in broken], notes

    def _waiting(self, change: Change, notes: list[Note]) -> Change:
        """`change` depending on (and noting) what frees each slug it takes."""
        depends, said = list(change.depends_on), list(change.notes)
        steps = slug_steps(change)
        for index, step in enumerate(steps):
            if step.takes is None or any(s.frees == step.takes for s in steps[:index]):
                continue
            freer = self.freer(change, step.takes)
            if freer is not None and freer is not change:
                depends.append(freer.address)
                said.append(_waits_note(step.takes, freer))
                continue
            holder = self.held.get(slug_scope(change) or (), {}).get(step.takes)
            if freer is None and holder is not None:
                message = (
                    f"the slug {step.takes!r} is held by {holder}, which this plan neither "
                    "renames nor deletes, so apply would fail (409): rename or delete it "
                    "first, or pick another slug"
                )
                notes.append(Note("warning", message, change.address))
                said.append(message)
        if depends == list(change.depends_on) and said == list(change.notes):
            return change
        return dataclasses.replace(
            change, depends_on=tuple(dict.fromkeys(depends)), notes=tuple(said)
        )


def _waits_note(slug: str, freer: Change) -> str:
    if freer.action is Action.BLOCKED:
        return (
            f"takes the slug {slug!r} from {freer.address}, whose deletion delete protection "
            "blocks: apply skips it until that app is deleted"
        )
    return f"takes the slug {slug!r} once {freer.address} has freed it"


def _single_rename(change: Change) -> SlugStep | None:
    """The one slug move of a change that only renames (one call frees and takes), if it is so."""
    moves = [step for step in slug_steps(change) if step != SlugStep()]
    if len(moves) == 1 and moves[0].frees is not None and moves[0].takes is not None:
        return moves[0]
    return None


def _park(change: Change, cycle: Cycle, temporary: str) -> Change:
    """The breaker of `cycle`: a call moving it to `temporary` before its own rename call."""
    step = _single_rename(change)
    assert step is not None
    index = next(i for i, s in enumerate(slug_steps(change)) if s == step)
    rename = change.calls[index]
    named = {key: rename.body[key] for key in _NAMES_OBJECT if key in rename.body}
    park = dataclasses.replace(rename, body={**named, "slug": temporary})
    others = ", ".join(c.address for c in cycle.members if c is not change)
    note = (
        f"renames in a cycle with {others}, each waiting for the next one's slug: it first "
        f"moves to the temporary slug {temporary!r}, which frees {step.frees!r}, and takes "
        f"{step.takes!r} last; if apply stops in between, it stays at {temporary!r} and the "
        "next apply finishes the rename"
    )
    return dataclasses.replace(
        change,
        calls=(*change.calls[:index], park, *change.calls[index:]),
        notes=(*change.notes, note),
    )


def listing_order(changes: Sequence[Change]) -> list[Change]:
    """`changes` in plan order, except that what takes a slug is listed after what frees it.

    Whole groups move (a project with everything in it, an app with its environments), so a
    change stays below the object it belongs to; otherwise the order is kept.
    """
    moves = SlugMoves(changes)
    by_project = _regroup(list(changes), lambda c: _parts(c)[:1], moves.starts_after)
    ordered: list[Change] = []
    for group in _groups(by_project, lambda c: _parts(c)[:1]).values():
        ordered.extend(_regroup(group, lambda c: _parts(c)[:2], moves.starts_after))
    return ordered


def _parts(change: Change) -> tuple[str, ...]:
    return Address.parse(change.address).parts


def _groups(
    changes: Sequence[Change], key: Callable[[Change], Hashable]
) -> dict[Hashable, list[Change]]:
    groups: dict[Hashable, list[Change]] = {}
    for change in changes:
        groups.setdefault(key(change), []).append(change)
    return groups


def _regroup(
    changes: list[Change],
    key: Callable[[Change], Hashable],
    starts_after: Callable[[Change], Change | None],
) -> list[Change]:
    """The groups of `changes` (by `key`) in a stable topological order of `starts_after`."""
    groups = _groups(changes, key)
    order = list(groups)
    position = {k: i for i, k in enumerate(order)}
    waiting: dict[Hashable, set[Hashable]] = {k: set() for k in order}
    for k, group in groups.items():
        for change in group:
            freer = starts_after(change)
            if freer is not None and key(freer) in groups and key(freer) != k:
                waiting[k].add(key(freer))
    dependents: dict[Hashable, list[Hashable]] = {k: [] for k in order}
    for k, before in waiting.items():
        for b in before:
            dependents[b].append(k)
    ready = [position[k] for k in order if not waiting[k]]
    heapq.heapify(ready)
    listed: list[Hashable] = []
    while ready:
        k = order[heapq.heappop(ready)]
        listed.append(k)
        for d in dependents[k]:
            waiting[d].discard(k)
            if not waiting[d]:
                heapq.heappush(ready, position[d])
    done = set(listed)
    listed.extend(k for k in order if k not in done)  # no cycle can be left; kept whole anyway
    return [change for k in listed for change in groups[k]]
