"""The manifest front end: files -> loaded YAML -> schema -> semantic rules -> model.

`load_manifest` is what every command calls. It reports every problem it can
find in one go (schema and semantic rules both run, on every file), sorted by
place, and only builds the model when there is no error. Warnings do not stop
it: they travel on the model (`Manifest.warnings`) for the commands to print.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from reconciler.collector import collector_paused
from reconciler.manifest.build import build_manifest
from reconciler.manifest.document import Document, locator, merge_files
from reconciler.manifest.load import read_files
from reconciler.manifest.model import Manifest
from reconciler.manifest.policy_test_rules import MemberCheck
from reconciler.manifest.problems import ManifestInvalid, Problem, split_by_severity
from reconciler.manifest.schema import schema_problems
from reconciler.manifest.semantic import semantic_problems

__all__ = ["ManifestInvalid", "Problem", "check_manifest", "load_manifest"]


def load_manifest(
    paths: Sequence[str | Path], member_checks: Sequence[MemberCheck] = ()
) -> Manifest:
    """Load and validate manifests; raise `ManifestInvalid` listing every error.

    The manifest returned carries its warnings in `warnings`, sorted by place. `member_checks`
    add warnings about policy match members (the CLI passes those of the layers above)."""
    with collector_paused():
        document, warnings = check_manifest(paths, member_checks)
        manifest = build_manifest(document, base_dir=_base_dir(paths))
        return dataclasses.replace(manifest, warnings=warnings)


def check_manifest(
    paths: Sequence[str | Path], member_checks: Sequence[MemberCheck] = ()
) -> tuple[Document, tuple[Problem, ...]]:
    """Everything `load_manifest` checks: the merged document and its warnings when there
    is no error, else `ManifestInvalid` with the errors (and the warnings found on the way)."""
    files, problems = read_files(paths)
    if not files:
        raise ManifestInvalid(problems)
    for loaded in files:
        problems.extend(schema_problems(loaded.data, locator(loaded)))
    document, merge_problems = merge_files(files)
    problems = [document.with_users(problem) for problem in problems]
    problems.extend(merge_problems)
    problems.extend(semantic_problems(document, member_checks))
    errors, warnings = split_by_severity(problems)
    if errors:
        raise ManifestInvalid(errors, warnings)
    return document, tuple(warnings)


def _base_dir(paths: Sequence[str | Path]) -> str:
    """The directory the first `-f` names (or holds the first file): relative paths start there."""
    first = Path(paths[0])
    return str(first if first.is_dir() else first.parent or Path("."))
