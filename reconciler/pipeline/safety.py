"""What must hold before any write, on every path that writes (octoDNS's `raise_if_unsafe`)."""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.apply import check_safety
from reconciler.errors import ApplyRefused
from reconciler.plan.changes import Plan
from reconciler.plan.secrets import resolve_ref

DEFAULT_MAX_DELETES = 10


@dataclass(frozen=True)
class ApplyLimits:
    """The limits of the command that applies, never read back from a plan file (a file can be
    edited, its checksum recomputed): `--max-deletes`, `--allow-replace`,
    `--allow-unknown-removal`."""

    max_deletes: int = DEFAULT_MAX_DELETES
    allow_replace: bool = False
    allow_unknown_removal: bool = False


def raise_if_unsafe(plan: Plan, limits: ApplyLimits) -> None:
    """Refuse, before the first write, a plan that an error finding of the built-in checks
    fails, that breaks a limit, that would remove what this reconciler does not know (unless
    allowed), or that needs a secret that is missing."""
    failing = plan.failing_findings
    if failing:
        raise ApplyRefused(
            f"the built-in checks found {len(failing)} error(s) in this plan, nothing was "
            "applied:\n  " + "\n  ".join(finding.labelled for finding in failing),
            hint="fix them in the manifests, or waive a rule on the object with its reason "
            "(see the checks guide), then plan again",
        )
    removing = plan.unknown_removals
    if removing and not limits.allow_unknown_removal:
        raise ApplyRefused(
            "the plan would remove what this reconciler does not know (a newer platform's "
            "policies or members), nothing was applied:\n  "
            + "\n  ".join(
                f"{change.address}: {removed}"
                for change in removing
                for removed in change.unknown_removed
            ),
            hint="carry them in the manifest (`reconciler export` writes them in `opaque` "
            "blocks), or rerun with --allow-unknown-removal if removing them is intended",
        )
    check_safety(
        plan,
        max_deletes=limits.max_deletes,
        allow_replace=limits.allow_replace,
        resolve=resolve_ref,
    )
