"""`plan --explain`: which shared blocks (templates, `appDefaults`) the values of each change
come from, and how far each block reaches.

The model keeps, with each value that came through a shared block, a `SharedPosition` naming
the blocks (outermost first). A change's blocks are those of the values it sends: the fields
a settings change writes, the policies a policy list inserts or changes, the variable or
domain it creates or updates. A deletion sends nothing of the manifest's and names none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from reconciler.address import Address, TreePath
from reconciler.json_types import JsonValue
from reconciler.manifest.model import (
    Environment,
    Manifest,
    Position,
    listed,
    sources_of,
)
from reconciler.plan.changes import Action, Change, Note, Plan, PolicyEdit, PolicyListDetail


@dataclass(frozen=True)
class Reach:
    """What one shared block changes in a plan."""

    source: str
    changes: int
    apps: tuple[str, ...]
    projects: tuple[str, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "source": self.source,
            "changes": self.changes,
            "apps": len(self.apps),
            "projects": len(self.projects),
        }

    def __str__(self) -> str:
        return (
            f"{self.source} changes {_count(len(self.apps), 'app')} in "
            f"{_count(len(self.projects), 'project')} ({_count(self.changes, 'change')})"
        )


def explained(plan: Plan, manifest: Manifest) -> Plan:
    """The plan with each change's shared blocks (`Change.templates`, and a note saying so)
    and a note for each block saying how far it reaches."""
    changes = []
    for change in plan.changes:
        found = change_sources(change, manifest)
        if found:
            note = f"from {_listing(found)}"
            change = dataclasses.replace(change, templates=found, notes=(*change.notes, note))
        changes.append(change)
    notes = tuple(Note("info", str(reach)) for reach in template_reach(changes))
    return dataclasses.replace(plan, changes=tuple(changes), notes=plan.notes + notes)


def template_reach(changes: Iterable[Change]) -> list[Reach]:
    """Each shared block the changes come from, with what it changes, in order of first use."""
    counted: dict[str, tuple[int, dict[str, None], dict[str, None]]] = {}
    for change in changes:
        parts = Address.parse(change.address).parts
        for source in change.templates:
            number, apps, projects = counted.get(source, (0, {}, {}))
            apps[str(TreePath(parts[:2]))] = None
            projects[parts[0]] = None
            counted[source] = (number + 1, apps, projects)
    return [
        Reach(source, number, tuple(apps), tuple(projects))
        for source, (number, apps, projects) in counted.items()
    ]


def change_sources(change: Change, manifest: Manifest) -> tuple[str, ...]:
    """The shared blocks the values `change` sends are written in (outermost first)."""
    if change.action in (Action.DELETE, Action.BLOCKED) or change.kind not in _ENVIRONMENT_KINDS:
        return ()
    parts = Address.parse(change.address).parts
    project = manifest.project(parts[0])
    app = project.app(parts[1]) if project else None
    environment = app.environment(parts[2]) if app else None
    if environment is None:
        return ()
    if change.kind == "settings":
        positions = _settings_positions(environment, [d.path for d in change.diffs])
    elif isinstance(change.detail, PolicyListDetail):
        positions = _policy_positions(environment, change.detail.edits)
    else:
        positions = iter([change.position])
    return tuple(dict.fromkeys(s for position in positions for s in sources_of(position)))


_ENVIRONMENT_KINDS = ("settings", "variable", "policies", "domain")


def _settings_positions(
    environment: Environment, paths: Sequence[str]
) -> Iterator[Position | None]:
    for path in paths:
        section, _, rest = path.partition(".")
        if section == "regions":
            yield environment.positions.get("regions")
            yield from (region.pos for region in listed(environment.regions))
            continue
        block = getattr(environment, section, None)
        positions = getattr(block, "positions", {})
        yield positions.get(rest.partition(".")[0])


def _policy_positions(
    environment: Environment, edits: Sequence[PolicyEdit]
) -> Iterator[Position | None]:
    policies = listed(environment.policies)
    yield environment.positions.get("policies")
    for edit in edits:
        index = edit.after_index
        if edit.op in ("insert", "change") and index is not None and index < len(policies):
            yield policies[index].pos


def _listing(sources: Sequence[str]) -> str:
    if len(sources) == 1:
        return sources[0]
    return f"{', '.join(sources[:-1])} and {sources[-1]}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
