"""What a plan sends, in a form two plans are compared by, and the digest a review publishes.

A pull request's plan is reviewed; the merge applies a plan made again on main. "Reviewed equals
applied" means the two send the same calls: per address, the same action and the same calls
with the same bodies. Secret values never take part (a write-only value is its reference, and,
when both plans were made with the fingerprint key, its fingerprint).

The digest (`calls:v1:<mode>:<sha256>`) is what the pull request publishes; `mode` says whether
fingerprints are in it (`keyed`) or not (`presence`: a plan made without the fingerprint key,
which is the rule for pull requests), and the merge's plan is compared in that mode.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from reconciler.json_types import JsonValue
from reconciler.plan import kinds
from reconciler.plan.changes import ABSENT, Plan, PlanValue, SecretRef
from reconciler.plan.secrets import split_fingerprint

Mode = Literal["keyed", "presence"]
Sent = dict[str, tuple[str | None, list[tuple[str, JsonValue]]]]
"""address -> (the change's action, or None where only a batch sends for it; its calls as
(operation, the part of the body that is its own))."""

DIGEST_PATTERN = re.compile(r"calls:v1:(keyed|presence):([0-9a-f]{64})")


def plan_mode(plan: Plan) -> Mode:
    """Whether `plan` compared write-only values by fingerprint (made with the key)."""
    return "keyed" if plan.metadata.get("fingerprint_mode") == "keyed" else "presence"


def sent_calls(plan: Plan, *, fingerprints: bool) -> Sent:
    """What apply would send, by address. A variables batch counts under each variable it
    sends (`Kind.call_parts`), so a batch that gained or lost one variable differs at that
    variable alone. Secret references compare by source, with their fingerprint only when
    `fingerprints`; without them, descriptions compare without the fingerprint marker too (a
    plan made without the key sends none)."""
    changes = plan.executable_changes
    actions = {c.address: c.action.value for c in changes}
    parts: dict[str, list[tuple[str, JsonValue]]] = {}
    for change in changes:
        kind = kinds.find(change.kind)
        for call in change.calls:
            # a kind this reconciler does not have (a plan file's, which reading refuses
            # anyway) sends its call whole, under its own address
            split = kind.call_parts(change, call) if kind else [(change.address, call.body)]
            for address, part in split:
                comparable = _comparable(part, fingerprints)
                parts.setdefault(address, []).append((call.operation.name, comparable))
    return {a: (actions.get(a), parts.get(a, [])) for a in actions.keys() | parts.keys()}


def _comparable(value: PlanValue, fingerprints: bool) -> JsonValue:
    if value is ABSENT:
        return {"$absent": True}
    if isinstance(value, SecretRef):
        return ("secret", value.source, value.fingerprint if fingerprints else None)
    if isinstance(value, Mapping):
        return {
            key: (
                split_fingerprint(item)[0]
                if key == "description" and not fingerprints and isinstance(item, str)
                else _comparable(item, fingerprints)
            )
            for key, item in value.items()
        }
    if isinstance(value, str) or not isinstance(value, Sequence):
        return value
    return [_comparable(item, fingerprints) for item in value]


def calls_digest(plan: Plan) -> str:
    """The digest of what `plan` sends, in its own mode."""
    mode = plan_mode(plan)
    return digest_of(sent_calls(plan, fingerprints=mode == "keyed"), mode)


def digest_of(sent: Sent, mode: Mode) -> str:
    canonical = json.dumps(
        sorted(sent.items()), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return f"calls:v1:{mode}:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"


@dataclass(frozen=True)
class Reviewed:
    """What a review saw: its digest, and its calls where the reviewed plan itself is at hand
    (a saved plan or plan JSON), which lets a refusal name every address that differs."""

    digest: str
    calls: Sent | None = None

    @property
    def mode(self) -> Mode:
        found = DIGEST_PATTERN.fullmatch(self.digest)
        assert found is not None  # made by digest_of or parsed by reviewed_digest
        return "keyed" if found.group(1) == "keyed" else "presence"

    @classmethod
    def of_plan(cls, plan: Plan) -> Reviewed:
        mode = plan_mode(plan)
        sent = sent_calls(plan, fingerprints=mode == "keyed")
        return cls(digest_of(sent, mode), sent)


def is_digest(text: str) -> bool:
    return DIGEST_PATTERN.fullmatch(text.strip()) is not None


def differences(reviewed: Sent, now: Sent) -> list[str]:
    """One line per address whose calls differ: `+` planned now only, `-` reviewed only, `~`
    both with other calls."""
    lines = []
    for address in sorted(reviewed.keys() | now.keys()):
        before, after = reviewed.get(address), now.get(address)
        if before == after:
            continue
        if before is None:
            lines.append(f"+ {address}: planned now, not in the reviewed plan")
        elif after is None:
            lines.append(f"- {address}: in the reviewed plan, no longer planned")
        else:
            lines.append(f"~ {address}: {_what_differs(before, after)}")
    return lines


def _what_differs(
    before: tuple[str | None, list[tuple[str, JsonValue]]],
    after: tuple[str | None, list[tuple[str, JsonValue]]],
) -> str:
    if before[0] != after[0]:
        return f"reviewed as {before[0] or 'part of a batch'}, planned now as {after[0] or 'part of a batch'}"
    operations = [operation for operation, _ in before[1]]
    now = [operation for operation, _ in after[1]]
    if operations != now:
        return f"reviewed calls {', '.join(operations) or 'none'}, now {', '.join(now) or 'none'}"
    changed = sorted(
        {op for (op, body), (_, other) in zip(before[1], after[1], strict=True) if body != other}
    )
    return f"the body of {', '.join(changed)} differs"
