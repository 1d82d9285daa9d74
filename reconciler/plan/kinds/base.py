"""The Kind interface, and what every resource kind shares: addresses, where calls go, and
normalised comparison.

A kind is one module of `reconciler.plan.kinds` that says everything about one kind of
resource: a `Kind` subclass registered in `reconciler.plan.kinds`, whose hooks the planner,
`--target`, apply's call graph, create-once, `apply --deploy` and the apply report call, plus
the functions that read, normalise and diff it. Each kind compares *normalised* values (`1` and
`1.0` equal, absent lists empty, server defaults filled in) so that what the platform stores
never shows up as a diff. A differing list of plain values carries the items that changed
(computed with deepdiff), so a reviewer of a 60-entry IP list sees the one entry that changed.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Protocol,
    TypeAlias,
    TypeGuard,
    TypeVar,
    overload,
)

from reconciler.address import ENVIRONMENT_DEPTH, TreePath
from reconciler.errors import NotFound, UnexpectedResponse
from reconciler.json_types import JsonObject, JsonScalar, JsonValue
from reconciler.manifest.model import UNSET, App, Environment, Manifest, Project, Prune
from reconciler.plan.changes import (
    ABSENT,
    Action,
    Call,
    Change,
    FieldDiff,
    ItemEdit,
    Note,
    PlanValue,
    SentObject,
    SentValue,
)
from reconciler.plan.options import PlanOptions
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.operations import get_operation, permission
from reconciler.platform.shapes import Shape, unknown_members, unknown_values

if TYPE_CHECKING:
    from deepdiff.model import ChildRelationship

    from reconciler.plan.live import LiveRecord
    from reconciler.platform.operations import Operation
    from reconciler.platform.protocol import Platform

T = TypeVar("T")
S = TypeVar("S")
FoundT = TypeVar("FoundT")
"""What a kind's `read` finds, checked and parsed: what its other hooks are given."""
LiveT = TypeVar("LiveT")
"""The part of what an environment kind found that concerns one environment (`pick`)."""

Reread = Callable[[], Awaitable[JsonObject | None]]
"""Looks up what a create would have made: its response-like data, or None when absent."""

SlugScope = tuple[str, ...]
"""Where a slug is unique: the kind's name, then the address parts of its container:
("project",) for projects, ("app", <project>) for one project's apps."""


def make_call(operation: str, body: SentObject, *, object_id: str | None = None) -> Call:
    """A call of the operation named `operation` with the permission it needs (ID-specific when
    the scope object's ID is known). A name the platform has no operation of is a KeyError."""
    op = get_operation(operation)
    return Call(
        operation=op,
        body=dict(body),
        permission=permission(op, object_id),
        creates=op.creates,
    )


@dataclass(frozen=True)
class Location:
    """Where a kind is read and where its calls go: a project, an app or an environment.

    References are IDs when live state gave them (they survive a rename in the same apply),
    otherwise the manifest's slugs (for objects the same apply creates first). `object_id` is
    the ID of the object at this location when known: a 403 then names the ID-specific
    permission.
    """

    project: str
    app: str | None = None
    environment: str | None = None
    object_id: str | None = None

    @classmethod
    def of(cls, path: TreePath) -> Location:
        """The project, app or environment at `path`, named by its slugs."""
        return cls(path.slugs[0], *path.slugs[1:ENVIRONMENT_DEPTH])

    def body(self, **fields: SentValue) -> dict[str, SentValue]:
        """The request members naming this location, then `fields`."""
        named = {"project": self.project, "app": self.app, "environment": self.environment}
        return {**{k: v for k, v in named.items() if v is not None}, **fields}


@dataclass(frozen=True)
class NewDomain:
    """A domain an apply created, with the DNS records its owner must create."""

    address: str
    host: str
    dns_records: tuple[JsonObject, ...]


