"""Plan value classes: what will change, why, and the API calls that do it.

A `Plan` is computed by `reconciler/plan/planner.py`, rendered by `reconciler/report`,
saved to a file (`reconciler/plan/planfile.py`) and executed by the `reconciler/apply` package. It never holds a secret
value: a write-only variable's value travels as a `SecretRef`, resolved only
at the moment apply sends the call.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal, TypeAlias

from reconciler.diagnostics import Diagnostic
from reconciler.json_types import JsonObject, JsonScalar
from reconciler.manifest.model import Position

if TYPE_CHECKING:
    from reconciler.checks.capacity import CapacityReport
    from reconciler.checks.findings import Finding
    from reconciler.checks.overrides import Override
    from reconciler.platform.operations import Operation

    # the policy engine (and re2) is imported when a policy list changes, not by every plan
    from reconciler.policy_tests.effect import OutcomeChange

FORMAT_VERSION = "1.0"

ResourceKind = str
"""The name of a kind in the registry, `reconciler.plan.kinds` (`project`, `variable`...)."""
SecretSourceKind = Literal["fromEnv", "fromFile"]
ItemOp = Literal["insert", "remove", "change"]
PolicyOp = Literal["keep", "insert", "remove", "change"]


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    REPLACE = "replace"
    BLOCKED = "blocked"
    """A deletion that delete protection forbids; nothing is sent."""

    @property
    def symbol(self) -> str:
        return _SYMBOLS[self]

    @property
    def json_actions(self) -> tuple[str, ...]:
        """Terraform's JSON vocabulary; a blocked delete is a `no-op` with a reason."""
        return _JSON_ACTIONS[self]


_SYMBOLS = {
    Action.CREATE: "+",
    Action.UPDATE: "~",
    Action.DELETE: "-",
    Action.REPLACE: "-/+",
    Action.BLOCKED: "!",
}
_JSON_ACTIONS = {
    Action.CREATE: ("create",),
    Action.UPDATE: ("update",),
    Action.DELETE: ("delete",),
    Action.REPLACE: ("delete", "create"),
    Action.BLOCKED: ("no-op",),
}


class _Absent(enum.Enum):
    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent.ABSENT
"""A field that does not exist on one side of a diff (not the same as null)."""
Absent = Literal[_Absent.ABSENT]
"""The type of `ABSENT`: a value read from live state that may not be there is
`JsonValue | Absent`."""

UNKNOWN = "(known after apply)"
"""What a plan shows for a value it cannot know yet (a secret whose source is missing)."""

SENSITIVE = "(sensitive value)"
"""What display forms hold instead of a write-only value."""

SentValue: TypeAlias = "JsonScalar | SecretRef | Sequence[SentValue] | Mapping[str, SentValue]"
"""What a call sends: JSON in which a `SecretRef` stands where a write-only value will be sent
(resolved only by apply, at the moment it sends the call)."""
SentObject: TypeAlias = Mapping[str, SentValue]
"""A call's body."""
PlanValue: TypeAlias = (
    "JsonScalar | SecretRef | _Absent | Sequence[PlanValue] | Mapping[str, PlanValue]"
)
"""What a plan shows of a value (a diff's sides, a display form): JSON, in which `ABSENT` marks
a member one side does not have (`{"runtime": {"port": ABSENT}}`) and a sensitive value may be
shown by its `SecretRef`; the plan's JSON keeps both (`reconciler/plan/json_form.py`)."""
PlanObject: TypeAlias = Mapping[str, PlanValue]
"""The display form of a resource (`Change.before`/`after`), or of one policy."""


@dataclass(frozen=True)
class SecretRef:
    """Stands in a call body where a write-only value will be sent.

    `source` is `fromEnv:NAME` or `fromFile:PATH`; `fingerprint` is the keyed
    fingerprint of the value seen at plan time (None when the secret was
    missing or no fingerprint key is set). Apply re-resolves the source and
    refuses when the fingerprint no longer matches.
    """

    source: str
    fingerprint: str | None = None

    def to_json(self) -> dict[str, JsonObject]:
        return {"$secret": {"source": self.source, "fingerprint": self.fingerprint}}


