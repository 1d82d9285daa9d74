"""The manifests as a git ref had them, and which projects differ since.

The manifests of the ref are written out of git (`git archive`) into a temporary directory
with the repository's layout and loaded there exactly as today's are, so a project counts as
changed when its merged model changed: moving a project to another file, re-indenting it or
writing `1.0` for `1` changes nothing; an edit to a YAML anchor it uses, or to a workspace-wide
block (`prune`, `checks`, `limits`), changes it.

A `fromFile` secret is part of what a project sends, but the model holds only its path: a file
whose content differs at the ref from the work tree's (or that one side lacks) changes every
project that reads it, compared by git object IDs (so `.gitattributes` filters apply alike).
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconciler.errors import GitRefError
from reconciler.manifest.model import FromFile, Manifest, Position, Project, listed
from reconciler.manifest.validate import ManifestInvalid, load_manifest


def changed_projects(manifest: Manifest, paths: Sequence[str], ref: str) -> list[str]:
    """Slugs of today's projects whose model differs from the one at `ref` (new ones too), or
    that read a `fromFile` file whose content differs there."""
    root = _repository_root(Path(paths[0]))
    commit = _commit(root, ref)
    before = _manifest_at(root, commit, paths)
    if before is None or _workspace_settings(before) != _workspace_settings(manifest):
        return [project.slug for project in manifest.projects]
    old = {project.slug: _project_view(before, project) for project in before.projects}
    changed_files = _changed_files(root, commit, _files_read(manifest))
    return [
        p.slug
        for p in manifest.projects
        if old.get(p.slug) != _project_view(manifest, p)
        or not changed_files.isdisjoint(_files_read_by(p))
    ]


def manifest_at(paths: Sequence[str], ref: str) -> Manifest | None:
    """The manifest the same `-f` paths named at `ref`; None when they held none there or
    it was invalid (then every project counts as changed)."""
    root = _repository_root(Path(paths[0]))
    return _manifest_at(root, _commit(root, ref), paths)


def _manifest_at(root: Path, commit: str, paths: Sequence[str]) -> Manifest | None:
    relative = [_inside(root, path) for path in paths]
    with tempfile.TemporaryDirectory(prefix="reconciler-ref-") as scratch:
        present = [rel for rel in relative if _extract(root, commit, rel, Path(scratch))]
        if not present:
            return None
        try:
            return load_manifest([Path(scratch, rel) for rel in present])
        except ManifestInvalid:
            return None


def comparable(value: Any) -> Any:
    """`value` without what does not belong to the model's meaning: positions (fields that do
    not compare) and where a checkout puts a `fromFile` (only its declared path counts)."""
    if isinstance(value, Position):
        return None  # some sources keep theirs as a compared field
    if isinstance(value, FromFile):
        return ("fromFile", value.declared)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(
            (f.name, comparable(getattr(value, f.name)))
            for f in dataclasses.fields(value)
            if f.compare
        )
    if isinstance(value, Mapping):
        return tuple(sorted((key, comparable(item)) for key, item in value.items()))
    if isinstance(value, tuple | list):
        return tuple(comparable(item) for item in value)
    return value


def _workspace_settings(manifest: Manifest) -> Any:
    checks = manifest.checks
    return comparable((manifest.prune, checks.rules, checks.limits))


def _project_view(manifest: Manifest, project: Project) -> Any:
    """The project with the waivers and policy tests on it and below it."""
    checks = manifest.checks
    waivers = {scope: w for scope, w in checks.waivers.items() if scope[0] == project.slug}
    tested = sorted(scope for scope in checks.tested_environments if scope[0] == project.slug)
    return comparable((project, waivers, tested))


def _files_read_by(project: Project) -> set[str]:
    """The `fromFile` paths (as resolved today) the project's variables read."""
    return {
        variable.source.path
        for app in listed(project.apps)
        for environment in app.environments
        for variable in listed(environment.variables)
        if isinstance(variable.source, FromFile)
    }


def _files_read(manifest: Manifest) -> set[str]:
    return set().union(*(_files_read_by(project) for project in manifest.projects))


def _changed_files(root: Path, commit: str, files: set[str]) -> set[str]:
    """Of `files` (absolute paths), those whose git object at `commit` differs from the work
    tree's: changed, added or removed. A file outside the repository cannot be compared and
    counts as changed."""
    inside = {path: Path(path).relative_to(root).as_posix() for path in files if _under(root, path)}
    changed = set(files) - set(inside)
    if not inside:
        return changed
    listing = _git(root, "ls-tree", "-z", "--full-tree", commit, "--", *inside.values())
    at_ref = {}
    for entry in listing.decode(errors="surrogateescape").split("\0"):
        if entry:
            meta, _, name = entry.partition("\t")
            at_ref[name] = meta.split()[2]
    present = [path for path in inside if Path(path).is_file()]
    hashed = _git(root, "hash-object", "--", *present).decode().split() if present else []
    now = {inside[path]: oid for path, oid in zip(present, hashed, strict=True)}
    changed.update(path for path, name in inside.items() if at_ref.get(name) != now.get(name))
    return changed


def _under(root: Path, path: str) -> bool:
    return Path(path).is_relative_to(root)


def _git(root: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except OSError as error:
        raise GitRefError(f"cannot run git: {error.strerror}") from None
    if done.returncode != 0:
        raise GitRefError(done.stderr.decode(errors="replace").strip() or "git failed")
    return done.stdout


def _repository_root(path: Path) -> Path:
    start = path if path.is_dir() else path.parent
    try:
        top = _git(start.resolve(), "rev-parse", "--show-toplevel")
    except GitRefError:
        raise GitRefError(
            f"{path} is not in a git repository; --changed-since compares with a git ref"
        ) from None
    return Path(top.decode().strip()).resolve()


def _inside(root: Path, path: str) -> Path:
    resolved = Path(path).resolve()
    if not resolved.is_relative_to(root):
        raise GitRefError(f"{path} is outside the git repository {root} of the first manifest")
    return resolved.relative_to(root)


def _commit(root: Path, ref: str) -> str:
    if ref.startswith("-"):
        raise GitRefError(f"{ref!r} is not a git ref")
    try:
        return (
            _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
            .decode()
            .strip()
        )
    except GitRefError:
        raise GitRefError(
            f"git ref {ref!r} does not exist in {root}",
            hint="fetch it first (in GitHub Actions: actions/checkout with fetch-depth: 0)",
        ) from None


def _extract(root: Path, commit: str, relative: Path, into: Path) -> bool:
    """Write `relative` (a file or a directory) as of `commit` below `into`; False when the
    commit does not have it."""
    spec = relative.as_posix() or "."
    try:
        _git(root, "cat-file", "-e", f"{commit}:{spec}" if spec != "." else commit)
    except GitRefError:
        return False
    archive = _git(root, "archive", "--format=tar", commit, "--", spec)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return True
