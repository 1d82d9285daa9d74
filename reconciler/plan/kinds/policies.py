"""Gateway policies: `policies.<project>/<app>/<env>`, the ordered list as one resource.

Read with one `gateway.listPolicies` when the manifest manages the list, each policy
checked and parsed there, once, into a `LivePolicy` (what it does not know kept in it). The
list is replaced whole by one `gateway.setPolicies` (every policy gets a new
ID there, so IDs are never compared). It is diffed by position and content:
each policy is put in a canonical form (no id, absent `match` = `[]`,
`ignoreCase: false` = absent, logging booleans that are false = absent), and a
sequence alignment of the two lists (difflib) says which policies were
inserted, removed or changed, so an edit in the middle of the list reads as
that one edit instead of every later policy shifting.

What a newer platform adds (a member of a policy, of its rule or of a match condition, a
policy of a kind this reconciler does not know: anything `shapes.POLICY` does not document)
is kept in the canonical form. It never makes a change by itself: a live member the manifest
does not write is not compared, one it writes (in `opaque`) is compared as written. But
`setPolicies` replaces the list, so when the list does change, what the list sent would not
carry is named on the change (`unknown_removed`) and in a warning, and apply refuses it unless
run with --allow-unknown-removal (reconciler/pipeline/safety.py).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reconciler.address import Address, TreePath
from reconciler.errors import UnexpectedResponse
from reconciler.json_types import JsonObject, JsonValue
from reconciler.manifest.model import UNSET, Environment
from reconciler.plan.changes import Action, Call, Change, Note, PolicyEdit, PolicyListDetail
from reconciler.plan.kinds.base import (
    EnvironmentJob,
    EnvironmentKind,
    Location,
    comparable,
    make_call,
    nested_diffs,
    plain,
    require_fields,
)
from reconciler.plan.kinds.registry import register
from reconciler.plan.live import LiveRecord
from reconciler.plan.phases import ApplyPhase, ReadAt
from reconciler.platform.protocol import Platform
from reconciler.platform.shapes import POLICY, SERVER_MEMBERS, Shape, unknown_members

if TYPE_CHECKING:
    from reconciler.policy_tests.effect import OutcomeChange

READ_OPERATION = "gateway.listPolicies"
UNORDERED_LISTS = frozenset(
    {"match[].remoteIp.in", "match[].remoteIp.notIn", "match[].method.methods"}
)
"""Lists the gateway treats as sets (an IP in any range, outside all ranges; a method among
these): their diffs name the items inserted and removed, not positions that shifted."""


_CANONICAL_MEMBERS = frozenset({"name", "enabled", "match", "firewall", "logging"})
RULE_KINDS = ("firewall", "logging")


@dataclass(frozen=True)
class LivePolicy:
    """One policy of a `gateway.listPolicies` answer, checked where the kind reads it (its
    known members of their documented types; a policy of a kind this reconciler does not know
    is kept and shown like any other). `raw` is the object as read, with what this reconciler
    does not know, which the policy engine evaluates and a list sent back keeps; `canonical`
    is its canonical form (`normalise_policy`), what the plan compares and shows."""

    name: str
    raw: JsonObject
    canonical: JsonObject


def read_policies(items: Sequence[JsonObject]) -> tuple[LivePolicy, ...]:
    """The policies of a `gateway.listPolicies` answer, in run order; an `UnexpectedResponse`
    naming the operation for one whose known members do not have their documented types."""
    require_fields(READ_OPERATION, list(items), "name")
    return tuple(_live_policy(item) for item in items)


def _live_policy(item: JsonObject) -> LivePolicy:
    name, enabled, match = item.get("name"), item.get("enabled", False), item.get("match") or []
    assert isinstance(name, str)  # require_fields checked it
    if not isinstance(enabled, bool):
        raise _malformed(name, "`enabled` that is not a boolean")
    if not isinstance(match, list) or not all(isinstance(m, Mapping) for m in match):
        raise _malformed(name, "`match` that is not a list of objects")
    for rule in RULE_KINDS:
        if rule in item and not isinstance(item[rule], Mapping):
            raise _malformed(name, f"`{rule}` that is not an object")
    return LivePolicy(name, item, normalise_policy(item))


def _malformed(name: str, problem: str) -> UnexpectedResponse:
    return UnexpectedResponse(
        f"{READ_OPERATION}: the platform returned policy {json.dumps(name)} with {problem}",
        operation=READ_OPERATION,
    )


def normalise_policy(policy: JsonObject) -> dict[str, JsonValue]:
    """The canonical form of one policy, from either side (live response or manifest).

    Members this reconciler does not know are kept as they are, after the ones it knows (a
    logging flag it knows only when true; one it does not know as it is)."""
    shown: dict[str, JsonValue] = {
        "name": policy.get("name"),
        "enabled": bool(policy.get("enabled")),
    }
    listed = policy.get("match")
    items = listed if isinstance(listed, (list, tuple)) else ()
    match = [_without_false_ignore_case(plain(item)) for item in items]
    if match:
        shown["match"] = match
    firewall = policy.get("firewall")
    if isinstance(firewall, Mapping):
        shown["firewall"] = plain(firewall)
    logging = policy.get("logging")
    if isinstance(logging, Mapping):
        flags = POLICY.fields["logging"].fields  # read here: naming them reads the API document
        shown["logging"] = {
            k: True if k in flags else plain(v)
            for k, v in logging.items()
            if v is True or k not in flags
        }
    for key, value in policy.items():
        if key not in _CANONICAL_MEMBERS and key not in SERVER_MEMBERS:
            shown[key] = plain(value)
    return shown


def agrees(live: JsonValue, wanted: JsonValue, shape: Shape = POLICY) -> bool:
    """Whether `live` is what `wanted` asks for (both canonical): every member `wanted` writes
    is live's too (one this reconciler does not know, exactly as written), and what live holds
    beyond it is only members it does not know. Equal values always agree."""
    if shape.kind == "object" and isinstance(live, Mapping) and isinstance(wanted, Mapping):
        for key, value in wanted.items():
            if key not in live:
                return False
            member = shape.fields.get(key)
            same = (
                comparable(live[key]) == comparable(value)
                if member is None
                else agrees(live[key], value, member)
            )
            if not same:
                return False
        return all(key in wanted or key not in shape.fields for key in live)
    if (
        shape.kind == "array"
        and shape.item is not None
        and isinstance(live, list)
        and isinstance(wanted, list)
    ):
        return len(live) == len(wanted) and all(
            agrees(old, new, shape.item) for old, new in zip(live, wanted, strict=True)
        )
    return bool(comparable(live) == comparable(wanted))


def removed_unknowns(before: Sequence[JsonObject], after: Sequence[JsonObject]) -> tuple[str, ...]:
    """What the live list (`before`) holds that this reconciler does not know and the list
    sent (`after`, both canonical) would not carry: each live policy's unknown members
    (`rateLimit`, `firewall.statusCode`, `match[].country`) that no policy of the same name
    sent holds at the same place, as `policies[2] "rl": rateLimit`."""
    carried: dict[JsonValue, set[str]] = {}
    for policy in after:
        carried.setdefault(policy.get("name"), set()).update(_member_paths(policy))
    removed = []
    for index, policy in enumerate(before):
        held = carried.get(policy.get("name"), set())
        lost = [p for p in unknown_members(policy, POLICY, indexes=False) if p not in held]
        if lost:
            removed.append(f"policies[{index}] {json.dumps(policy.get('name'))}: {', '.join(lost)}")
    return tuple(removed)


def _member_paths(value: JsonValue, where: str = "") -> set[str]:
    """Every member's path in `value`, list items as `[]` (`match[].path.path.prefix`)."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, member in value.items():
            path = f"{where}.{key}" if where else str(key)
            found.add(path)
            found |= _member_paths(member, path)
    elif isinstance(value, list):
        for item in value:
            found |= _member_paths(item, f"{where}[]")
    return found


