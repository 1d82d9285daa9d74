"""Saved plans bound to the platform they were made against.

`plan --out` writes a plan only when no error finding fails it, and records where it was made:
the base URL and the IDs of the projects it read. `apply PLANFILE` goes to that platform and
nowhere else: a base URL given to it must be the recorded one; with none given, the recorded
one is used only where the file cannot have been pointed elsewhere by whoever could edit it
(signed with the fingerprint key in use, or the built-in emulator on this machine), since the
command sends the API key and secret values there.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from reconciler.apply import check_saved_plan, unknown_secrets
from reconciler.credentials import FINGERPRINT_KEY_ENV
from reconciler.errors import ApplyRefused, PlanFileError, UsageError
from reconciler.manifest.model import Manifest
from reconciler.pipeline.observed import CallObserver
from reconciler.pipeline.planning import Connection, plan_manifest
from reconciler.plan.changes import Plan
from reconciler.plan.options import PlanOptions
from reconciler.plan.planfile import PlatformBinding, SavedPlan, plan_file_text
from reconciler.plan.secrets import resolve_ref
from reconciler.platform.client import PlatformClient

_REPLAN = "run `reconciler plan --out PLANFILE` again, review it, and apply the new plan"


def plan_file_content(
    plan: Plan,
    *,
    manifest_files: Sequence[str],
    connection: Connection,
    signing_key: bytes | None,
) -> str:
    """The text of the saved plan; refused while an error finding fails the plan, so no file
    that apply would take exists for a plan that plan itself fails."""
    failing = plan.failing_findings
    if failing:
        raise PlanFileError(
            f"not saving the plan: the built-in checks found {len(failing)} error(s) in it "
            "(listed with the plan); a plan they fail cannot be applied",
            hint="fix them in the manifests, or waive a rule on the object with its reason, "
            "then plan again",
        )
    binding = PlatformBinding(platform_name(connection.base_url), plan.workspace)
    return plan_file_text(
        plan, manifest_files=manifest_files, platform=binding, signing_key=signing_key
    )


def platform_name(base_url: str | None) -> str:
    """The base URL as a saved plan records and compares it: without a trailing slash, and the
    built-in emulator as `local:` with its state file's absolute path."""
    from reconciler.platform.connect import LOCAL_STATE_FILE, is_local, validate_base_url

    if base_url is None or not base_url.strip():
        return ""
    base_url = base_url.strip()
    if is_local(base_url):
        path = base_url.partition(":")[2] or str(LOCAL_STATE_FILE)
        return f"local:{os.path.abspath(path)}"
    return validate_base_url(base_url)


def saved_plan_connection(
    saved: SavedPlan, connection: Connection, fingerprint_key: bytes | None
) -> Connection:
    """The connection `apply PLANFILE` makes: to the platform the plan was made against."""
    binding = saved.platform
    if binding is None:
        raise PlanFileError(
            "this plan file does not record the platform it was made against (it was written "
            "by an older reconciler), so it cannot be applied safely",
            hint=_REPLAN,
        )
    signed = saved.signature is not None
    if signed and fingerprint_key is not None and not saved.signed_with(fingerprint_key):
        raise ApplyRefused(
            f"the plan file's signature does not match {FINGERPRINT_KEY_ENV}: it was edited "
            "after it was saved, or saved with another key; nothing was applied",
            hint=f"{_REPLAN} (with the same {FINGERPRINT_KEY_ENV} for plan and apply)",
        )
    if connection.base_url:
        given = platform_name(connection.base_url)
        if given != binding.base_url:
            raise ApplyRefused(
                f"this plan was made against {binding.base_url}, not {given}; a plan applies "
                "only to the platform whose state it read; nothing was applied",
                hint=f"{_REPLAN} against {given}",
            )
        return connection
    trusted = binding.base_url.startswith("local:") or (
        signed and fingerprint_key is not None  # verified above
    )
    if not trusted:
        raise UsageError(
            f"no base URL given; this plan was made against {binding.base_url}, which only a "
            f"plan file signed with {FINGERPRINT_KEY_ENV} may choose on its own (the command "
            "sends the API key there)",
            hint=f"pass --base-url {binding.base_url} (or set RECONCILER_BASE_URL) to apply it there",
        )
    return dataclasses.replace(connection, base_url=binding.base_url)


async def checked_saved_plan(
    saved: SavedPlan,
    manifest: Manifest,
    client: PlatformClient,
    *,
    fingerprint_key: bytes | None,
    allow_replace: bool,
    observer: CallObserver | None = None,
) -> Plan:
    """The saved plan, once a plan rebuilt now from its manifest proves it is still what the
    platform and the manifest give, with the findings and overrides of the checks now."""
    options = PlanOptions(
        targets=saved.plan.targets,
        max_deletes=saved.plan.max_deletes,
        allow_replace=allow_replace,
        fingerprint_key=fingerprint_key,
        unavailable_secrets=unknown_secrets(saved.plan),
    )
    current = await plan_manifest(manifest, client, options, observer=observer)
    assert saved.platform is not None  # saved_plan_connection refused it otherwise
    _check_same_workspace(saved.platform, current)
    check_saved_plan(saved.plan, current, resolve=resolve_ref, fingerprint_key=fingerprint_key)
    # what a change would remove that this reconciler does not know is taken from the plan
    # made now, not from the file (the same live state gives the same; an edit cannot hide it)
    removing = {change.address: change.unknown_removed for change in current.changes}
    return dataclasses.replace(
        saved.plan,
        changes=tuple(
            dataclasses.replace(c, unknown_removed=removing.get(c.address, ()))
            for c in saved.plan.changes
        ),
        findings=current.findings,
        overrides=current.overrides,
    )


def _check_same_workspace(binding: PlatformBinding, current: Plan) -> None:
    """A project the plan read must be the same object now: the same slug under another ID is
    another workspace (or the project was deleted and created again since)."""
    moved = sorted(
        f"{slug} ({binding.projects[slug]} in the plan, {current.workspace[slug]} now)"
        for slug in binding.projects.keys() & current.workspace.keys()
        if binding.projects[slug] != current.workspace[slug]
    )
    if moved:
        raise ApplyRefused(
            "this is not the workspace the plan was made against: projects "
            + ", ".join(moved)
            + " have other IDs here; nothing was applied",
            hint=_REPLAN,
        )
