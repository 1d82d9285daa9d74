"""The plan's JSON form: `plan_to_dict` and its exact inverse `plan_from_dict`.

One module owns both directions so the documented machine format
(`--format json`) and the saved plan file (`--out`) can never drift apart.

Values inside `before`/`after`/`diffs`/call bodies are JSON-like; three
markers keep what plain JSON cannot say:

- a `SecretRef` is `{"$secret": {"source": ..., "fingerprint": ...}}`;
- `ABSENT` (a field that does not exist on one side) is the omitted key at the
  top of a diff (`before`/`after` left out) and `{"$absent": true}` anywhere
  deeper;
- `UNKNOWN` is its own string, `"(known after apply)"`.

A sensitive diff's `before`/`after` is written as `"(sensitive value)"` unless
it is null, a secret reference or unknown, whatever the plan holds: the JSON
goes to CI logs and plan files, so it never carries a value marked sensitive
(nor its `items`, which are left out).

A diff of two lists of plain values also has `items`, the list edits (`op`
`insert`, `remove` or `change`, `before_index`, `after_index`, `before`,
`after`); the member is left out when there are none, so plans written before
it existed read the same.

Decoding validates every shape and raises `PlanShapeError` naming the JSON
path of the first problem (never the offending value: it could be a secret
someone pasted in).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeGuard, TypeVar, get_args

from reconciler import __version__
from reconciler.address import Address
from reconciler.checks.capacity import CapacityReport
from reconciler.checks.overrides import Override
from reconciler.diagnostics import Diagnostic, Severity
from reconciler.errors import PlanShapeError
from reconciler.json_types import JsonObject, JsonValue
from reconciler.manifest.model import Position
from reconciler.plan import kinds
from reconciler.plan.changes import (
    ABSENT,
    FORMAT_VERSION,
    SENSITIVE,
    UNKNOWN,
    Action,
    Call,
    Change,
    ChangeDetail,
    FieldDiff,
    ItemEdit,
    ItemOp,
    Note,
    Plan,
    PlanObject,
    PlanValue,
    PolicyEdit,
    PolicyListDetail,
    PolicyOp,
    SecretRef,
    SecretSource,
    SecretSourceKind,
    SentObject,
    VariableDetail,
)
from reconciler.plan.golive import goes_live
from reconciler.plan.provenance import template_reach
from reconciler.plan.review import calls_digest
from reconciler.platform.operations import Operation, get_operation

if TYPE_CHECKING:
    from reconciler.policy_tests.effect import OutcomeChange

SECRET_MARKER = "$secret"
ABSENT_MARKER = "$absent"
SECRET_SOURCE_KINDS: tuple[SecretSourceKind, ...] = get_args(SecretSourceKind)
NOTE_SEVERITIES: tuple[Severity, ...] = get_args(Severity)
POLICY_OPS: tuple[PolicyOp, ...] = get_args(PolicyOp)
ITEM_OPS: tuple[ItemOp, ...] = get_args(ItemOp)

T = TypeVar("T")
Choice = TypeVar("Choice", bound=str)


class JsonArray(tuple[PlanValue, ...]):
    """A decoded JSON array: immutable like the value classes, equal to a list or tuple.

    The plan engine may build call bodies with lists or tuples; JSON keeps no
    such distinction, so a loaded plan compares equal to the one saved either way.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            other = tuple(other)
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


# --------------------------------------------------------------------------- encode


def plan_to_dict(plan: Plan) -> dict[str, JsonValue]:
    """The documented machine form of a plan (`--format json`; docs/reference/plan-json.md documents it)."""
    add, change, destroy = plan.counts()
    return {
        "format_version": FORMAT_VERSION,
        "reconciler_version": __version__,
        "changes": [_change_to_dict(c) for c in plan.changes],
        "notes": [_note_to_dict(n) for n in plan.notes],
        "permissions": list(plan.permissions),
        "summary": {
            "add": add,
            "change": change,
            "destroy": destroy,
            "blocked": sum(c.action is Action.BLOCKED for c in plan.changes),
        },
        "manifest_digest": plan.manifest_digest,
        "live_digest": plan.live_digest,
        "targets": list(plan.targets),
        "max_deletes": plan.max_deletes,
        "metadata": encode_value(plan.metadata, "metadata"),
        "capacity": None if plan.capacity is None else plan.capacity.to_json(),
        "findings": [finding.to_json() for finding in plan.findings],
        "overrides": [override.to_json() for override in plan.overrides],
        "calls_digest": calls_digest(plan),
        **_template_reach(plan),
    }