class Kind(ABC, Generic[FoundT]):
    """One kind of resource, whose reads find a `FoundT`. What every kind must answer (how it
    is read and recorded, its apply phase, what it means for a deployment) is abstract, so a
    kind missing one cannot be registered (`reconciler.plan.kinds.register`); what only some
    kinds have (slugs, batch calls, workspace-unique names, re-reads after an ambiguous
    create, created objects to report) defaults to "none" here and is overridden by the kinds
    that have it.

    Class attributes: `name` (the address prefix and `Change.kind`), `depth` (parts of a full
    address), `container` (a `--target` of it covers every kind below it; its deletion waits
    for everything under it), `read_at` (the depth of the `Location` `read` is given: a
    project reads itself at 1, apps are read at their project, settings at their app; an
    environment kind read at 1 is listed once per project and each environment takes its
    share, see `EnvironmentKind.pick`) and `read_operation`.
    """

    name: ClassVar[str]
    depth: ClassVar[int]
    container: ClassVar[bool]
    read_at: ClassVar[ReadAt]
    read_operation: ClassVar[str]

    @abstractmethod
    async def read(self, platform: Platform, at: Location) -> FoundT:
        """What live state holds of this kind at `at`, checked to have the members the plan
        keys on (an `UnexpectedResponse` otherwise)."""

    @abstractmethod
    def record(self, record: LiveRecord, at: Location, label: TreePath, found: FoundT) -> None:
        """Note what `read` found at `label` (`shop/web/production`) in the live-state record:
        the permission the read needed, the part of it the plan depends on (its digest) and
        the IDs it names. `at` is where it was read, with the environment's ID once known."""

    def slug_scope(self, change: Change) -> SlugScope | None:
        """Where the slugs this change moves are unique; None for kinds without slugs."""
        return None

    @abstractmethod
    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        """The call's place among the calls of one environment (`ApplyPhase`, lower first);
        None for calls outside an environment."""

    def batch_key(self, change: Change) -> str | None:
        """The key under which a batch call of another change of this kind decides `change`,
        which carries no call of its own (a variable sent in a batch); None: no batch does."""
        return None

    def batch_keys(self, call: Call) -> Collection[str]:
        """The distinct keys of the changes without calls that `call` decides (a batch
        call's): each is looked up once, so a key listed twice would cover its change twice."""
        return ()

    def call_parts(self, change: Change, call: Call) -> Iterable[tuple[str, SentObject]]:
        """What `call`, carried by `change`, sends for each change it decides, by that change's
        address: all of it for `change`, unless it is a batch deciding other changes of this
        kind too (a variables batch: one part per variable). Apply's checks of a saved plan
        compare what plans send, and find the secrets they send, part by part."""
        yield change.address, call.body

    def unique_key(self, change: Change) -> str | None:
        """A key unique in the whole workspace (a domain's host): a delete of it runs before
        a create of it elsewhere. None for kinds unique only under their parent."""
        return None

    def reread(self, platform: Platform, call: Call) -> Reread | None:
        """How to find what `call` creates after an ambiguous failure; None when the call
        creates nothing this kind can look up."""
        return None

    @abstractmethod
    def rollout_reason(self, change: Change) -> str | None:
        """Why a change of this kind that applied needs a new deployment of every environment
        under its address (`settings`, `image`...); None when it does not."""

    @abstractmethod
    def configures_deployment(self) -> bool:
        """Whether a change of this kind that did not apply leaves the configuration of the
        environments under it half changed (`apply --deploy` then leaves them out)."""

    def created(self, change: Change, operation: Operation, data: object) -> NewDomain | None:
        """What apply reports about an object a call of this change created (a new domain's
        DNS records); None for nothing."""
        return None


