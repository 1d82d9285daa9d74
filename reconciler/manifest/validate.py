"""The manifest front end: files -> loaded YAML -> schema -> semantic rules -> model.

`load_manifest` is what every command calls. It reports every problem it can
find in one go (schema and semantic rules both run, on every file), sorted by
place, and only builds the model when there is none.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from reconciler.manifest.build import build_manifest
from reconciler.manifest.document import Document, locator, merge_files
from reconciler.manifest.load import read_files
from reconciler.manifest.model import Manifest
from reconciler.manifest.problems import ManifestInvalid, Problem
from reconciler.manifest.schema import schema_problems
from reconciler.manifest.semantic import semantic_problems

__all__ = ["ManifestInvalid", "Problem", "check_manifest", "load_manifest"]


def load_manifest(paths: Sequence[str | Path]) -> Manifest:
    """Load and validate manifests; raise `ManifestInvalid` listing every problem."""
    with _without_gc_pauses():
        document = check_manifest(paths)
        return build_manifest(document, base_dir=_base_dir(paths))


@contextmanager
def _without_gc_pauses() -> Iterator[None]:
    """Loading creates a few hundred thousand long-lived, acyclic objects for a large
    workspace; the cyclic collector would rescan them over and over (measured: more than
    half of the load time for 2,000 apps). Nothing here needs it, so it waits."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_manifest(paths: Sequence[str | Path]) -> Document:
    """Everything `load_manifest` checks, returning the merged document when valid."""
    files, problems = read_files(paths)
    if not files:
        raise ManifestInvalid(problems)
    for loaded in files:
        locate = locator(loaded.values, loaded.keys, loaded.display)
        problems.extend(schema_problems(loaded.data, locate))
    document, merge_problems = merge_files(files)
    problems.extend(merge_problems)
    problems.extend(semantic_problems(document))
    if problems:
        raise ManifestInvalid(problems)
    return document


def _base_dir(paths: Sequence[str | Path]) -> str:
    """The directory the first `-f` names (or holds the first file): relative paths start there."""
    first = Path(paths[0])
    return str(first if first.is_dir() else first.parent or Path("."))
