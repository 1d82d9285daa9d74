"""The manifests as every command reads them, today's and a git ref's."""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.manifest.model import ChecksSettings, Manifest


def load_manifest(paths: Sequence[str]) -> Manifest:
    """The manifest package's rules, and the warnings of the policy tests package about match
    members (which the manifest package, its sibling, does not import)."""
    from reconciler.manifest.validate import load_manifest as load
    from reconciler.policy_tests.lint import open_choice_warnings

    return load(paths, (open_choice_warnings,))


def checks_at_ref(paths: Sequence[str], ref: str) -> ChecksSettings:
    """The checks settings of the manifest the same paths held at git `ref` (a pull request's
    base); none where they held no valid manifest there, so that every override counts as new."""
    from reconciler.manifest.history import manifest_at

    base = manifest_at(paths, ref)
    return ChecksSettings() if base is None else base.checks