def _template_reach(plan: Plan) -> dict[str, JsonValue]:
    """`template_reach`, only in an explained plan that has changes from shared blocks (so
    the plans of manifests without them read exactly as before)."""
    reach = template_reach(plan.changes)
    return {"template_reach": [r.to_json() for r in reach]} if reach else {}


def _change_to_dict(change: Change) -> dict[str, JsonValue]:
    where = f"change {change.address}"
    out: dict[str, JsonValue] = {
        "address": change.address,
        "kind": change.kind,
        "action": change.action.value,
        "actions": list(change.action.json_actions),
        "before": encode_value(change.before, f"{where} before"),
        "after": encode_value(change.after, f"{where} after"),
        "diffs": [_diff_to_dict(d, where) for d in change.diffs],
        "policy_edits": [_edit_to_dict(e, where) for e in _policy_edits(change.detail)],
        "calls": [_call_to_dict(c, where) for c in change.calls],
        "depends_on": list(change.depends_on),
        "notes": list(change.notes),
        "position": None if change.position is None else _position_text(change.position),
        "goes_live": goes_live(change),
    }
    if change.reason is not None:
        out["action_reason"] = change.reason
    match change.detail:
        case VariableDetail(secret_source=source):
            out["secret_source"] = {source.kind: source.name}
        case PolicyListDetail(test_outcomes=outcomes):
            out["policy_test_changes"] = [o.to_json() for o in outcomes]
    if change.templates:
        out["templates"] = list(change.templates)
    if change.unknown_removed:
        out["unknown_removed"] = list(change.unknown_removed)
    return out


def _policy_edits(detail: ChangeDetail | None) -> tuple[PolicyEdit, ...]:
    """A policy list's edits: `policy_edits` is in every change, empty but for policy lists."""
    return detail.edits if isinstance(detail, PolicyListDetail) else ()


def _diff_to_dict(diff: FieldDiff, where: str) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "path": diff.path,
        "sensitive": diff.sensitive,
        "known_after_apply": diff.known_after_apply,
    }
    if diff.before is not ABSENT:
        out["before"] = encode_value(_shown(diff, diff.before), f"{where} {diff.path}")
    if diff.after is not ABSENT:
        out["after"] = encode_value(_shown(diff, diff.after), f"{where} {diff.path}")
    if diff.items and not diff.sensitive:
        out["items"] = [_item_to_dict(item, f"{where} {diff.path}") for item in diff.items]
    return out


def _item_to_dict(item: ItemEdit | PolicyEdit, where: str) -> dict[str, JsonValue]:
    return {
        "op": item.op,
        "before_index": item.before_index,
        "after_index": item.after_index,
        "before": encode_value(item.before, where),
        "after": encode_value(item.after, where),
    }


def _shown(diff: FieldDiff, value: PlanValue) -> PlanValue:
    """A sensitive diff keeps only what is safe to print: references and markers, never a value."""
    if not diff.sensitive or value is None or isinstance(value, SecretRef) or value == UNKNOWN:
        return value
    return SENSITIVE


def _edit_to_dict(edit: PolicyEdit, where: str) -> dict[str, JsonValue]:
    return {
        **_item_to_dict(edit, f"{where} policy"),
        "diffs": [_diff_to_dict(d, where) for d in edit.diffs],
    }


def _call_to_dict(call: Call, where: str) -> dict[str, JsonValue]:
    return {
        "operation": call.operation.name,
        "body": encode_value(call.body, f"{where} call {call.operation.name}"),
        "permission": call.permission,
        "creates": call.creates,
    }


def _note_to_dict(note: Note) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {
        "severity": note.severity,
        "message": note.message,
        "address": note.address,
    }
    if note.subjects:
        out["subjects"] = list(note.subjects)
    if note.group is not None:
        out["group"] = note.group
    return out


