"""Several loaded files -> one document: projects and templates merged, positions kept.

The document also knows each managed environment of each app as the layers that end up under
it (`environments`; reconciler/manifest/templates.py finds them, layers.py merges them), which
the semantic rules and the model builder share, so both see the same effective settings and
can say which file and line each value came from, templates included.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

from reconciler.manifest.layers import Layered
from reconciler.manifest.load import LoadedFile
from reconciler.manifest.model import EnvironmentName, Position, SharedPosition
from reconciler.manifest.problems import ERROR, Path, Problem, Severity, format_path
from reconciler.manifest.schema import Locate
from reconciler.manifest.templates import USE, Expansion, expand, real_path, shared_source

__all__ = ["SHARED_BLOCKS", "Document", "Layered", "locator", "merge_files"]


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
    templates: dict[str, Any] = field(default_factory=dict)
    template_files: dict[str, LoadedFile] = field(default_factory=dict)
    expansion: Expansion = field(default_factory=Expansion)
    """Each environment's layers, and the uses of shared blocks their paths refer to."""
    _users_cache: dict[str, tuple[str, ...]] | None = field(default=None, repr=False)

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
        """Where the value at `path` was written (the nearest known ancestor if unknown).

        A path inside a use of a shared block is placed where the block (or the parameter's
        value) is written, as a `SharedPosition` naming the blocks it came through."""
        real = self.real(path)
        loaded = self._file_of(real)
        if loaded is None:
            return Position(self.files[0].display, 1, 1)
        return self._through(path, _nearest(loaded, real))

    def key_at(self, path: Path) -> Position:
        """Where the key naming `path` was written (its value's place for list items)."""
        real = self.real(path)
        loaded = self._file_of(real)
        if loaded is not None and real in loaded.keys:
            return self._through(path, loaded.position_of(loaded.keys[real]))
        return self.at(path)

    def real(self, path: Path) -> Path:
        """The path where the value at `path` is written (see templates.real_path)."""
        if not path or path[0] != USE:
            return path
        return real_path(self.expansion.uses, path)

    def _through(self, path: Path, position: Position) -> Position:
        if not path or path[0] != USE:
            return position
        sources = self.expansion.uses[int(path[1])].chain
        return SharedPosition(position.file, position.line, position.column, sources)

    def problem_at(
        self, path: Path, message: str, severity: Severity = ERROR, *, key: bool = False
    ) -> Problem:
        """A problem at `path`, shown at its real place; inside a shared block it names the
        app it was found for (`Problem.uses`), so one problem of a block many apps use is
        reported once, with them all."""
        position = self.key_at(path) if key else self.at(path)
        real = self.real(path)
        uses: tuple[str, ...] = ()
        if path and path[0] == USE and shared_source(real):
            uses = (self.expansion.uses[int(path[1])].app_address,)
        return Problem.at(position, real, message, severity, uses=uses)

    def with_users(self, problem: Problem) -> Problem:
        """A problem written in a shared block, naming the apps that use the block (a
        problem found for each use names its app already)."""
        if problem.uses or not problem.path:
            return problem
        parts = re.split(r"[.\[]", problem.path)
        for length in (1, 2, 3):  # appDefaults, templates.<name>, projects.<slug>.appDefaults
            users = self._users().get(".".join(parts[:length]))
            if users:
                return dataclasses.replace(problem, uses=users)
        return problem

    def _users(self) -> dict[str, tuple[str, ...]]:
        """Each shared block (as a manifest path) -> the apps that use it."""
        if self._users_cache is None:
            found: dict[str, dict[str, None]] = {}
            for use in self.expansion.uses:
                found.setdefault(format_path(use.source), {})[use.app_address] = None
            self._users_cache = {block: tuple(apps) for block, apps in found.items()}
        return self._users_cache

    def _file_of(self, path: Path) -> LoadedFile | None:
        if len(path) > 1 and path[0] == "projects":
            return self.project_files.get(str(path[1]))
        if len(path) > 1 and path[0] == "templates":
            return self.template_files.get(str(path[1]))
        if path and path[0] == "appDefaults":
            return self.block_files.get("appDefaults")
        return None

    def directory_of(self, position: Position) -> FsPath:
        return self.directories.get(position.file, FsPath.cwd())

    def environments(self, app_path: Path) -> list[tuple[EnvironmentName, Layered]]:
        """The managed environments of an app, each the layers that end up under it: written
        environments first, in their order; `defaults` (or a shared block with settings for
        both) makes both managed."""
        return self.expansion.environments.get(app_path, [])

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


SHARED_BLOCKS = ("prune", "checks", "limits", "appDefaults")
"""Top-level blocks about the whole workspace: any file may set one, and every file that does
must say the same, so no file's settings depend on which other files are loaded with it."""


def merge_files(files: list[LoadedFile]) -> tuple[Document, list[Problem]]:
    """The files as one document, and what is wrong with putting them together (a project or
    template defined twice, blocks that disagree, and the problems of using templates)."""
    document = Document(files=files)
    problems: list[Problem] = []
    for loaded in files:
        document.directories[loaded.display] = loaded.directory
        for name in SHARED_BLOCKS:
            problems.extend(_merge_block(document, loaded, name))
        problems.extend(_merge_named(document, loaded, "projects", "project"))
        problems.extend(_merge_named(document, loaded, "templates", "template"))
    document.expansion = expand(document)
    problems.extend(
        document.problem_at(path, message, severity, key=key)
        for path, message, severity, key in document.expansion.problems
    )
    return document, problems


def _merge_named(document: Document, loaded: LoadedFile, block: str, what: str) -> list[Problem]:
    """Each project (template) of a file into the document; one defined twice is a problem."""
    named = loaded.data.get(block)
    if not isinstance(named, dict):
        return []
    merged, files = (
        (document.projects, document.project_files)
        if block == "projects"
        else (document.templates, document.template_files)
    )
    problems = []
    for name, value in named.items():
        path: Path = (block, name)
        if name in merged:
            problems.append(
                Problem.at(
                    loaded.position_of(loaded.keys[path]),
                    path,
                    f"{what} {name!r} is also defined at {document.key_at(path)}; "
                    f"define each {what} in one file only",
                )
            )
            continue
        merged[name] = value
        files[name] = loaded
    return problems


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
