"""Reviewed equals applied: the merge applies only the calls the pull request's review saw.

The pull request's plan publishes the digest of its calls (`reconciler.plan.review`); the merge
job plans again on main (`apply -f ... --reviewed DIGEST_OR_FILE`) and applies only when the
calls it would send now are those reviewed. Anything that changed in between (on the platform,
or on main: another pull request merged first) refuses the apply before any write, naming what
differs where the reviewed plan itself is given.
"""

from __future__ import annotations

import json
from pathlib import Path

from reconciler.credentials import FINGERPRINT_KEY_ENV
from reconciler.errors import ApplyRefused, PlanFileError, PlanShapeError, UsageError
from reconciler.plan.changes import Plan
from reconciler.plan.review import (
    Reviewed,
    differences,
    digest_of,
    is_digest,
    plan_mode,
    sent_calls,
)

_FRESH_REVIEW = (
    "plan again on main and have that plan reviewed (docs: guides/ci, 'Reviewed equals "
    "applied'); to apply it, pass its digest to --reviewed"
)


def reviewed_from(given: str) -> Reviewed:
    """`--reviewed`: a digest (`calls:v1:...`), or a file holding the reviewed plan (a saved
    plan from `plan --out`, or the JSON of `plan --format json`)."""
    if is_digest(given):
        return Reviewed(given.strip())
    path = Path(given)
    if not path.is_file():
        raise UsageError(
            f"--reviewed {given}: neither a digest (calls:v1:...) nor a file",
            hint="pass the digest the pull request's plan published, or its saved plan file",
        )
    return Reviewed.of_plan(read_plan(path, f"--reviewed {given}"))


def read_plan(path: Path, what: str) -> Plan:
    """The plan in a file: a saved plan (`plan --out`, its checksum checked) or the JSON of
    `plan --format json`. `what` names the file in messages (`--reviewed plan.json`)."""
    from reconciler.plan.json_form import plan_from_dict
    from reconciler.plan.planfile import PLAN_FILE_KIND, load_plan

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{what}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what}: a directory, not a plan file") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        raise UsageError(f"{what}: not a plan (not JSON text)") from None
    if isinstance(document, dict) and document.get("kind") == PLAN_FILE_KIND:
        return load_plan(path).plan
    try:
        return plan_from_dict(document)
    except PlanShapeError as error:
        raise PlanFileError(f"{what}: not a plan: {error.message}") from None


def check_reviewed(plan: Plan, reviewed: Reviewed) -> None:
    """Refuse `plan` unless it sends the calls reviewed. A plan with nothing to send passes:
    it applies nothing, reviewed or not."""
    if not plan.executable_changes:
        return
    if reviewed.mode == "keyed" and plan_mode(plan) != "keyed":
        raise ApplyRefused(
            f"the reviewed plan compared secrets by fingerprint, and {FINGERPRINT_KEY_ENV} is "
            "not set now; nothing was applied",
            hint=f"set the same {FINGERPRINT_KEY_ENV} for the merge's apply",
        )
    now = sent_calls(plan, fingerprints=reviewed.mode == "keyed")
    digest = digest_of(now, reviewed.mode)
    if digest == reviewed.digest:
        return
    detail = ""
    if reviewed.calls is not None:
        detail = ":\n  " + "\n  ".join(differences(reviewed.calls, now))
    raise ApplyRefused(
        "the plan made now is not the plan that was reviewed: the platform or the manifests "
        f"changed since the review (reviewed {reviewed.digest}, now {digest}); nothing was "
        f"applied{detail}",
        hint=_FRESH_REVIEW,
    )
