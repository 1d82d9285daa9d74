"""Environment variables: `variable.<project>/<app>/<env>/<KEY>`, one change per variable.

Read with `environments.listEnvironmentVariables` (paged) when the manifest
manages the environment's `variables`, each variable checked and parsed once into a
`LiveVariable` (export reads the same answer through `live_variables` too). Changes
are per variable; the calls are batched per environment: `setEnvironmentVariables`
with at most 50 variables a call for creates and updates (never `prune: true`:
removals are explicit), then `removeEnvironmentVariables` with at most 50 names a call
for deletions.

Each call appears once in the plan: the first change of a batch carries the
call (with a note naming how many others it also sends) and the batch's other
changes carry no call and depend on that first one, so apply reports them
done, failed or skipped together with the call that really does the work.

With `--target`, only the variables the targets cover are planned, and the
batches are formed from those alone: a call must never write or remove a
variable that the plan does not show as a change of its own (the summary and
`--max-deletes` count changes, not call bodies). A variable targeted alone is
sent alone; a targeted environment, app or project batches all its variables.

A live variable of a kind this reconciler does not know (a newer platform's) is never pruned:
it is reported with the plan's unmanaged fields. Listed in the manifest, it is set as the
manifest says, and that change names what it replaces (`unknown_removed`: the kind, and any
member of the variable this reconciler does not know), which apply refuses unless run with
--allow-unknown-removal.

Secrets: a value from `fromEnv`/`fromFile`, and any `writeonly` value, is
never shown (`(sensitive value)`) and travels in call bodies as a `SecretRef`.
Write-only values cannot be read back, so they are compared through the keyed
fingerprint in the description when a fingerprint key is set, and by presence
and kind otherwise; without the key no secret value is read at all (a value
read from a source is compared the same way, even when it is recoverable). A
secret whose source is missing is `(known after apply)`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from reconciler.address import Address, TreePath
from reconciler.errors import UnexpectedResponse
from reconciler.json_types import JsonObject
from reconciler.manifest.model import UNSET, Environment, FromEnv, FromFile, LiteralValue, Variable
from reconciler.manifest.secret_sources import SecretTooLong, SecretUnavailable
from reconciler.plan import secrets
from reconciler.plan.changes import (
    ABSENT,
    SENSITIVE,
    UNKNOWN,
    Absent,
    Action,
    Call,
    Change,
    FieldDiff,
    Note,
    SecretRef,
    SecretSource,
    SentObject,
    VariableDetail,
)
from reconciler.plan.kinds.base import (
    EnvironmentJob,
    EnvironmentKind,
    Location,
    Planning,
    batched,
    make_call,
    require_fields,
    text_member,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord, stable_listing
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import (
    VARIABLE,
    VARIABLE_KINDS,
    shape_problem,
    unknown_members,
    unknown_values,
)
from reconciler.sensitive import Secret

READ_OPERATION = "environments.listEnvironmentVariables"
BATCH_SIZE = 50
SET_OPERATION = "environments.setEnvironmentVariables"
REMOVE_OPERATION = "environments.removeEnvironmentVariables"
BATCH_OPERATIONS = (SET_OPERATION, REMOVE_OPERATION)


@dataclass(frozen=True)
class LiveVariable:
    """A variable as `listEnvironmentVariables` answers it, checked and parsed once (`read`).

    `kind` may be one the spec does not document (a newer platform's): such a variable is
    kept, reported and never pruned. `raw` is the whole answer: what it holds that this
    reconciler does not know (`unknown_of`) is reported, named by a set that replaces it, and
    part of the live-state record."""

    key: str
    kind: str
    value: str | None = field(repr=False)
    """None where the platform shows no value: a write-only variable's is never returned. Left
    out of the repr, as `raw` is: a traceback or a log line never shows a value."""
    description: str | None
    raw: JsonObject = field(repr=False)


LiveVariables: TypeAlias = tuple[LiveVariable, ...]
"""One environment's live variables, in the order the platform listed them."""

SetItem: TypeAlias = Mapping[str, str | SecretRef]
"""An item of a set call's `variables`: a write-only value travels as a `SecretRef`."""

ShownValue: TypeAlias = str | Absent
"""A value as a plan shows it: its text, `SENSITIVE`, `UNKNOWN`, or `ABSENT` (none)."""


def live_variables(operation: str, found: Sequence[JsonObject]) -> LiveVariables:
    """What `operation` answered, parsed: a variable without a `key` or `kind` string, or with
    a member the spec documents of another type, is an `UnexpectedResponse` naming it."""
    require_fields(operation, list(found), "key", "kind")
    return tuple(_live_variable(operation, f"data[{i}]", item) for i, item in enumerate(found))


def _live_variable(operation: str, where: str, item: JsonObject) -> LiveVariable:
    problem = shape_problem(item, VARIABLE, where)
    if problem is not None:
        raise UnexpectedResponse(
            f"{operation}: the platform returned a variable the spec does not allow: {problem}",
            operation=operation,
        )
    key, kind = item["key"], item["kind"]
    assert isinstance(key, str) and isinstance(kind, str)  # require_fields checked them
    return LiveVariable(
        key=key,
        kind=kind,
        value=text_member(item, "value"),
        description=text_member(item, "description"),
        raw=item,
    )


@dataclass
class VariablesPlan:
    """The changes of one environment's variables, and what the plan must say about them."""

    changes: list[Change] = field(default_factory=list)
    missing_sources: list[str] = field(default_factory=list)
    compared_by_presence: list[str] = field(default_factory=list)
    declared_secrets: dict[str, str] = field(default_factory=dict)
    """The reference of each planned variable's secret (`fromEnv:NAME`...), by address."""
    unmanaged: list[tuple[str, str]] = field(default_factory=list)
    """(address, what): what live variables hold that this reconciler does not know."""


@dataclass
class _Secrets:
    """What the variables kind keeps of every environment's secrets while one plan is built,
    for the plan's notes and its declared secrets."""

    missing_sources: set[str] = field(default_factory=set)
    """Secrets not available to this plan, `fromEnv NAME (address)`."""
    compared_by_presence: list[str] = field(default_factory=list)
    """Write-only variables compared by presence and kind only (no fingerprint key)."""
    declared_secrets: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Desired:
    """A manifest variable with its value resolved and how to send it."""

    variable: Variable
    available: bool
    """False when the secret's source is missing (its value is known after apply)."""
    value: str | Secret | None
    """The value: a literal's text, a secret read to fingerprint it, None when not read."""
    sensitive: bool
    sent: str | SecretRef
    fingerprint: str | None
    source: SecretSource | None = None
    """Where a `fromEnv`/`fromFile` value is read (None for a literal)."""

    @property
    def detail(self) -> VariableDetail | None:
        """The detail of the variable's change: where its value is read, if from a source."""
        return None if self.source is None else VariableDetail(self.source)


def _every_variable(_address: str) -> bool:
    return True


def plan_variables(
    project_slug: str,
    app_slug: str,
    environment: Environment,
    live: Sequence[LiveVariable] | None,
    ref: Location,
    *,
    prune: bool,
    fingerprint_key: bytes | None,
    selected: Callable[[str], bool] = _every_variable,
    unavailable: Collection[str] = (),
) -> VariablesPlan:
    """Changes for the environment's variables; `live` is None when the app is being created.

    Only variables whose address `selected` accepts (the `--target`s cover) are planned and
    batched, so every call carries exactly the variables of its changes. Secrets whose
    reference is in `unavailable` are planned as missing, without being read.
    """
    assert environment.variables is not UNSET
    result = VariablesPlan()
    live_by_key = {v.key: v for v in (live or ())}
    sets: list[tuple[Change, SetItem]] = []
    for variable in environment.variables:
        where = str(Address.of("variable", project_slug, app_slug, environment.name, variable.key))
        if not selected(where):
            continue  # not planned, so neither sent nor reported (missing secret, presence)
        desired = _resolve(where, variable, fingerprint_key, unavailable)
        if isinstance(desired.sent, SecretRef):
            result.declared_secrets[where] = desired.sent.source
        if not desired.available and desired.source is not None:
            result.missing_sources.append(f"{desired.source} ({where})")
        current = live_by_key.get(variable.key)
        if (
            current is not None
            and desired.sensitive
            and current.kind == variable.kind
            and fingerprint_key is None
        ):
            result.compared_by_presence.append(where)
        planned = _plan_one(where, desired, current, fingerprint_key)
        if current is not None and unknown_of(current):
            if planned is None:  # nothing is sent: what it does not know stays as it is
                result.unmanaged.extend((where, what) for what in unknown_of(current))
            else:
                planned = (replace(planned[0], unknown_removed=unknown_of(current)), planned[1])
        if planned is not None:
            sets.append(planned)
    deletes = []
    wanted = {v.key for v in environment.variables}
    for key, current in live_by_key.items():
        where = str(Address.of("variable", project_slug, app_slug, environment.name, key))
        if key not in wanted and selected(where):
            result.unmanaged.extend((where, what) for what in unknown_of(current))
            if prune and current.kind in VARIABLE_KINDS:
                deletes.append(_delete(where, current))
    result.changes.extend(_attach_set_calls(sets, ref))
    result.changes.extend(_attach_remove_calls(deletes, ref))
    return result


def unknown_of(current: LiveVariable) -> tuple[str, ...]:
    """What a live variable holds that this reconciler does not know: a kind, members."""
    found = [f"kind {current.kind!r}" for _ in unknown_values(current.raw, VARIABLE)]
    return (*found, *unknown_members(current.raw, VARIABLE))


def _resolve(
    where: str, variable: Variable, key: bytes | None, unavailable: Collection[str]
) -> _Desired:
    """The variable's value as far as the plan needs it: a secret is read only to fingerprint it
    (with `key`); without a key only whether its source is there is asked."""
    source = variable.source
    sensitive = variable.kind == "writeonly" or variable.is_secret_reference
    if isinstance(source, LiteralValue):
        if not sensitive:
            return _Desired(variable, True, source.value, False, source.value, None)
        literal = Secret(source.value)
        reference = secrets.register_manifest_value(where, literal)
        value: Secret | None = literal
        available, shown = True, None
    else:
        reference = secrets.reference_for(source)
        shown = secrets.describe_source(source)
        value = None
        if reference in unavailable:
            available = False
        elif key is None:
            available = _secret_there(where, variable, source)
        else:
            value = _read_secret(where, variable, source)
            available = value is not None
    fp = None
    if key is not None and value is not None:
        fp = secrets.fingerprint(key, where, value)
    return _Desired(
        variable,
        available,
        value,
        True,
        SecretRef(source=reference, fingerprint=fp),
        fp,
        source=shown,
    )


def _read_secret(where: str, variable: Variable, source: FromEnv | FromFile) -> Secret | None:
    try:
        return secrets.resolve_secret(source)
    except SecretTooLong:
        # Read only to be fingerprinted: whether it is too long is apply's to say (it refuses
        # it before any write), so that nothing the plan prints depends on the value.
        return _read_whole(source)
    except SecretUnavailable as error:
        raise _at_variable(where, variable, error) from None


def _read_whole(source: FromEnv | FromFile) -> Secret | None:
    try:
        return secrets.read_unchecked(source)
    except SecretUnavailable:
        return None


def _secret_there(where: str, variable: Variable, source: FromEnv | FromFile) -> bool:
    try:
        return secrets.secret_available(source)
    except SecretUnavailable as error:
        raise _at_variable(where, variable, error) from None


def _at_variable(where: str, variable: Variable, error: SecretUnavailable) -> SecretUnavailable:
    """The error with the variable's place: the source alone ("fromEnv:NAME") may be shared."""
    place = f"{variable.pos}: " if variable.pos else ""
    return type(error)(f"{place}{where}: {error.message}", hint=error.hint)


def _shown_value(desired: _Desired) -> str:
    if not desired.available:
        return UNKNOWN
    if desired.sensitive or not isinstance(desired.value, str):
        return SENSITIVE
    return desired.value


def _live_shown_value(current: LiveVariable, sensitive: bool) -> ShownValue:
    if current.kind != "recoverable" or sensitive:
        return SENSITIVE
    return ABSENT if current.value is None else current.value


def _display(kind: str, value: ShownValue, description: str | None) -> dict[str, ShownValue]:
    shown: dict[str, ShownValue] = {"kind": kind, "value": value}
    if description is not None:
        shown["description"] = description
    return shown


def _plan_one(
    where: str,
    desired: _Desired,
    current: LiveVariable | None,
    key: bytes | None,
) -> tuple[Change, SetItem] | None:
    """The change for one listed variable with the item its set call sends, or None."""
    variable = desired.variable
    live_description, live_fp = secrets.split_fingerprint(current.description if current else None)
    # an empty description is no description (the platform shows none either way)
    managed_description = variable.description is not UNSET
    if variable.description is UNSET:
        description = live_description
    else:
        description = variable.description or None
    item: dict[str, str | SecretRef] = {
        "key": variable.key,
        "value": desired.sent,
        "kind": variable.kind,
    }
    sent_description = description
    if variable.kind == "writeonly" and desired.fingerprint is not None:
        sent_description = secrets.with_fingerprint(description, desired.fingerprint)
    if sent_description is not None:
        # set replaces the whole variable: an unmanaged description is sent back unchanged
        item["description"] = sent_description
    after = _display(variable.kind, _shown_value(desired), description)
    value_diff = FieldDiff(
        "value",
        ABSENT if current is None else _live_shown_value(current, desired.sensitive),
        after["value"],
        sensitive=desired.sensitive,
        known_after_apply=not desired.available,
    )
    if current is None:
        diffs = [value_diff, FieldDiff("kind", ABSENT, variable.kind)]
        if description is not None:
            diffs.append(FieldDiff("description", ABSENT, description))
        change = Change(
            address=where,
            kind="variable",
            action=Action.CREATE,
            before=None,
            after=after,
            diffs=tuple(diffs),
            position=variable.pos,
            detail=desired.detail,
        )
        return change, item
    diffs = []
    value_changed, reason = _value_changed(desired, current, live_fp, key)
    if value_changed:
        diffs.append(value_diff)
    if current.kind != variable.kind:
        diffs.append(FieldDiff("kind", current.kind, variable.kind))
    if managed_description and description != live_description:
        diffs.append(FieldDiff("description", live_description, description))
    if not diffs:
        return None
    before = _display(current.kind, _live_shown_value(current, desired.sensitive), live_description)
    change = Change(
        address=where,
        kind="variable",
        action=Action.UPDATE,
        before=before,
        after=after,
        diffs=tuple(diffs),
        reason=reason,
        notes=(_REASON_NOTES[reason],) if reason in _REASON_NOTES else (),
        position=variable.pos,
        detail=desired.detail,
    )
    return change, item


_REASON_NOTES = {
    "fingerprint_missing": "no fingerprint is recorded for this write-only value, so it cannot be "
    "compared: it is sent again, with a fingerprint, so that later plans can compare it",
    "fingerprint_first_form": "the fingerprint recorded for this write-only value is of the "
    "first form (bound to the variable's name only), which is not compared: it is sent again, "
    "once, with a fingerprint bound to its address",
    "secret_unavailable": "the secret's source is not available to this plan, so it cannot be "
    "compared; apply needs it",
}


def _value_changed(
    desired: _Desired, current: LiveVariable, live_fp: str | None, key: bytes | None
) -> tuple[bool, str | None]:
    """Whether the value differs, and a reason word when that is a guess rather than a fact."""
    live_kind = current.kind
    if live_kind != desired.variable.kind:
        return True, None  # the call re-sends it anyway; the kind diff says why
    if live_kind == "recoverable" and not desired.sensitive:
        return current.value != desired.value, None
    if key is None:
        return False, None  # a secret is compared by presence and kind only
    if not desired.available or desired.value is None:
        return True, "secret_unavailable"
    if live_kind == "recoverable":
        value = desired.value.reveal() if isinstance(desired.value, Secret) else desired.value
        return current.value != value, None
    if secrets.first_form_fingerprint(current.description):
        return True, "fingerprint_first_form"
    if live_fp is None:
        return True, "fingerprint_missing"
    return live_fp != desired.fingerprint, None


def _delete(where: str, current: LiveVariable) -> Change:
    description, _ = secrets.split_fingerprint(current.description)
    return Change(
        address=where,
        kind="variable",
        action=Action.DELETE,
        before=_display(current.kind, _live_shown_value(current, False), description),
        after=None,
        reason="pruned",
    )


def _attach_set_calls(sets: Sequence[tuple[Change, SetItem]], ref: Location) -> list[Change]:
    changes: list[Change] = []
    for batch in batched(list(sets), BATCH_SIZE):
        body = ref.body(variables=[item for _, item in batch])
        call = make_call(SET_OPERATION, body, object_id=ref.object_id)
        changes.extend(_carry(call, [change for change, _ in batch]))
    return changes


def _attach_remove_calls(deletes: Sequence[Change], ref: Location) -> list[Change]:
    changes: list[Change] = []
    for batch in batched(list(deletes), BATCH_SIZE):
        names = [Address.parse(change.address).leaf for change in batch]
        call = make_call(
            REMOVE_OPERATION,
            ref.body(variables=names),
            object_id=ref.object_id,
        )
        changes.extend(_carry(call, batch))
    return changes


def _carry(call: Call, batch: Sequence[Change]) -> list[Change]:
    """The first change of a batch carries its call; the others depend on it."""
    first, rest = batch[0], batch[1:]
    notes = first.notes
    if rest:
        notes = (*notes, f"its {call.operation.name} call also sends {len(rest)} other variable(s) "
                 "of this environment")  # fmt: skip
    carried = [replace(first, calls=(call,), notes=notes)]
    carried.extend(replace(change, depends_on=(first.address,)) for change in rest)
    return carried


def variable_keys(call: Call) -> set[str]:
    """Variable names a set/remove call carries (a batch call stands for many changes)."""
    items = call.body.get("variables")
    if not isinstance(items, (list, tuple)):
        return set()
    return {key for key in map(_item_key, items) if isinstance(key, str)}


def _item_key(item: object) -> object:
    """The variable a batch's item is about: a set's item names it, a removal's item is it."""
    return item.get("key") if isinstance(item, Mapping) else item


class VariablesKind(EnvironmentKind[LiveVariables, LiveVariables]):
    """`variable.<project>/<app>/<env>/<KEY>`: one change per variable, sent in batches."""

    name = "variable"
    depth = 4
    container = False
    read_at = ReadAt.ENVIRONMENT
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> LiveVariables:
        found = await platform.list_all(READ_OPERATION, at.body(), object_id=at.object_id)
        return live_variables(READ_OPERATION, found)

    def record(
        self, record: LiveRecord, at: Location, label: TreePath, found: LiveVariables
    ) -> None:
        record.read(READ_OPERATION, at.object_id)
        record.state[f"variables {label}"] = stable_listing((v.raw for v in found), "key")

    def pick(self, found: LiveVariables, at: Location) -> LiveVariables:
        return found

    def environment_id(self, live: LiveVariables) -> str | None:
        return None

    def manages(self, environment: Environment) -> bool:
        return environment.variables is not UNSET

    def plan(self, job: EnvironmentJob, live: LiveVariables | None) -> None:
        planning = job.planning
        planned = plan_variables(
            job.project,
            job.app,
            job.environment,
            live,
            job.at,
            prune=planning.prune.variables,
            fingerprint_key=planning.options.fingerprint_key,
            selected=planning.selected,
            unavailable=planning.options.unavailable_secrets,
        )
        secrets = planning.state(_Secrets)
        secrets.missing_sources.update(planned.missing_sources)
        secrets.declared_secrets.update(planned.declared_secrets)
        secrets.compared_by_presence.extend(planned.compared_by_presence)
        planning.unmanaged_fields.extend(planned.unmanaged)
        for change in planned.changes:
            planning.add(change, job.depends_on)
            if change.unknown_removed:
                planning.note(
                    Note(
                        "warning",
                        f"{change.address}: setting it replaces what this reconciler does "
                        f"not know ({', '.join(change.unknown_removed)}); apply refuses it "
                        "unless run with --allow-unknown-removal",
                        change.address,
                    )
                )

    def plan_notes(self, planning: Planning) -> Sequence[Note]:
        secrets = planning.state(_Secrets)
        notes = []
        if secrets.missing_sources:
            missing = tuple(sorted(secrets.missing_sources))
            notes.append(
                Note(
                    "warning",
                    "secret(s) not available to this plan: "
                    + ", ".join(missing)
                    + "; their values show as (known after apply), and apply refuses a plan "
                    "that must send them until they are available",
                    subjects=missing,
                )
            )
        if secrets.compared_by_presence:
            notes.append(
                Note(
                    "info",
                    f"{len(secrets.compared_by_presence)} write-only variable(s) compared by "
                    "presence and kind only, because RECONCILER_FINGERPRINT_KEY is not set: a "
                    "changed secret value does not show as a change. Set the key so apply "
                    "records a fingerprint of each value and plans can compare them.",
                )
            )
        return notes

    def declared_secrets(self, planning: Planning) -> Mapping[str, str]:
        return planning.state(_Secrets).declared_secrets

    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        if call.operation.name == REMOVE_OPERATION:
            return ApplyPhase.VARIABLE_REMOVALS
        return ApplyPhase.VARIABLE_SETS

    def batch_key(self, change: Change) -> str | None:
        return Address.parse(change.address).leaf

    def batch_keys(self, call: Call) -> Collection[str]:
        return variable_keys(call)

    def call_parts(self, change: Change, call: Call) -> Iterable[tuple[str, SentObject]]:
        """A batch's part for each variable: the call's other fields with that variable alone
        (`variables`: that item alone, set or removed), under the variable's address. A part
        keeps every other field of the call, and every item gets one, even an item without a
        string key, which `batch_keys` leaves out (under `.../None` then): a saved plan is
        untrusted, and nothing a call sends may be left out of the comparison."""
        items = call.body.get("variables")
        if (
            call.operation.name not in BATCH_OPERATIONS
            or not isinstance(items, (list, tuple))
            or not items
        ):
            yield from super().call_parts(change, call)
            return
        rest = {key: value for key, value in call.body.items() if key != "variables"}
        owner = Address.parse(change.address)
        for item in items:
            yield str(owner.sibling(str(_item_key(item)))), {**rest, "variables": [item]}

    def rollout_reason(self, change: Change) -> str | None:
        return "variables"

    def configures_deployment(self) -> bool:
        return True


KIND = register(VariablesKind())
