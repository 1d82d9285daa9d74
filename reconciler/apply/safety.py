"""Everything that must hold before apply's first write: the safety rules of the CLI,
every secret the plan sends, and (for a saved plan) that the world has not moved since."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reconciler.credentials import FINGERPRINT_KEY_ENV
from reconciler.errors import ApplyRefused, ReconcilerError
from reconciler.manifest.secret_sources import SecretRefused, SecretTooLong
from reconciler.plan import kinds
from reconciler.plan.changes import Action, Call, Change, Plan, SecretRef, VariableDetail
from reconciler.plan.review import sent_calls
from reconciler.plan.secrets import ref_matches
from reconciler.sensitive import Secret

SecretResolver = Callable[[SecretRef], Secret]


def executable_changes(plan: Plan) -> tuple[Change, ...]:
    """The changes apply sends calls for: everything but blocked deletions."""
    return plan.executable_changes


def check_safety(
    plan: Plan, *, max_deletes: int, allow_replace: bool, resolve: SecretResolver
) -> None:
    """Refuse, before any write, a plan that breaks a safety rule or needs a missing secret."""
    deletions = [c.address for c in plan.deletions]
    if len(deletions) > max_deletes:
        raise ApplyRefused(
            f"the plan deletes {len(deletions)} objects, more than --max-deletes {max_deletes}: "
            + ", ".join(deletions),
            hint=f"review the deletions, then rerun with --max-deletes {len(deletions)}",
        )
    replaced = [c.address for c in plan.changes if c.action is Action.REPLACE]
    if replaced and not allow_replace:
        raise ApplyRefused(
            "the plan replaces "
            + ", ".join(replaced)
            + " (delete and create again: its deployments, domains and variables are destroyed)",
            hint="rerun with --allow-replace if that is intended",
        )
    check_secrets(plan, resolve)


def secret_refs(plan: Plan) -> tuple[tuple[str, SecretRef], ...]:
    """(address, ref) for every secret that an executable change sends.

    A variable's address is its own even when another variable's change carries the batch call.
    """
    found: list[tuple[str, SecretRef]] = []
    for change in executable_changes(plan):
        for call in change.calls:
            owners = {id(ref): address for address, _, ref in _variable_secrets(change, call)}
            found.extend(
                (owners.get(id(ref), change.address), ref) for ref in _walk_refs(call.body)
            )
    return tuple(found)


def _variable_secrets(change: Change, call: Call) -> Iterable[tuple[str, str, SecretRef]]:
    """(the variable's address, its key, ref) for each secret value a call sends in a list of
    variables; a batch's secret is named under the address of the variable that sends it
    (`Kind.call_parts`), whichever change carries the batch."""
    for address, part in kinds.get(change.kind).call_parts(change, call):
        items = part.get("variables")
        for item in items if isinstance(items, (list, tuple)) else ():
            if isinstance(item, Mapping) and isinstance(item.get("value"), SecretRef):
                yield address, str(item.get("key")), item["value"]


def _walk_refs(value: Any) -> Iterable[SecretRef]:
    if isinstance(value, SecretRef):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _walk_refs(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk_refs(item)


def check_secrets(plan: Plan, resolve: SecretResolver) -> None:
    """Every secret the plan sends must resolve now, to a value the platform stores and that is
    none of reconciler's own credentials; the value is dropped at once."""
    missing: list[str] = []
    too_long: list[str] = []
    refused: list[str] = []
    seen: set[str] = set()
    for address, ref in secret_refs(plan):
        if ref.source in seen:
            continue
        seen.add(ref.source)
        try:
            resolve(ref)
        except SecretTooLong as error:
            too_long.append(f"{address}: {error.message}")
        except SecretRefused as error:
            refused.append(f"{address}: {error.message}")
        except ReconcilerError as error:
            missing.append(f"{address}: {error.message}")
    if too_long or refused:
        fixes = [
            *(["shorten the long ones"] if too_long else []),
            *(["give the apps secrets of their own in place of reconciler's"] if refused else []),
            *(["set the missing ones"] if missing else []),
        ]
        raise ApplyRefused(
            "secrets the plan must send cannot be sent, nothing was applied:\n  "
            + "\n  ".join(too_long + refused + missing),
            hint=", ".join(fixes) + ", then rerun",
        )
    if missing:
        raise ApplyRefused(
            "secrets the plan must send are missing, nothing was applied:\n  "
            + "\n  ".join(missing),
            hint="set them (fromEnv: the environment variable; fromFile: the file), then rerun",
        )


_REPLAN = "run `reconciler plan --out PLANFILE` again, review it, and apply the new plan"


def check_saved_plan(
    saved: Plan, current: Plan, *, resolve: SecretResolver, fingerprint_key: bytes | None
) -> None:
    """Refuse a saved plan that no longer describes the world, before any write.

    `current` is the plan rebuilt now from the same manifest files against live
    state: a different manifest digest means the files changed, a different
    live digest that someone changed the platform since (a stale plan). Then each
    secret the plan sends must still resolve to the value fingerprinted at plan
    time, and the calls must be the ones the plan rebuilt now makes. Every refusal
    about a secret names the variable and its source.
    """
    if current.manifest_digest != saved.manifest_digest:
        raise ApplyRefused(
            "the manifest files changed since this plan was saved, nothing was applied",
            hint=_REPLAN,
        )
    if current.live_digest != saved.live_digest:
        raise ApplyRefused(
            "the plan is stale: live state changed since it was saved, nothing was applied",
            hint=_REPLAN,
        )
    _check_declared_sources(saved, current)
    check_secrets(saved, resolve)
    _check_fingerprints(saved, resolve, fingerprint_key)
    # Same manifest, same live state, yet other calls: a secret changed or went missing since
    # (the plan rebuilt now compares it differently), or the file was edited after review (its
    # checksum only proves it is whole; anyone can recompute it). `current` was planned without
    # the secrets the saved plan was made without (`unknown_secrets`), so a plan made in a
    # pull request from a fork is held to its calls too.
    _check_same_calls(saved, current, resolve)


def _check_declared_sources(saved: Plan, current: Plan) -> None:
    """Each secret the saved plan sends is read from the source the manifest declares for that
    same variable, before any source is read: an edited reference would otherwise read, and
    send to the platform, any environment variable or declared file the plan file names."""
    declared = current.declared_secrets
    wrong = sorted(
        f"{address}: the saved plan sends {ref.source}, but the manifest declares "
        f"{declared.get(address, 'no secret source')} for it"
        for address, ref in secret_refs(saved)
        if declared.get(address) != ref.source
    )
    if wrong:
        raise ApplyRefused(
            "the saved plan reads secrets its manifest does not declare: the plan file was "
            "edited after it was saved; nothing was read or applied:\n  " + "\n  ".join(wrong),
            hint=_REPLAN,
        )


def _check_fingerprints(
    saved: Plan, resolve: SecretResolver, fingerprint_key: bytes | None
) -> None:
    """Each secret the plan sends still has the value whose fingerprint the plan recorded."""
    sources = _sources(saved)
    fingerprinted = [
        (address, key, ref)
        for change in executable_changes(saved)
        for call in change.calls
        for address, key, ref in _variable_secrets(change, call)
        if ref.fingerprint is not None
    ]
    if fingerprinted and fingerprint_key is None:
        raise ApplyRefused(
            f"the plan recorded fingerprints of the secrets it sends "
            f"({', '.join(address for address, _, _ in fingerprinted)}), but "
            f"{FINGERPRINT_KEY_ENV} is not set now, so apply cannot check that they are still "
            "the values reviewed; nothing was applied",
            hint=f"set the same {FINGERPRINT_KEY_ENV} as when the plan was made, then rerun",
        )
    changed = [
        f"{address}: the value of {sources.get(address, ref.source)} changed since the plan "
        "was saved (it does not match the fingerprint the plan recorded)"
        for address, _, ref in fingerprinted
        if not ref_matches(ref, resolve(ref), key=fingerprint_key, address=address)
    ]
    if changed:
        raise ApplyRefused(
            "secrets changed since the plan was saved, nothing was applied:\n  "
            + "\n  ".join(changed),
            hint=f"{_REPLAN} (if the values are right but {FINGERPRINT_KEY_ENV} differs from "
            "the one the plan was made with, use that key instead)",
        )


def _check_same_calls(saved: Plan, current: Plan, resolve: SecretResolver) -> None:
    """The saved plan sends what the plan rebuilt now sends; each difference is explained."""
    # secret references by source: their fingerprints are checked on their own, and a secret
    # missing at plan time gets its fingerprint at apply time
    saved_calls = sent_calls(saved, fingerprints=False)
    current_calls = sent_calls(current, fingerprints=False)
    differing = sorted(
        address
        for address in saved_calls.keys() | current_calls.keys()
        if saved_calls.get(address) != current_calls.get(address)
    )
    if not differing:
        return
    secrets_now = _SecretsNow(saved, current, resolve)
    explained = {address: secrets_now.explain(address) for address in differing}
    unexplained = [address for address, why in explained.items() if why is None]
    if unexplained:
        raise ApplyRefused(
            "the saved plan's calls for "
            + ", ".join(unexplained)
            + " differ from the plan its manifest and live state give now: the plan file was "
            "edited after it was saved; nothing was applied",
            hint=_REPLAN,
        )
    raise ApplyRefused(
        "secrets changed since the plan was saved, nothing was applied:\n  "
        + "\n  ".join(f"{address}: {why}" for address, why in explained.items()),
        hint=f"{_REPLAN}; or give the secrets the values the plan was made with",
    )


class _SecretsNow:
    """Why a variable's calls differ between a saved plan and the plan rebuilt now, when the
    reason is its secret: gone since the plan was made, or holding another value."""

    def __init__(self, saved: Plan, current: Plan, resolve: SecretResolver) -> None:
        self.saved = {c.address: c for c in executable_changes(saved)}
        self.current = {c.address: c for c in executable_changes(current)}
        self.refs = {
            address: ref
            for change in executable_changes(current)
            for call in change.calls
            for address, _, ref in _variable_secrets(change, call)
        }
        self.resolve = resolve

    def explain(self, address: str) -> str | None:
        before, now = self.saved.get(address), self.current.get(address)
        change = now or before
        if change is None or not isinstance(change.detail, VariableDetail):
            return None  # not a secret: nothing but an edit explains it
        source = change.detail.secret_source
        missing = self._missing(address)
        if missing is not None:
            return (
                f"{missing}; the plan was made with it, so apply cannot check that it still "
                "holds the value reviewed"
            )
        if before is not None and now is not None:
            return None  # a secret decides whether a variable is sent, never what else is
        changed = f"the value of {source} changed since the plan was saved"
        if before is None:
            return f"{changed}: it no longer matches the fingerprint on the platform"
        if now is None:
            return f"{changed}: it now matches the platform, so the plan's update is outdated"
        return changed

    def _missing(self, address: str) -> str | None:
        ref = self.refs.get(address)
        if ref is None:
            return None
        try:
            self.resolve(ref)
        except ReconcilerError as error:
            return error.message
        return None


def _sources(plan: Plan) -> dict[str, str]:
    """Each variable's secret source as people read it (`fromEnv NAME`), by address."""
    return {
        change.address: str(change.detail.secret_source)
        for change in plan.changes
        if isinstance(change.detail, VariableDetail)
    }


def planned_without(plan: Plan) -> frozenset[str]:
    """The addresses of the changes whose secret values `plan` was made without (missing when
    it was planned: shown as known after apply, with no fingerprint)."""
    return frozenset(c.address for c in plan.changes if any(d.known_after_apply for d in c.diffs))


def unknown_secrets(plan: Plan) -> frozenset[str]:
    """The references of the secrets `plan` was made without (their values known after apply):
    the plan rebuilt to check it is planned without them too (`PlanOptions.unavailable_secrets`).
    Marking more of them unknown in an edited file gains nothing: the rebuilt plan then only
    sends those secrets again, from their declared sources."""
    unknown = planned_without(plan)
    return frozenset(ref.source for address, ref in secret_refs(plan) if address in unknown)