def encode_value(value: PlanValue, where: str) -> JsonValue:
    """A JSON-like value with SecretRef and ABSENT turned into their markers."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{where}: {value!r} cannot be written as JSON")
        return value
    if isinstance(value, SecretRef):
        return value.to_json()
    if value is ABSENT:
        return {ABSENT_MARKER: True}
    if isinstance(value, Mapping):
        out: dict[str, JsonValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: mapping key {type(key).__name__} is not a string")
            out[key] = encode_value(item, where)
        return out
    if isinstance(value, list | tuple):
        return [encode_value(item, where) for item in value]
    raise ValueError(f"{where}: a {type(value).__name__} cannot be written as JSON")


# --------------------------------------------------------------------------- decode


def plan_from_dict(data: object) -> Plan:
    """Rebuild the exact `Plan` that `plan_to_dict` described; raise `PlanShapeError` if broken."""
    root = _object(data, "$")
    changes = tuple(
        _change_from_dict(item, f"changes[{i}]")
        for i, item in enumerate(_array(_get(root, "changes", "$"), "changes"))
    )
    plan = Plan(
        changes=changes,
        notes=_items(root, "notes", "$", _note_from_dict),
        permissions=_strings(root, "permissions", "$"),
        manifest_digest=_typed(root, "manifest_digest", "$", str),
        live_digest=_typed(root, "live_digest", "$", str),
        targets=_strings(root, "targets", "$"),
        max_deletes=_integer(root, "max_deletes", "$"),
        metadata=_metadata(root),
        capacity=_capacity(root),
        findings=_checked(root, "findings", Diagnostic.finding_from_json),
        overrides=_checked(root, "overrides", Override.from_json),
    )
    _check_summary(root, plan)
    return plan


def _metadata(root: Mapping[str, object]) -> JsonObject:
    """`metadata`: plain JSON, which no marker stands in (the planner writes strings there)."""
    metadata = _decoded_object(_get(root, "metadata", "$"), "metadata")
    if not _is_json(metadata):
        raise PlanShapeError("metadata", "expected plain JSON, without secret or absent markers")
    return metadata


def _capacity(root: Mapping[str, object]) -> CapacityReport | None:
    """`capacity`, null or absent in plans written before it existed."""
    found = root.get("capacity")
    if found is None:
        return None
    try:
        return CapacityReport.from_json(_object(found, "capacity"))
    except (KeyError, TypeError, ValueError, AttributeError):
        raise PlanShapeError(
            "capacity", "expected {environments, projects, workspace} of ceilings"
        ) from None


def _checked(
    root: Mapping[str, object], key: str, build: Callable[[Mapping[str, object]], T]
) -> tuple[T, ...]:
    """`findings` or `overrides`, what the checks said of the plan; absent in plans written
    before they existed."""
    if key not in root:
        return ()

    def one(data: object, path: str) -> T:
        try:
            return build(_object(data, path))
        except (KeyError, TypeError, ValueError):
            raise PlanShapeError(path, f"not one of the plan's {key}") from None

    return _items(root, key, "$", one)


def _change_from_dict(data: object, path: str) -> Change:
    obj = _object(data, path)
    action = _action(obj, path)
    kind = _typed(obj, "kind", path, str)
    if kind not in kinds.names():
        raise PlanShapeError(f"{path}.kind", f"must be one of {', '.join(kinds.names())}")
    reason = obj.get("action_reason")
    if reason is not None and not isinstance(reason, str):
        raise PlanShapeError(f"{path}.action_reason", f"expected a string, got {_kind(reason)}")
    return Change(
        address=_address(obj, kind, path),
        kind=kind,
        action=action,
        before=_optional_mapping(obj, "before", path),
        after=_optional_mapping(obj, "after", path),
        diffs=_items(obj, "diffs", path, _diff_from_dict),
        calls=_items(obj, "calls", path, _call_from_dict),
        reason=reason,
        notes=_strings(obj, "notes", path),
        depends_on=_strings(obj, "depends_on", path),
        position=_position(obj, path),
        detail=_detail(obj, kind, path),
        templates=_strings(obj, "templates", path) if "templates" in obj else (),
        unknown_removed=(
            _strings(obj, "unknown_removed", path) if "unknown_removed" in obj else ()
        ),
    )


def _address(obj: Mapping[str, object], kind: str, path: str) -> str:
    """The change's address: one of its own kind, as deep as the kind's (an edited file could
    hold any text there, which every reader of addresses would misread)."""
    text = _typed(obj, "address", path, str)
    try:
        address = Address.parse(text)
    except ValueError:
        address = None
    depth = kinds.get(kind).depth
    if (
        address is None
        or address.kind != kind
        or len(address.parts) != depth
        or "" in address.parts
    ):
        raise PlanShapeError(
            f"{path}.address", f"expected a {kind} address of {depth} part(s) (KIND.A/B...)"
        )
    return text


def _detail(obj: Mapping[str, object], kind: str, path: str) -> ChangeDetail | None:
    """The detail of the change's kind. Every change has `policy_edits` (empty but for policy
    lists); a member of another kind's detail is refused rather than dropped."""
    edits = _items(obj, "policy_edits", path, _edit_from_dict)
    if kind == "policies":
        _refuse_member(obj, "secret_source", "variable", path)
        return PolicyListDetail(edits, _test_outcomes(obj, path))
    _refuse_member(obj, "policy_test_changes", "policies", path)
    if edits:
        raise PlanShapeError(f"{path}.policy_edits", "must be empty but for a policies change")
    if kind != "variable":
        _refuse_member(obj, "secret_source", "variable", path)
        return None
    source = _secret_source(obj, path)
    return None if source is None else VariableDetail(source)