@dataclass(frozen=True)
class SecretSource:
    """Where the secret a change sends is read, as the manifest names it: `fromEnv` and the
    variable's name, or `fromFile` and the file's path in the repository. Shown in every plan
    format so a reviewer sees what a merge would read."""

    kind: SecretSourceKind
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Call:
    """One API call that apply will make.

    `body` is JSON-like and may hold `SecretRef`s; `permission` is the
    permission string the call needs, ID-specific when the ID is known.
    `creates` is true for calls that create an object (never retried blindly:
    apply re-reads first). A plan's JSON names `operation` by its name.
    """

    operation: Operation
    body: SentObject
    permission: str
    creates: bool = False


@dataclass(frozen=True)
class ItemEdit:
    """One item that differs in a list of plain values (strings, numbers): a `FieldDiff`'s `items`.

    The vocabulary of `PolicyEdit`: `insert`, `remove`, or `change` in place (ordered lists only:
    in a list the platform treats as a set an item is only ever inserted or removed). Indexes are
    0-based positions in the list on that side, None (and the value None) where the item is not.
    """

    op: ItemOp
    before_index: int | None
    after_index: int | None
    before: PlanValue = None
    after: PlanValue = None


@dataclass(frozen=True)
class FieldDiff:
    """One field that differs. `path` uses the manifest's names (`runtime.vCpus`).

    `items` is the item-level detail when both sides are lists of plain values (empty
    otherwise): a reviewer of a 60-entry IP list is shown the one entry that changed.
    """

    path: str
    before: PlanValue
    after: PlanValue
    sensitive: bool = False
    known_after_apply: bool = False
    items: tuple[ItemEdit, ...] = ()


@dataclass(frozen=True)
class PolicyEdit:
    """One step of the sequence alignment of an ordered policy list."""

    op: PolicyOp
    before_index: int | None
    after_index: int | None
    before: PlanObject | None
    after: PlanObject | None
    diffs: tuple[FieldDiff, ...] = ()


@dataclass(frozen=True)
class PolicyListDetail:
    """What only a policy list's change has: the sequence alignment of the two lists (`edits`)
    and the manifest's policy tests whose verdict the change turns (`test_outcomes`)."""

    kind: ClassVar[str] = "policies"
    edits: tuple[PolicyEdit, ...] = ()
    test_outcomes: tuple[OutcomeChange, ...] = ()


@dataclass(frozen=True)
class VariableDetail:
    """What only a variable's change has, when its value is a secret: where it is read."""

    kind: ClassVar[str] = "variable"
    secret_source: SecretSource


ChangeDetail: TypeAlias = PolicyListDetail | VariableDetail
"""What one kind's change has that the others do not (`Change.detail`): a renderer asks the
change's detail, by its type, rather than every change for every kind's fields."""


@dataclass(frozen=True)
class Change:
    """One resource instance that will change.

    `before`/`after` are the display form of the resource (secrets already
    redacted, None when it does not exist on that side). `depends_on` lists
    addresses whose calls must succeed first. `reason` is a short machine
    word (`delete_protected`, `source_type_changed`, `renamed`,
    `attached_elsewhere`, ...) and `notes` the sentences a reviewer reads.
    `detail` is what only its kind has (a `ChangeDetail`), None where there is none.
    `templates` names the shared blocks (templates, `appDefaults`) the values it sends come
    from, as manifest paths, when the plan was explained (`plan --explain`).
    `unknown_removed` names what live state holds that this reconciler does not know and that
    the change's calls would remove (a policy of a kind it does not know, a member a newer
    platform added): apply refuses such a change unless run with --allow-unknown-removal. It is
    not a detail: three kinds make it (settings, policy lists, variables), and apply asks it of
    every change.
    """

    address: str
    kind: ResourceKind
    action: Action
    before: PlanObject | None
    after: PlanObject | None
    diffs: tuple[FieldDiff, ...] = ()
    calls: tuple[Call, ...] = ()
    reason: str | None = None
    notes: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    position: Position | None = None
    detail: ChangeDetail | None = None
    templates: tuple[str, ...] = field(default=(), compare=False)
    unknown_removed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # a plan file holds a detail where its kind's reader looks for it: one of another
        # kind's would be written and never read back
        if self.detail is not None and self.detail.kind != self.kind:
            raise ValueError(
                f"a {self.kind} change cannot carry a {self.detail.kind} change's detail"
            )