def _without_false_ignore_case(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return {
            k: _without_false_ignore_case(v)
            for k, v in value.items()
            if not (k == "ignoreCase" and v is False)
        }
    if isinstance(value, list):
        return [_without_false_ignore_case(v) for v in value]
    return value


def _canonical(policy: JsonObject) -> str:
    return json.dumps(policy, sort_keys=True, separators=(",", ":"))


def align(before: Sequence[JsonObject], after: Sequence[JsonObject]) -> list[PolicyEdit]:
    """The edit script turning `before` into `after` (both canonical), with kept policies too.

    Within a replaced block, removed and inserted policies are paired in order into `change`
    edits with their field diffs; what is left over is a plain removal or insertion.
    """
    matcher = difflib.SequenceMatcher(
        None, [_canonical(p) for p in before], [_canonical(p) for p in after], autojunk=False
    )
    edits: list[PolicyEdit] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            edits.extend(
                PolicyEdit("keep", i, j, before[i], after[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        edits.extend(_align_block(before, after, range(i1, i2), range(j1, j2), tag == "replace"))
    return edits


def _align_block(
    before: Sequence[JsonObject],
    after: Sequence[JsonObject],
    removed: range,
    inserted: range,
    pair: bool,
) -> list[PolicyEdit]:
    """Edits for one differing block: policies with the same name are paired first (an edited
    policy keeps its name), then what is left is paired in order; the rest is removed/inserted.
    """
    pairs: dict[int, int] = {}
    if pair:
        next_j = inserted.start
        for i in removed:
            same = [
                j for j in inserted if j >= next_j and after[j].get("name") == before[i].get("name")
            ]
            if same:
                pairs[i], next_j = same[0], same[0] + 1
        left_i = [i for i in removed if i not in pairs]
        left_j = [j for j in inserted if j not in pairs.values()]
        for i, j in zip(left_i, left_j, strict=False):
            if all((i < a) == (j < b) for a, b in pairs.items()):  # keep the pairing in order
                pairs[i] = j
    keyed: list[tuple[float, PolicyEdit]] = []
    for i in removed:
        if i in pairs:
            j = pairs[i]
            diffs = tuple(
                nested_diffs(
                    "", before[i], after[j], walk_lists=True, unordered_lists=UNORDERED_LISTS
                )
            )
            keyed.append((j, PolicyEdit("change", i, j, before[i], after[j], diffs)))
        else:
            following = [j for a, j in pairs.items() if a > i]
            keyed.append(
                (
                    min(following, default=inserted.stop) - 0.5,
                    PolicyEdit("remove", i, None, before[i], None),
                )
            )
    paired_j = set(pairs.values())
    keyed.extend(
        (j, PolicyEdit("insert", None, j, None, after[j])) for j in inserted if j not in paired_j
    )
    keyed.sort(key=lambda item: item[0])
    return [edit for _, edit in keyed]


def plan_policies(
    project_slug: str,
    app_slug: str,
    environment: Environment,
    live: Sequence[LivePolicy] | None,
    ref: Location,
    unmanaged: list[str] | None = None,
) -> Change | None:
    """The change of one environment's policy list; `live` is None when the app is being created.
    `unmanaged` receives what the live list holds that this reconciler does not know and the
    manifest does not carry (`removed_unknowns`), change or not."""
    assert environment.policies is not UNSET
    wanted = [p.to_api() for p in environment.policies]
    after = [normalise_policy(p) for p in wanted]
    before = [p.canonical for p in live or ()]
    if before == after and (live is not None or not after):
        return None  # equal: whatever live holds that reconciler does not know, it carries
    removed = removed_unknowns(before, after)
    if unmanaged is not None:
        unmanaged.extend(removed)
    if live is not None and agrees(before, after, _LIST):
        return None  # only members this reconciler does not know differ: nothing to send
    fresh = live is None
    edits = align(before, after)
    outcomes, problems = _test_outcomes([p.raw for p in live or ()], wanted, environment)
    return Change(
        address=str(Address.of("policies", project_slug, app_slug, environment.name)),
        kind="policies",
        action=Action.CREATE if fresh else Action.UPDATE,
        before=None if fresh else {"policies": before},
        after={"policies": after},
        calls=(
            make_call("gateway.setPolicies", ref.body(policies=wanted), object_id=ref.object_id),
        ),
        notes=(_summary(edits), *problems, *_removal_note(removed)),
        position=environment.positions.get("policies", environment.pos),
        detail=PolicyListDetail(tuple(edits), outcomes),
        unknown_removed=removed,
    )


_LIST = Shape("array", item=POLICY)


def _removal_note(removed: Sequence[str]) -> tuple[str, ...]:
    if not removed:
        return ()
    return (
        "gateway.setPolicies replaces the whole list, and the list sent does not carry what "
        "this reconciler does not know of the live one: " + "; ".join(removed) + ". Apply "
        "refuses this unless the manifest carries them (in `opaque`, as `reconciler export` "
        "writes them) or it runs with --allow-unknown-removal",
    )


def _test_outcomes(
    live: Sequence[JsonObject], wanted: Sequence[JsonObject], environment: Environment
) -> tuple[tuple[OutcomeChange, ...], tuple[str, ...]]:
    """The policy tests whose verdict the change turns, or why they could not be evaluated."""
    # imported when a list changes: the policy engine (and re2) is an eighth of a plan's
    # own imports, and most plans change no policy
    from reconciler.policy_tests import PolicyError
    from reconciler.policy_tests.effect import changed_outcomes

    try:
        return changed_outcomes(live, wanted, environment.policy_tests), ()
    except PolicyError as error:  # the live list: the manifest's was validated
        return (), (f"policy tests not evaluated: the live list cannot be evaluated ({error})",)


def _summary(edits: Sequence[PolicyEdit]) -> str:
    counts = {op: sum(e.op == op for e in edits) for op in ("insert", "remove", "change", "keep")}
    words = {"insert": "inserted", "remove": "removed", "change": "changed", "keep": "unchanged"}
    parts = [f"{counts[op]} {words[op]}" for op in words if counts[op]]
    return "the whole list is sent in one gateway.setPolicies: " + ", ".join(parts)


class PoliciesKind(EnvironmentKind[tuple[LivePolicy, ...], tuple[LivePolicy, ...]]):
    """`policies.<project>/<app>/<env>`: the ordered list as one resource, sent whole."""

    name = "policies"
    depth = 3
    container = False
    read_at = ReadAt.ENVIRONMENT
    read_operation = READ_OPERATION

    async def read(self, platform: Platform, at: Location) -> tuple[LivePolicy, ...]:
        found = await platform.list_all(READ_OPERATION, at.body(), object_id=at.object_id)
        return read_policies(found)

    def record(
        self, record: LiveRecord, at: Location, label: TreePath, found: tuple[LivePolicy, ...]
    ) -> None:
        record.read(READ_OPERATION, at.object_id)
        record.state[f"policies {label}"] = [p.canonical for p in found]

    def pick(self, found: tuple[LivePolicy, ...], at: Location) -> tuple[LivePolicy, ...]:
        return found

    def environment_id(self, live: tuple[LivePolicy, ...]) -> str | None:
        return None

    def manages(self, environment: Environment) -> bool:
        return environment.policies is not UNSET

    def plan(self, job: EnvironmentJob, live: tuple[LivePolicy, ...] | None) -> None:
        unmanaged: list[str] = []
        change = plan_policies(job.project, job.app, job.environment, live, job.at, unmanaged)
        job.planning.add(change, job.depends_on)
        where = str(Address("policies", job.path))
        job.planning.unmanaged_fields.extend((where, item) for item in unmanaged)
        if change is not None and change.unknown_removed:
            job.planning.note(
                Note(
                    "warning",
                    f"{where}: the policy list sent would remove what this reconciler does "
                    f"not know ({'; '.join(change.unknown_removed)}); apply refuses it unless "
                    "the manifest carries them in `opaque` or it runs with "
                    "--allow-unknown-removal",
                    where,
                )
            )

    def apply_phase(self, change: Change, call: Call) -> ApplyPhase | None:
        return ApplyPhase.POLICIES

    def rollout_reason(self, change: Change) -> str | None:
        return "policies"

    def configures_deployment(self) -> bool:
        return True


KIND = register(PoliciesKind())