def _refuse_member(obj: Mapping[str, object], key: str, kind: str, path: str) -> None:
    if key in obj:
        raise PlanShapeError(_join(path, key), f"is only in a {kind} change")


def _test_outcomes(obj: Mapping[str, object], path: str) -> tuple[OutcomeChange, ...]:
    """`policy_test_changes`; absent in plans written before it existed."""
    if "policy_test_changes" not in obj:
        return ()
    return _items(obj, "policy_test_changes", path, _test_outcome)


def _test_outcome(data: object, path: str) -> OutcomeChange:
    from reconciler.policy_tests.effect import outcome_change_from_json  # see changes.py

    try:
        return outcome_change_from_json(_object(data, path))
    except (KeyError, TypeError):
        raise PlanShapeError(
            path, "expected {name, request, before, after: string, policy: string or null}"
        ) from None


def _secret_source(obj: Mapping[str, object], path: str) -> SecretSource | None:
    """`{"fromEnv": NAME}` or `{"fromFile": PATH}`; absent in plans written before it existed."""
    if "secret_source" not in obj:
        return None
    found = obj["secret_source"]
    entries: list[tuple[object, object]] = list(found.items()) if isinstance(found, dict) else []
    kind = next((k for k in SECRET_SOURCE_KINDS if len(entries) == 1 and entries[0][0] == k), None)
    if kind is None:
        raise PlanShapeError(
            f"{path}.secret_source", 'expected {"fromEnv": str} or {"fromFile": str}'
        )
    name = entries[0][1]
    if not isinstance(name, str):
        raise PlanShapeError(
            f"{path}.secret_source.{kind}", f"expected a string, got {_kind(name)}"
        )
    return SecretSource(kind, name)


def _action(obj: Mapping[str, object], path: str) -> Action:
    name = _typed(obj, "action", path, str)
    try:
        action = Action(name)
    except ValueError:
        choices = ", ".join(a.value for a in Action)
        raise PlanShapeError(f"{path}.action", f"must be one of {choices}") from None
    actions = tuple(_array(_get(obj, "actions", path), f"{path}.actions"))
    if actions != action.json_actions:
        raise PlanShapeError(f"{path}.actions", f"does not match action {action.value!r}")
    return action


def _diff_from_dict(data: object, path: str) -> FieldDiff:
    obj = _object(data, path)
    return FieldDiff(
        path=_typed(obj, "path", path, str),
        before=decode_value(obj["before"], f"{path}.before") if "before" in obj else ABSENT,
        after=decode_value(obj["after"], f"{path}.after") if "after" in obj else ABSENT,
        sensitive=_typed(obj, "sensitive", path, bool),
        known_after_apply=_typed(obj, "known_after_apply", path, bool),
        # optional: absent when the diff has none, and in plans written before it existed
        items=_items(obj, "items", path, _item_from_dict) if "items" in obj else (),
    )


def _one_of(obj: Mapping[str, object], key: str, path: str, allowed: tuple[Choice, ...]) -> Choice:
    """`obj[key]`, which must be one of the `allowed` strings."""
    value = _typed(obj, key, path, str)
    for choice in allowed:
        if value == choice:
            return choice
    raise PlanShapeError(f"{path}.{key}", f"must be one of {', '.join(allowed)}")


