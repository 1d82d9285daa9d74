"""Several loaded files -> one document: projects merged, positions kept.

Also `Layered`, the view of an environment through the app's `defaults`
(mappings deep-merge, lists and scalars are replaced, the environment wins),
shared by the semantic rules and the model builder so both see the same
effective settings and can say which file and line each value came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

from reconciler.manifest.load import LoadedFile
from reconciler.manifest.model import ENVIRONMENT_NAMES, EnvironmentName, Position
from reconciler.manifest.problems import Path, Problem
from reconciler.manifest.schema import Locate


@dataclass
class Document:
    """All files merged: `projects` in the order written, positions by path.

    Positions stay in the files that hold them (a large workspace has millions): a path
    under `projects.<slug>` is looked up in the file that defined that project."""

    files: list[LoadedFile]
    projects: dict[str, Any] = field(default_factory=dict)
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The workspace-wide blocks (`SHARED_BLOCKS`) by name, as the files agree on them
    (`normalised_block`)."""
    project_files: dict[str, LoadedFile] = field(default_factory=dict)
    directories: dict[str, FsPath] = field(default_factory=dict)
    block_files: dict[str, LoadedFile] = field(default_factory=dict)

    @property
    def prune(self) -> dict[str, Any]:
        return self.blocks.get("prune", {})

    def block_at(self, path: Path) -> Position:
        """Where a value under a workspace-wide block was written, in the first file setting it."""
        loaded = self.block_files.get(str(path[0]))
        return (
            _nearest(loaded, path) if loaded is not None else Position(self.files[0].display, 1, 1)
        )

    def at(self, path: Path) -> Position:
        """Where the value at `path` was written (the nearest known ancestor if unknown)."""
        loaded = self._file_of(path)
        if loaded is None:
            return Position(self.files[0].display, 1, 1)
        return _nearest(loaded, path)

    def key_at(self, path: Path) -> Position:
        """Where the key naming `path` was written (its value's place for list items)."""
        loaded = self._file_of(path)
        if loaded is not None and path in loaded.keys:
            return loaded.position_of(loaded.keys[path])
        return self.at(path)

    def _file_of(self, path: Path) -> LoadedFile | None:
        if len(path) > 1 and path[0] == "projects":
            return self.project_files.get(str(path[1]))
        return None

    def directory_of(self, position: Position) -> FsPath:
        return self.directories.get(position.file, FsPath.cwd())

    def apps(self) -> Iterator[tuple[Path, str, dict[str, Any]]]:
        """(path, slug, app) for every app whose data is a mapping."""
        for slug, project in self.projects.items():
            apps = project.get("apps") if isinstance(project, dict) else None
            if isinstance(apps, dict):
                for app_slug, app in apps.items():
                    if isinstance(app, dict):
                        yield ("projects", slug, "apps", app_slug), app_slug, app


def locator(loaded: LoadedFile) -> Locate:
    """Where a path of one file was written, for the schema's problems."""

    def locate(path: Path, of_key: bool) -> Position:
        if of_key and path in loaded.keys:
            return loaded.position_of(loaded.keys[path])
        return _nearest(loaded, path)

    return locate


def _nearest(loaded: LoadedFile, path: Path) -> Position:
    for end in range(len(path), -1, -1):
        place = loaded.values.get(path[:end])
        if place is not None:
            return loaded.position_of(place)
    return Position(loaded.display, 1, 1)


SHARED_BLOCKS = ("prune", "checks", "limits")
"""Top-level blocks about the whole workspace: any file may set one, and every file that does
must say the same, so no file's settings depend on which other files are loaded with it."""


