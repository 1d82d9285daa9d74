"""Plan rendering: text for terminals, JSON for machines, markdown for pull requests.

Each format lives in its own module; this one is the stable entry point the
CLI and apply import.
"""

from __future__ import annotations

import json

from reconciler.escaping import escaped_json
from reconciler.plan.changes import Plan
from reconciler.plan.json_form import plan_to_dict
from reconciler.plan.secret_guard import check_no_plain_secrets
from reconciler.report.plan_markdown import render_markdown
from reconciler.report.plan_text import render_text

__all__ = ["plan_to_dict", "render_json", "render_markdown", "render_text"]


def render_json(plan: Plan) -> str:
    """The documented machine format (docs/reference/plan-json.md), keys sorted so diffs of it are reviewable.

    Raises `PlainSecretError` rather than print a plan that holds a write-only value.
    """
    check_no_plain_secrets(plan)
    return dump_json(plan_to_dict(plan))


def dump_json(data: object) -> str:
    """JSON as people read it (non-ASCII as written), but for what would not show as itself
    (a bidirectional control, a zero-width character in a name the manifest wrote): escaped."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return escaped_json(text) + "\n"