def _item_from_dict(data: object, path: str) -> ItemEdit:
    obj = _object(data, path)
    return ItemEdit(
        op=_one_of(obj, "op", path, ITEM_OPS),
        before_index=_optional_index(obj, "before_index", path),
        after_index=_optional_index(obj, "after_index", path),
        before=decode_value(_get(obj, "before", path), f"{path}.before"),
        after=decode_value(_get(obj, "after", path), f"{path}.after"),
    )


def _edit_from_dict(data: object, path: str) -> PolicyEdit:
    obj = _object(data, path)
    return PolicyEdit(
        op=_one_of(obj, "op", path, POLICY_OPS),
        before_index=_optional_index(obj, "before_index", path),
        after_index=_optional_index(obj, "after_index", path),
        before=_optional_mapping(obj, "before", path),
        after=_optional_mapping(obj, "after", path),
        diffs=_items(obj, "diffs", path, _diff_from_dict),
    )


def _call_from_dict(data: object, path: str) -> Call:
    obj = _object(data, path)
    return Call(
        operation=_operation(obj, path),
        body=_body(obj, path),
        permission=_typed(obj, "permission", path, str),
        creates=_typed(obj, "creates", path, bool),
    )


def _body(obj: Mapping[str, object], path: str) -> SentObject:
    """What the call sends: a value left out is left out of the body, never marked absent."""
    body = _decoded_object(_get(obj, "body", path), f"{path}.body")
    if not _is_sent(body):
        raise PlanShapeError(f"{path}.body", 'a call sends no "$absent" marker')
    return body


def _operation(obj: Mapping[str, object], path: str) -> Operation:
    """The platform operation `obj["operation"]` names: a plan file is text, and a call of an
    operation the platform does not have can never be sent."""
    name = _typed(obj, "operation", path, str)
    try:
        return get_operation(name)
    except KeyError:
        raise PlanShapeError(f"{path}.operation", "not an operation of the platform API") from None


def _note_from_dict(data: object, path: str) -> Note:
    obj = _object(data, path)
    severity = _one_of(obj, "severity", path, NOTE_SEVERITIES)
    address = obj.get("address")
    if address is not None and not isinstance(address, str):
        raise PlanShapeError(f"{path}.address", f"expected a string or null, got {_kind(address)}")
    group = obj.get("group")
    if group is not None and not isinstance(group, str):
        raise PlanShapeError(f"{path}.group", f"expected a string or null, got {_kind(group)}")
    return Note(
        severity=severity,
        message=_typed(obj, "message", path, str),
        address=address,
        # both optional: absent from plans written before they existed
        subjects=_strings(obj, "subjects", path) if "subjects" in obj else (),
        group=group,
    )


def _position_text(position: Position) -> str:
    """`file:line:column` with the file's name as it is (JSON escapes what must be), not as
    `str(position)` shows it to people: the saved plan reads it back."""
    return f"{position.file}:{position.line}:{position.column}"


def _position(obj: Mapping[str, object], path: str) -> Position | None:
    text = obj.get("position")
    if text is None:
        return None
    parts = text.rsplit(":", 2) if isinstance(text, str) else []
    if len(parts) != 3 or not parts[0] or not all(p.isdigit() for p in parts[1:]):
        raise PlanShapeError(f"{path}.position", 'expected "file:line:column" or null')
    return Position(parts[0], int(parts[1]), int(parts[2]))


def _check_summary(root: Mapping[str, object], plan: Plan) -> None:
    """The summary is redundant; a mismatch means the file was edited or cut by hand."""
    summary = _object(_get(root, "summary", "$"), "summary")
    add, change, destroy = plan.counts()
    blocked = sum(c.action is Action.BLOCKED for c in plan.changes)
    expected = {"add": add, "change": change, "destroy": destroy, "blocked": blocked}
    for key, count in expected.items():
        if summary.get(key) != count:
            raise PlanShapeError(f"summary.{key}", "does not match the changes listed")


def decode_value(value: object, path: str) -> PlanValue:
    """Inverse of `encode_value`: markers back to SecretRef/ABSENT, arrays to `JsonArray`."""
    if isinstance(value, list):
        return JsonArray(decode_value(item, f"{path}[{i}]") for i, item in enumerate(value))
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if not isinstance(value, dict):  # never from JSON text: only a caller's own objects
        raise PlanShapeError(path, "expected a JSON value")
    if SECRET_MARKER in value:
        return _secret_ref(value, path)
    if ABSENT_MARKER in value:
        if value != {ABSENT_MARKER: True}:
            raise PlanShapeError(path, 'an "$absent" marker must be exactly {"$absent": true}')
        return ABSENT
    return {key: decode_value(item, f"{path}.{key}") for key, item in value.items()}