def max_deletes_note(deletions: int, max_deletes: int) -> str:
    """The plan's note when it deletes more than --max-deletes; renderers that say so beside
    the summary leave the note out rather than say it twice."""
    return (
        f"this plan deletes {deletions} objects, more than --max-deletes {max_deletes}: apply "
        "will refuse it unless --max-deletes is raised"
    )


Note = Diagnostic
"""A plan-wide remark (unmanaged apps, how secrets were compared, conflicts): a `Diagnostic`
with a severity, a message and the `address` it concerns, if any, made as
`Note(severity, message, address)`.

`from_manifest` marks a warning about the manifest itself, which commands print on stderr
as soon as the manifest is read: the text form leaves it out rather than say it twice.
`subjects` and `group` let a rendering shorten notes alike but for their subject (one per
environment deploying on every push) into one sentence (reconciler/report/plan_lines.py);
neither changes what the note says."""


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    notes: tuple[Note, ...] = ()
    permissions: tuple[str, ...] = ()
    manifest_digest: str = ""
    live_digest: str = ""
    targets: tuple[str, ...] = ()
    max_deletes: int = 10
    metadata: JsonObject = field(default_factory=dict)
    # The reference (`SecretRef.source`) of the secret the manifest declares for each variable
    # the plan covers, by address. Not saved: apply checks a saved plan's references against
    # the plan it rebuilds from the manifest.
    declared_secrets: Mapping[str, str] = field(default_factory=dict)
    # The most each environment may run before and after (reconciler/checks/capacity.py), and
    # the findings of the plan-time checks; neither is saved nor compared by apply.
    capacity: CapacityReport | None = field(default=None, compare=False)
    findings: tuple[Finding, ...] = field(default=(), compare=False)
    # Every rule the manifest turns off or down, and every waiver (reconciler/checks/overrides.py):
    # shown with the plan, not compared by apply (the manifest digest covers them).
    overrides: tuple[Override, ...] = field(default=(), compare=False)
    # slug -> ID of every project the plan read: the workspace's identity, which a saved plan
    # records (reconciler/plan/planfile.py) so that apply refuses another platform.
    workspace: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def live_differs(self) -> bool:
        """Whether live state differs from the manifest (within the plan's targets): any
        change at all, including the ones apply will not make (a delete that delete protection
        blocks, a replace refused without --allow-replace). `plan --detailed-exitcode` exits 2
        on it, and only a plan where it is false says that live state matches."""
        return bool(self.changes)

    @property
    def failing_findings(self) -> tuple[Finding, ...]:
        """The findings that fail the plan (errors not waived): plan exits 1, saves no file, and
        apply refuses it before any write."""
        return tuple(finding for finding in self.findings if finding.fails)

    @property
    def checks_changed(self) -> bool:
        """Whether the overrides of the checks differ from the base the plan was compared with
        (`plan --base-ref`): a pull request that only silences a rule changes the plan."""
        return any(override.change is not None for override in self.overrides)

    @property
    def executable_changes(self) -> tuple[Change, ...]:
        """The changes apply sends calls for: every change but blocked deletions."""
        return tuple(c for c in self.changes if c.action is not Action.BLOCKED)

    @property
    def has_applicable_changes(self) -> bool:
        """Whether apply has anything to send: every change but blocked deletions."""
        return bool(self.executable_changes)

    def counts(self) -> tuple[int, int, int]:
        """(to add, to change, to destroy), counted as Terraform does: a replace is one of each."""
        add = sum(c.action in (Action.CREATE, Action.REPLACE) for c in self.changes)
        change = sum(c.action is Action.UPDATE for c in self.changes)
        destroy = sum(c.action in (Action.DELETE, Action.REPLACE) for c in self.changes)
        return add, change, destroy

    @property
    def unknown_removals(self) -> tuple[Change, ...]:
        """The executable changes that would remove what this reconciler does not know."""
        return tuple(c for c in self.executable_changes if c.unknown_removed)

    @property
    def deletions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.action in (Action.DELETE, Action.REPLACE))
