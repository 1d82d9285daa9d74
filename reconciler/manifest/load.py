"""Reading manifest files: `-f` paths -> files -> plain YAML data with positions.

Owns everything about files (directories, sizes, encodings, digests, and where a manifest may
be read from); turning YAML text into data is yaml_nodes.py's job.

Manifests arrive in pull requests, so they are read under the rules `fromFile` secrets are read
under (`secret_sources.py`): only inside the repository, symbolic links resolved first (a link
`platform/env.yaml -> /proc/self/environ` or `-> ../.git/config` is refused, never read: its
keys and their positions would reach the output a pull request's comment shows), nothing under
`.git/`, only regular files. The repository is the git work tree holding the working directory
when a `-f` path is below it (the CI case: a checkout, `-f platform/`; a link committed in it
cannot move the root), else the one holding the path's directory, else that directory.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

from reconciler.manifest.model import Position
from reconciler.manifest.problems import ManifestInvalid, Path, Problem
from reconciler.manifest.secret_sources import repository_root
from reconciler.manifest.yaml_nodes import (
    Converter,
    Place,
    Refused,
    compose_single_document,
    node_position,
)

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Far above any hand-written manifest; stops a mistaken `-f /var/log` early."""
MANIFEST_SUFFIXES = (".yaml", ".yml")


@dataclass
class LoadedFile:
    """One manifest file: its data and where every key and value was written (as line and
    column: `position_of` makes the `Position`)."""

    display: str
    directory: FsPath
    sha256: str
    data: dict[str, Any]
    values: dict[Path, Place] = field(default_factory=dict)
    keys: dict[Path, Place] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    """Key-level problems (duplicates, tags, non-string keys); the data skips those keys."""

    def position_of(self, place: Place) -> Position:
        line, column = place
        return Position(self.display, line, column)


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[FsPath], list[Problem]]:
    """`-f` arguments -> manifest files (a directory means every *.yaml/*.yml below it,
    leaving out hidden files and directories), each inside its repository (see the module)."""
    files: list[FsPath] = []
    problems: list[Problem] = []
    if not paths:
        problems.append(Problem.for_file("-", "no manifest given: pass -f FILE or -f DIRECTORY"))
    for given in paths:
        path = FsPath(given)
        root = manifests_root(path)
        outside = _outside(path, root)
        if outside is not None and (path.is_dir() or path.exists()):
            problems.append(Problem.for_file(str(given), outside))
        elif path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.suffix in MANIFEST_SUFFIXES and p.is_file() and not _hidden(p, path)
            )
            if not found:
                problems.append(
                    Problem.for_file(str(given), "directory has no *.yaml or *.yml manifest files")
                )
            for file in found:
                refused = _outside(file, root)
                if refused is None:
                    files.append(file)
                else:
                    problems.append(Problem.for_file(str(file), refused))
        elif path.exists():
            files.append(path)
        else:
            problems.append(Problem.for_file(str(given), "no such file or directory"))
    unique = list(dict.fromkeys(files))
    return unique, problems


def manifests_root(path: FsPath) -> FsPath:
    """The repository a `-f` path's manifests must stay in (see the module), resolved."""
    given = FsPath(os.path.abspath(path))
    working = FsPath(os.path.abspath(os.getcwd()))
    if given == working or working in given.parents:
        return repository_root(working)
    return repository_root(given.parent)


def _outside(path: FsPath, root: FsPath) -> str | None:
    """Why `path` may not be read as a manifest (it, or a link on its way, leads out of the
    repository or into `.git/`), or None."""
    target = FsPath(os.path.realpath(path))
    where = f"the repository {root}" if os.path.lexists(root / ".git") else f"{root}"
    if target != root and root not in target.parents:
        return (
            f"leads outside {where} (through a symbolic link): manifests are read only inside "
            "it, so that a pull request cannot make reconciler read other files; put the "
            "manifest itself there"
        )
    if ".git" in target.relative_to(root).parts:
        return (
            "leads into .git/, which holds git's own data (remote URLs can carry tokens), not "
            "manifests: manifests are read only outside it"
        )
    return None


def _hidden(path: FsPath, root: FsPath) -> bool:
    """Below a directory, dot-directories (.git, .github workflows, ...) hold no manifests."""
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def load_files(paths: Sequence[str | os.PathLike[str]]) -> list[LoadedFile]:
    """Read and parse every manifest; raise `ManifestInvalid` listing every file problem."""
    loaded, problems = read_files(paths)
    if problems:
        raise ManifestInvalid(problems)
    return loaded


def read_files(
    paths: Sequence[str | os.PathLike[str]],
) -> tuple[list[LoadedFile], list[Problem]]:
    """Every file that could be read, and every problem met on the way.

    A file with only key-level problems (a duplicate key, a tag) is still returned,
    so schema and semantic rules can report the rest of what is wrong with it."""
    try:
        files, problems = expand_paths(paths)
    except OSError as error:
        name = error.filename or "-"
        return [], [Problem.for_file(str(name), f"cannot read: {error.strerror}")]
    loaded: list[LoadedFile] = []
    for path in files:
        try:
            result = _load_file(path)
        except Refused as refused:
            problems.append(refused.problem)
            continue
        loaded.append(result)
        problems.extend(result.problems)
    return loaded, problems


def load_file(path: FsPath) -> LoadedFile:
    """Read and parse one manifest; raise `ManifestInvalid` with what is wrong with it."""
    try:
        loaded = _load_file(path)
    except Refused as refused:
        raise ManifestInvalid([refused.problem]) from None
    if loaded.problems:
        raise ManifestInvalid(loaded.problems)
    return loaded


def _load_file(path: FsPath) -> LoadedFile:
    display = str(path)
    raw = _read_bytes(path, display)
    text = _decode(raw, display)
    root = compose_single_document(text, display)
    converter = Converter(display)
    data = converter.convert(root, ())
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {_yaml_kind(data)}"
        raise Refused(
            Problem.at(
                node_position(root, display),
                "",
                f"the document is {kind}; a manifest is a mapping starting with `version: 1`",
            )
        )
    return LoadedFile(
        display=display,
        directory=path.resolve().parent,
        sha256=hashlib.sha256(raw).hexdigest(),
        data=data,
        values=converter.values,
        keys=converter.keys,
        problems=converter.problems,
    )


def _read_bytes(path: FsPath, display: str) -> bytes:
    try:
        if not path.is_file():
            raise Refused(Problem.for_file(display, "not a regular file"))
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise Refused(
                Problem.for_file(
                    display,
                    f"file is {size} bytes, more than the {MAX_FILE_BYTES // (1024 * 1024)} MiB "
                    "a manifest may have: split it into several files",
                )
            )
        raw = path.read_bytes()
    except OSError as error:
        raise Refused(Problem.for_file(display, f"cannot read: {error.strerror}")) from None
    if not raw.strip():
        raise Refused(Problem.for_file(display, "file is empty; a manifest needs `version: 1`"))
    return raw


def _decode(raw: bytes, display: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise Refused(
            Problem.at(
                Position(display, line, column),
                "",
                f"not valid UTF-8 (byte 0x{raw[error.start]:02x} at offset {error.start}): "
                "save the file as UTF-8",
            )
        ) from None


def _yaml_kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


__all__ = ["LoadedFile", "load_file", "load_files", "read_files"]