def _secret_ref(value: Mapping[str, object], path: str) -> SecretRef:
    inner = value[SECRET_MARKER]
    members: Mapping[str, object] = inner if isinstance(inner, dict) else {}
    source, fingerprint = members.get("source"), members.get("fingerprint")
    if (
        len(value) != 1
        or set(members) != {"source", "fingerprint"}
        or not isinstance(source, str)
        or not (fingerprint is None or isinstance(fingerprint, str))
    ):
        raise PlanShapeError(
            path, 'a secret reference must be {"$secret": {"source": str, "fingerprint": str|null}}'
        )
    return SecretRef(source=source, fingerprint=fingerprint)


def _is_sent(value: PlanObject) -> TypeGuard[SentObject]:
    """Whether `value` holds no ABSENT at any depth: what a call can send."""
    return not _holds(value, (type(ABSENT),))


def _is_json(value: PlanObject) -> TypeGuard[JsonObject]:
    """Whether `value` holds neither ABSENT nor a SecretRef at any depth: plain JSON."""
    return not _holds(value, (type(ABSENT), SecretRef))


def _holds(value: PlanValue, markers: tuple[type, ...]) -> bool:
    """Whether `value` is, or holds at any depth, a value of one of the `markers` types."""
    if isinstance(value, markers):
        return True
    if isinstance(value, Mapping):
        return any(_holds(item, markers) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds(item, markers) for item in value)
    return False


# --------------------------------------------------------------------------- shape helpers


def _kind(value: object) -> str:
    """The JSON type name of a value, for messages (the value itself is never shown)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"


def _get(obj: Mapping[str, object], key: str, path: str) -> object:
    if key not in obj:
        raise PlanShapeError(_join(path, key), "is missing")
    return obj[key]


def _join(path: str, key: str) -> str:
    return key if path == "$" else f"{path}.{key}"


def _object(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise PlanShapeError(path, f"expected an object, got {_kind(value)}")
    return value


def _decoded_object(value: object, path: str) -> PlanObject:
    """`value` decoded (`decode_value`), which must be an object."""
    decoded = decode_value(value, path)
    if not isinstance(decoded, dict):
        raise PlanShapeError(path, f"expected an object, got {_kind(decoded)}")
    return decoded


def _array(value: object, path: str) -> Sequence[object]:
    if not isinstance(value, list | tuple):
        raise PlanShapeError(path, f"expected an array, got {_kind(value)}")
    return value


def _typed(obj: Mapping[str, object], key: str, path: str, kind: type[T]) -> T:
    value = _get(obj, key, path)
    # bool is an int in Python; a JSON boolean is never a count and a number never a flag
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        expected = {str: "a string", bool: "a boolean", int: "an integer"}[kind]
        raise PlanShapeError(_join(path, key), f"expected {expected}, got {_kind(value)}")
    return value


def _integer(obj: Mapping[str, object], key: str, path: str) -> int:
    value = _typed(obj, key, path, int)
    if value < 0:
        raise PlanShapeError(_join(path, key), "must not be negative")
    return value


def _optional_index(obj: Mapping[str, object], key: str, path: str) -> int | None:
    return None if _get(obj, key, path) is None else _integer(obj, key, path)


def _optional_mapping(obj: Mapping[str, object], key: str, path: str) -> PlanObject | None:
    value = _get(obj, key, path)
    if value is None:
        return None
    return _decoded_object(value, _join(path, key))


def _strings(obj: Mapping[str, object], key: str, path: str) -> tuple[str, ...]:
    where = _join(path, key)
    strings = []
    for i, item in enumerate(_array(_get(obj, key, path), where)):
        if not isinstance(item, str):
            raise PlanShapeError(f"{where}[{i}]", f"expected a string, got {_kind(item)}")
        strings.append(item)
    return tuple(strings)


def _items(
    obj: Mapping[str, object], key: str, path: str, build: Callable[[object, str], T]
) -> tuple[T, ...]:
    where = _join(path, key)
    return tuple(
        build(item, f"{where}[{i}]") for i, item in enumerate(_array(_get(obj, key, path), where))
    )