class EnvironmentKind(Kind[FoundT], Generic[FoundT, LiveT]):
    """A kind managed per environment: the planner reads and plans it for each environment of
    the manifest that `manages` it. What one environment's read finds is its `LiveT` too (a
    kind read per environment, or at a project, picks what it found for an environment as the
    same type it reads), except for a kind read at its app (`ReadAt.APP`), whose `pick` takes
    one environment's part of the app's."""

    @abstractmethod
    def manages(self, environment: Environment) -> bool:
        """Whether the manifest manages this kind in `environment`."""

    @abstractmethod
    def pick(self, found: FoundT, at: Location) -> LiveT:
        """The part of what `read` found that concerns the environment at `at` (a kind read
        per app finds every environment of it at once, one read per project every environment
        of the project). `at` names the app by ID, the environment by name, and carries the
        environment's ID when a read of the app gave it (`object_id`)."""

    @abstractmethod
    def environment_id(self, live: LiveT) -> str | None:
        """The environment's ID, when what was read for it names it."""

    @abstractmethod
    def plan(self, job: EnvironmentJob, live: LiveT | None) -> None:
        """Plan `job`'s environment against `live` (None: its app is created or replaced by
        this plan, nothing was read), adding changes and notes through `job.planning`."""

    async def finish(self, planning: Planning) -> None:
        """Called once every environment is read and planned, for what crosses environments
        (a host moving between two of them); nothing by default."""
        return None

    def plan_notes(self, planning: Planning) -> Sequence[Note]:
        """What the plan says once about this kind when it is assembled (a warning joins the
        plan's warnings, any other note its closing remarks); none by default."""
        return ()

    def declared_secrets(self, planning: Planning) -> Mapping[str, str]:
        """The secret source the manifest declares for each planned change of this kind that
        sends one, by address (a saved plan is held to it); none by default."""
        return {}


@dataclass(frozen=True)
class EnvironmentJob:
    """One environment of the manifest, as the planner hands it to each `EnvironmentKind`."""

    planning: Planning
    project: str
    app: str
    environment: Environment
    at: Location
    path: TreePath
    """`shop/web/production`"""
    depends_on: tuple[str, ...]
    """What every change of this environment waits for (its app's or project's create)."""


EnvironmentPath = tuple[TreePath, Environment]
"""An environment of the manifest, with the position of the app holding it."""


@dataclass(frozen=True)
class Container:
    """A project or an app of the manifest as its kind planned it: what it hands to the kinds
    below it."""

    desired: Project | App
    path: TreePath
    """Where it is: `shop`, `shop/web`."""
    at: Location
    """How the reads and calls below it name it: IDs when live state gave them, else the
    manifest's slugs (the same apply creates it first)."""
    fresh: bool
    """Created or replaced by this plan: nothing under it is read."""
    depends_on: tuple[str, ...]
    """What every change below it waits for (its create, replace or rename, else its
    container's)."""
    environments: tuple[EnvironmentPath, ...]
    """The environments of the manifest under it that the targets reach (an app's own in plan
    order), for the kinds read and planned per environment."""


Descend = Callable[[Container], Awaitable[None]]
"""What the planner does with a planned container: plan everything below it."""


class ContainerKind(Kind[FoundT]):
    """A kind whose objects hold others: a project its apps, an app its environments. The
    planner walks the container kinds in registry order, then plans the environment kinds in
    the environments of the last: each container kind plans its objects under the container
    above it and hands each on (`descend`) once planned, so nothing waits for a sibling."""

    @abstractmethod
    async def plan_under(
        self, planning: Planning, parent: Container | None, descend: Descend
    ) -> None:
        """Read this kind's live objects under `parent` (None: the workspace), plan each the
        manifest lists there against its live part (changes and notes through `planning`),
        and await `descend` for each, concurrently."""

    @abstractmethod
    def listed_slugs(self, manifest: Manifest) -> Mapping[tuple[str, ...], Sequence[str]]:
        """The slugs of this kind the manifest lists, in its order, by the address parts of
        their container (`()`: the workspace): a plan lists changes in that order, and a slug
        of a scope the manifest wants is not free."""

    def listed_environments(
        self, manifest: Manifest
    ) -> Mapping[tuple[str, ...], Sequence[Environment]]:
        """The environments the manifest lists in each object of this kind, by its address
        parts; none by default (a project holds apps, not environments)."""
        return {}

    def slug_is_free(self, planning: Planning) -> Callable[[str], Awaitable[bool]] | None:
        """How to ask the platform whether a slug is free, where the plan does not read every
        holder of one (a temporary slug breaking a rename cycle must be); None: it does."""
        return None


