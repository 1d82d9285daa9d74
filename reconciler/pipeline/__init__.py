"""The review loop's one sequence: manifests + platform + options -> a checked plan -> apply.

`plan`, `apply -f` and `apply PLANFILE` assemble their plan here and nowhere else, so the plan a
pull request shows and the plan a merge applies come from the same steps: the model and its
warnings, the live read and the diff (reconciler/plan), the findings of every built-in check,
static and plan-time (reconciler/checks), the overrides of the checks, and the notes. Every path
that writes passes `raise_if_unsafe` first (error findings, limits, replaces, secrets), and a
saved plan is held to the platform it was made against. The CLI parses options, calls these
steps and renders what they return; nothing here prints.
"""

from __future__ import annotations

from reconciler.pipeline.inputs import checks_at_ref, load_manifest
from reconciler.pipeline.observed import CallObserver
from reconciler.pipeline.planning import Connection, check_plan, connected, plan_manifest
from reconciler.pipeline.reviewed import check_reviewed, read_plan, reviewed_from
from reconciler.pipeline.safety import DEFAULT_MAX_DELETES, ApplyLimits, raise_if_unsafe
from reconciler.pipeline.saved import (
    checked_saved_plan,
    plan_file_content,
    platform_name,
    saved_plan_connection,
)

__all__ = [
    "DEFAULT_MAX_DELETES",
    "ApplyLimits",
    "CallObserver",
    "Connection",
    "check_plan",
    "check_reviewed",
    "checked_saved_plan",
    "checks_at_ref",
    "connected",
    "load_manifest",
    "plan_file_content",
    "plan_manifest",
    "platform_name",
    "raise_if_unsafe",
    "read_plan",
    "reviewed_from",
    "saved_plan_connection",
]
