"""Warnings about match members whose outcome depends on a choice the platform API spec leaves
open (`choices`): the manifest's validation calls `open_choice_warnings` for every member
(the CLI passes it to `load_manifest`), so a user learns that another gateway's reading of the
spec would decide such requests differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.diagnostics import WARNING, Diagnostic
from reconciler.policy_tests.choices import METHOD_CASE, RANGE_HOST_BITS
from reconciler.policy_tests.dependences import choices_affecting

# Warned about by reconciler/manifest/policy_rules.py already, in words of its own.
_WARNED_BY_THE_MANIFEST = frozenset({METHOD_CASE.key, RANGE_HOST_BITS.key})


def open_choice_warnings(kind: str, member: Mapping[str, Any]) -> list[Diagnostic]:
    return [
        Diagnostic(
            WARNING,
            "the outcome depends on how the gateway reads what the platform API leaves open: "
            f"{dependence}; reconciler test assumes that answer",
        )
        for dependence in choices_affecting(kind, member)
        if dependence.choice.key not in _WARNED_BY_THE_MANIFEST
    ]