# The registry holds kinds of every live type: each kind's hooks are typed by its own, and
# whoever walks the registry hands each kind only what that kind read.
AnyKind: TypeAlias = "Kind[Any]"
AnyContainerKind: TypeAlias = "ContainerKind[Any]"
AnyEnvironmentKind: TypeAlias = "EnvironmentKind[Any, Any]"


class Planning(ABC):
    """What the planner offers the kinds while it plans."""

    platform: Platform
    record: LiveRecord
    options: PlanOptions
    manifest: Manifest
    prune: Prune
    going_away: dict[str, str]
    """The ids of apps this plan deletes or replaces, with their change addresses."""
    unmanaged_fields: list[tuple[str, str]]
    """(address, member path): what live state holds that this reconciler does not know and
    the manifest does not manage (in `opaque`), for the plan's one note about them."""
    slug_holders: dict[SlugScope, dict[str, str]]
    """Who holds each live slug of a scope, as a note names it (plan/slug_moves.py)."""
    kind_states: dict[type, object]
    """What kinds keep while this plan is built, by its type (`state`)."""

    def state(self, of: type[S]) -> S:
        """This plan's `of`, made on first use: what a kind keeps while one plan is built (a
        kind is one object, shared by every plan)."""
        found = self.kind_states.get(of)
        if isinstance(found, of):
            return found
        made = self.kind_states[of] = of()
        return made

    def keep_unknown(self, where: str, live: JsonObject, shape: Shape) -> None:
        """Note the members (and values) of a live project or app this reconciler does not
        know: their updates send only what changes, so these stay as they are."""
        found = unknown_members(live, shape) + [
            f"{path} {live.get(path)!r}" for path in unknown_values(live, shape)
        ]
        self.unmanaged_fields.extend((where, path) for path in found)

    @abstractmethod
    def add(self, change: Change | None, depends_on: Collection[str] = ()) -> None:
        """Add `change` (if any) to the plan, waiting for `depends_on` too."""

    @abstractmethod
    def note(self, note: Note) -> None:
        """Add a plan-wide note."""

    @abstractmethod
    def selected(self, change_address: str) -> bool:
        """Whether the `--target`s cover `change_address`."""

    @abstractmethod
    def reads(self, *parts: str) -> bool:
        """Whether the `--target`s reach what sits at `parts` (a container's slugs, an
        environment's name), so that the plan must read and plan it."""

    @abstractmethod
    def manages(self, kind: AnyEnvironmentKind, project: str, app: str, environment: str) -> bool:
        """Whether the manifest manages `kind` in that environment."""


def waits_for(change: Change | None, *actions: Action) -> tuple[str, ...]:
    """The change's address when changes below it must wait for it (created, replaced,
    renamed)."""
    if change is None:
        return ()
    if change.action in actions or change.reason == "renamed":
        return (change.address,)
    return ()