def merge_files(files: list[LoadedFile]) -> tuple[Document, list[Problem]]:
    document = Document(files=files)
    problems: list[Problem] = []
    for loaded in files:
        document.directories[loaded.display] = loaded.directory
        for name in SHARED_BLOCKS:
            problems.extend(_merge_block(document, loaded, name))
        projects = loaded.data.get("projects")
        if not isinstance(projects, dict):
            continue
        for slug, project in projects.items():
            path: Path = ("projects", slug)
            if slug in document.projects:
                problems.append(
                    Problem.at(
                        loaded.position_of(loaded.keys[path]),
                        path,
                        f"project {slug!r} is also defined at {document.key_at(path)}; "
                        "define each project in one file only",
                    )
                )
                continue
            document.projects[slug] = project
            document.project_files[slug] = loaded
    return document, problems


def _merge_block(document: Document, loaded: LoadedFile, name: str) -> list[Problem]:
    block = loaded.data.get(name)
    if block is None:
        return []
    first_file = document.block_files.get(name)
    if first_file is None:
        document.block_files[name] = loaded
        document.blocks[name] = normalised_block(name, block) if isinstance(block, dict) else {}
        return []
    if normalised_block(name, block) == normalised_block(name, first_file.data.get(name)):
        return []
    first = first_file.position_of(first_file.values[(name,)])
    return [
        Problem.at(
            loaded.position_of(loaded.values[(name,)]),
            name,
            f"differs from the {name} settings at {first}; every file that sets "
            f"`{name}` must say the same (or set it in one file only)",
        )
    ]


def normalised_block(name: str, block: Any) -> Any:
    """What a workspace-wide block says, in one form, so that files agree on what they say
    rather than on how they write it: a check's setting written as a severity
    (`query-logging: error`) is the mapping it abbreviates (`{severity: error}`)."""
    if name != "checks" or not isinstance(block, dict):
        return block
    return {rule: {"severity": s} if isinstance(s, str) else s for rule, s in block.items()}


class Layered:
    """A mapping seen through layers (lowest priority first): `defaults`, then the environment."""

    def __init__(self, layers: list[tuple[dict[str, Any], Path]]) -> None:
        self.layers = layers

    @property
    def path(self) -> Path:
        return self.layers[-1][1]

    def names(self) -> list[str]:
        return list(dict.fromkeys(k for data, _ in self.layers for k in data))

    def top(self, key: str) -> tuple[Any, Path] | None:
        """The highest layer's value for `key`, and where it is, without merging."""
        for data, path in reversed(self.layers):
            if key in data:
                return data[key], (*path, key)
        return None

    def child(self, key: str) -> Layered | None:
        """`key` as a Layered mapping when the winning value is a mapping, else None."""
        found: list[tuple[dict[str, Any], Path]] = []
        for data, path in reversed(self.layers):
            if key not in data:
                continue
            if not isinstance(data[key], dict):
                break
            found.append((data[key], (*path, key)))
        return Layered(found[::-1]) if found else None

    def value(self, key: str) -> Any:
        """The merged value of `key` (mappings deep-merged)."""
        child = self.child(key)
        if child is not None:
            return {k: child.value(k) for k in child.names()}
        found = self.top(key)
        return None if found is None else found[0]


def environments(app_path: Path, app: dict[str, Any]) -> Iterator[tuple[EnvironmentName, Layered]]:
    """The managed environments of an app with `defaults` layered under each.

    Written environments first, in their order; `defaults` makes both managed."""
    envs = app.get("environments")
    envs = envs if isinstance(envs, dict) else {}
    defaults = app.get("defaults")
    names = [known for written in envs for known in ENVIRONMENT_NAMES if written == known]
    if isinstance(defaults, dict):
        names += [n for n in ENVIRONMENT_NAMES if n not in names]
    for name in names:
        layers: list[tuple[dict[str, Any], Path]] = []
        if isinstance(defaults, dict):
            layers.append((defaults, (*app_path, "defaults")))
        env = envs.get(name)
        if isinstance(env, dict):
            layers.append((env, (*app_path, "environments", name)))
        elif env is None and name in envs:
            layers.append(({}, (*app_path, "environments", name)))
        if layers:
            yield name, Layered(layers)