class LiveIdentity(Protocol):
    """What a live project and a live app share (`LiveProject`, `LiveApp`), parsed."""

    @property
    def slug(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def delete_protection(self) -> bool: ...


def identity_diffs(
    desired: Project | App, live: LiveIdentity, body: dict[str, SentValue]
) -> list[FieldDiff]:
    """Slug (a rename through a pinned id), name and delete protection: what projects and apps
    share. Each differing field is also added to the update `body`."""
    diffs = []
    if live.slug != desired.slug:
        diffs.append(FieldDiff("slug", live.slug, desired.slug))
        body["slug"] = desired.slug
    if desired.name is not UNSET and live.name != desired.name:
        diffs.append(FieldDiff("name", live.name, desired.name))
        body["name"] = desired.name
    protection = desired.delete_protection
    if protection is not UNSET and live.delete_protection != protection:
        diffs.append(FieldDiff("deleteProtection", live.delete_protection, protection))
        body["deleteProtection"] = protection
    return diffs


def text_member(answer: JsonObject, name: str) -> str | None:
    """The member `name` of a live answer when it is a string, else None (absent, or of
    another type, which the client's shape check refuses already)."""
    value = answer.get(name)
    return value if isinstance(value, str) else None


def require_fields(operation: str, items: T, *fields: str) -> T:
    """`items` (an object or a list of objects) after checking each has non-empty string `fields`.

    The plan keys everything on these (ids, slugs, variable keys, host names); an answer
    without them is reported as an unexpected response instead of crashing later.
    """
    for item in items if isinstance(items, list) else [items]:
        for name in fields:
            value = item.get(name) if isinstance(item, Mapping) else None
            if not isinstance(value, str) or not value:
                raise UnexpectedResponse(
                    f"{operation}: the platform returned an object without a `{name}` string",
                    operation=operation,
                )
    return items


def number(value: PlanValue) -> PlanValue:
    """Numbers compare by value: `1`, `1.0` and `True`-free ints all become floats."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return value


@overload
def plain(value: JsonValue) -> JsonValue: ...
@overload
def plain(value: PlanValue) -> PlanValue: ...
def plain(value: PlanValue) -> PlanValue:
    """JSON-like data as plain dicts and lists (tuples and read-only mappings thawed): JSON
    stays JSON."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def display_number(value: JsonValue) -> JsonValue:
    """`1.0` shown as `1`, `0.25` as `0.25`: how a person wrote it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def nested_diffs(
    path: str,
    before: PlanValue,
    after: PlanValue,
    *,
    walk_lists: bool = False,
    unordered_lists: Collection[str] = (),
) -> list[FieldDiff]:
    """Field-level differences between two JSON-like values, paths in manifest names.

    Mappings are walked key by key (`runtime.healthcheck.path`); a key missing on one side
    is `ABSENT` there. Lists are one field (for settings the whole new list is what is sent,
    so that is what a reviewer should see) unless `walk_lists` is set, when lists of the same
    length holding mappings are walked item by item (`match[1].remoteIp.notIn`). A differing
    list of plain values carries its item edits (`value_diff`); `unordered_lists` names the
    ones the platform treats as sets, by path with the indexes left out (`match[].method.methods`).
    """
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        diffs: list[FieldDiff] = []
        for key in _ordered_keys(before, after):
            sub = f"{path}.{key}" if path else str(key)
            diffs.extend(
                nested_diffs(
                    sub,
                    before.get(key, ABSENT),
                    after.get(key, ABSENT),
                    walk_lists=walk_lists,
                    unordered_lists=unordered_lists,
                )
            )
        return diffs
    if (
        walk_lists
        and isinstance(before, (list, tuple))
        and isinstance(after, (list, tuple))
        and len(before) == len(after)
        and all(isinstance(item, Mapping) for item in (*before, *after))
    ):
        diffs = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            diffs.extend(
                nested_diffs(
                    f"{path}[{index}]", old, new, walk_lists=True, unordered_lists=unordered_lists
                )
            )
        return diffs
    if comparable(before) == comparable(after):
        return []
    return [value_diff(path, before, after, unordered=_without_indexes(path) in unordered_lists)]


def value_diff(
    path: str, before: PlanValue, after: PlanValue, *, unordered: bool = False
) -> FieldDiff:
    """The diff of one field, with its item edits when both sides are lists of plain values."""
    items: tuple[ItemEdit, ...] = ()
    if is_plain_list(before) and is_plain_list(after):
        items = list_item_edits(before, after, unordered=unordered)
    return FieldDiff(path=path, before=plain(before), after=plain(after), items=items)


def is_plain_list(value: PlanValue) -> TypeGuard[Sequence[JsonScalar]]:
    """A list (or tuple) of strings, numbers, booleans and nulls: one whose items deepdiff pairs."""
    return isinstance(value, (list, tuple)) and all(
        item is None or isinstance(item, (str, int, float, bool)) for item in value
    )


def list_item_edits(
    before: Sequence[JsonScalar], after: Sequence[JsonScalar], *, unordered: bool = False
) -> tuple[ItemEdit, ...]:
    """The items that differ between two lists of plain values, in list order (via deepdiff).

    An ordered list (`command`) is aligned as a sequence: an insertion in the middle is that one
    insertion, a replaced argument one `change`. An `unordered` one (the platform treats it as
    a set: IP ranges, methods, watch paths) only gains and loses items; when it differs only
    in order or repetition, the ordered edits say what is sent. Numbers compare by value.
    Empty when deepdiff reports something these cannot say (then the whole lists are shown).
    """
    if unordered:
        edits = _deepdiff_edits(before, after, unordered=True)
        if edits:
            return edits
    return _deepdiff_edits(before, after, unordered=False)


_ITEM_REPORTS = {"iterable_item_added", "iterable_item_removed", "values_changed", "type_changes"}


def _deepdiff_edits(
    before: Sequence[JsonScalar], after: Sequence[JsonScalar], *, unordered: bool
) -> tuple[ItemEdit, ...]:
    # imported here: deepdiff costs about 80 ms at start-up, and most runs never diff a list
    from deepdiff import DeepDiff

    old = [comparable(item) for item in before]
    new = [comparable(item) for item in after]
    tree = DeepDiff(old, new, ignore_order=unordered, view="tree")
    if set(tree) - _ITEM_REPORTS:
        return ()
    levels = [(report, level) for report, found in tree.items() for level in found]
    # with ignore_order deepdiff names a replaced item's position on the `before` side only:
    # its `after` position is that of an inserted value no other edit claims
    claimed = {_param(level.up.t2_child_rel) for _, level in levels}
    edits: list[ItemEdit] = []
    for report, level in levels:
        i = _param(level.up.t1_child_rel)
        j = _param(level.up.t2_child_rel)
        if report != "iterable_item_removed" and j is None:
            j = next((k for k, v in enumerate(new) if v == level.t2 and k not in claimed), None)
            if j is None:
                return ()
            claimed.add(j)
        if report == "iterable_item_added" and j is not None:
            edits.append(ItemEdit("insert", None, j, None, after[j]))
        elif report == "iterable_item_removed" and i is not None:
            edits.append(ItemEdit("remove", i, None, before[i], None))
        elif i is None or j is None:  # no position on a side the edit needs: cannot say
            return ()
        elif unordered:  # a set has no item "changed in place": one left, another came
            edits.append(ItemEdit("remove", i, None, before[i], None))
            edits.append(ItemEdit("insert", None, j, None, after[j]))
        else:
            edits.append(ItemEdit("change", i, j, before[i], after[j]))
    return tuple(sorted(edits, key=_list_order))


def _param(relationship: ChildRelationship | None) -> int | None:
    """The list position a deepdiff relationship names (None: it names none)."""
    position = None if relationship is None else relationship.param
    return position if isinstance(position, int) else None


def _list_order(edit: ItemEdit) -> tuple[int, int]:
    """Edits by position, a removal before what takes its place."""
    if edit.op == "remove":
        return (edit.before_index or 0, 0)
    return (edit.after_index or 0, 1)


def _without_indexes(path: str) -> str:
    """`match[1].remoteIp.notIn` as `match[].remoteIp.notIn`: the same field in every item."""
    return re.sub(r"\[\d+\]", "[]", path)


def _ordered_keys(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    keys = list(after)
    keys.extend(k for k in before if k not in after)
    return keys


def comparable(value: PlanValue) -> PlanValue:
    """JSON-like data as compared: numbers by value (`1` is `1.0`), tuples as lists."""
    if isinstance(value, Mapping):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return number(value)


def batched(items: Sequence[T], size: int) -> list[list[T]]:
    """`items` in consecutive chunks of at most `size`."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def slug_changed(change: Change) -> bool:
    """Whether an update renames its object (a new slug through a pinned id)."""
    return change.action is Action.UPDATE and (
        change.reason == "renamed" or any(d.path == "slug" for d in change.diffs)
    )


def lookup(
    platform: Platform, operation: str, request: SentObject, id_names: tuple[str, ...]
) -> Reread:
    """A `Reread` that gets the object `request` names, answering in the create's response
    shape (its id under each of `id_names`), None when it does not exist."""

    async def reread() -> JsonObject | None:
        try:
            found: object = await platform.call(operation, request)
        except NotFound:
            return None
        if not isinstance(found, Mapping):
            return None
        data: dict[str, JsonValue] = dict(found)
        for name in id_names:
            data.setdefault(name, found.get("id"))
        return data

    return reread
