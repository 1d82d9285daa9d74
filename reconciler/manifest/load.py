"""Reading manifest files: paths -> plain YAML data with a position for every node.

PyYAML's own composer is recursive (deep nesting crashes libyaml's bindings
outright), lets the last of two duplicate keys win and builds whatever tags
it is told to. So this module drives the event stream of the (C, when
available) parser itself with an explicit stack, and then turns the nodes into
plain dicts, lists and scalars, refusing what a manifest has no use for and
recording `path -> Position` for every key and value on the way.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from reconciler.manifest.model import Position
from reconciler.manifest.problems import ManifestInvalid, Path, Problem, format_path

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Far above any hand-written manifest; stops a mistaken `-f /var/log` early."""
MAX_ALIAS_EXPANSION = 100_000
"""Nodes that aliases may add beyond the file's own (the "billion laughs" guard)."""
MAX_DEPTH = 64
"""A manifest is about 12 levels deep; anything past this is garbage or an attack."""
MANIFEST_SUFFIXES = (".yaml", ".yml")

_PARSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML = "tag:yaml.org,2002:"
_MERGE_TAG = _YAML + "merge"
_SCALAR_TAGS = {_YAML + t for t in ("str", "int", "float", "bool", "null", "timestamp")}


@dataclass
class LoadedFile:
    """One manifest file: its data and where every key and value was written."""

    display: str
    directory: FsPath
    sha256: str
    data: dict[str, Any]
    values: dict[Path, Position] = field(default_factory=dict)
    keys: dict[Path, Position] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    """Key-level problems (duplicates, tags, non-string keys); the data skips those keys."""


class _Refused(Exception):
    """Stops reading one file; the problem is reported and the other files go on."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[FsPath], list[Problem]]:
    """`-f` arguments -> manifest files (a directory means every *.yaml/*.yml below it,
    leaving out hidden files and directories)."""
    files: list[FsPath] = []
    problems: list[Problem] = []
    if not paths:
        problems.append(Problem.for_file("-", "no manifest given: pass -f FILE or -f DIRECTORY"))
    for given in paths:
        path = FsPath(given)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.suffix in MANIFEST_SUFFIXES and p.is_file() and not _hidden(p, path)
            )
            if not found:
                problems.append(
                    Problem.for_file(str(given), "directory has no *.yaml or *.yml manifest files")
                )
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            problems.append(Problem.for_file(str(given), "no such file or directory"))
    unique = list(dict.fromkeys(files))
    return unique, problems


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
        except _Refused as refused:
            problems.append(refused.problem)
            continue
        loaded.append(result)
        problems.extend(result.problems)
    return loaded, problems


def load_file(path: FsPath) -> LoadedFile:
    """Read and parse one manifest; raise `ManifestInvalid` with what is wrong with it."""
    try:
        loaded = _load_file(path)
    except _Refused as refused:
        raise ManifestInvalid([refused.problem]) from None
    if loaded.problems:
        raise ManifestInvalid(loaded.problems)
    return loaded


def _load_file(path: FsPath) -> LoadedFile:
    display = str(path)
    raw = _read_bytes(path, display)
    text = _decode(raw, display)
    root = _compose_single_document(text, display)
    converter = _Converter(display)
    data = converter.convert(root, ())
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {_yaml_kind(data)}"
        raise _Refused(
            Problem.at(
                _position(root, display),
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
            raise _Refused(Problem.for_file(display, "not a regular file"))
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _Refused(
                Problem.for_file(
                    display,
                    f"file is {size} bytes, more than the {MAX_FILE_BYTES // (1024 * 1024)} MiB "
                    "a manifest may have: split it into several files",
                )
            )
        raw = path.read_bytes()
    except OSError as error:
        raise _Refused(Problem.for_file(display, f"cannot read: {error.strerror}")) from None
    if not raw.strip():
        raise _Refused(Problem.for_file(display, "file is empty; a manifest needs `version: 1`"))
    return raw


def _decode(raw: bytes, display: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        raise _Refused(
            Problem(
                display,
                line,
                column,
                "",
                f"not valid UTF-8 (byte 0x{raw[error.start]:02x} at offset {error.start}): "
                "save the file as UTF-8",
            )
        ) from None


def _compose_single_document(text: str, display: str) -> Node:
    documents = 0
    root: Node | None = None
    try:
        for document in _compose(text, display):
            documents += 1
            if documents > 1:
                raise _Refused(
                    Problem.at(
                        _position(document, display),
                        "",
                        "a second YAML document (`---`) in one file; put each part in its own "
                        "file and pass them all (or their directory) with -f",
                    )
                )
            root = document
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        reason = error.problem or error.context or "invalid YAML"
        raise _Refused(Problem(display, line, column, "", f"YAML syntax error: {reason}")) from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        raise _Refused(
            Problem(
                display,
                line,
                column,
                "",
                f"character U+{_code_point(error.character):04X} is not allowed in YAML "
                "(control characters cannot appear in a manifest)",
            )
        ) from None
    except yaml.YAMLError as error:
        raise _Refused(Problem.for_file(display, f"YAML error: {error}")) from None
    if root is None:
        raise _Refused(
            Problem.for_file(display, "file has no YAML document; it needs `version: 1`")
        )
    return root


def _compose(text: str, display: str) -> Iterator[Node]:
    """Build node trees from parser events with an explicit stack (no recursion)."""
    resolve = _cached_resolver()
    anchors: dict[str, Node] = {}
    stack: list[Node] = []
    pending_key: list[Node | None] = []

    def attach(node: Node) -> Node | None:
        if not stack:
            return node
        parent = stack[-1]
        if isinstance(parent, SequenceNode):
            parent.value.append(node)
        elif pending_key[-1] is None:
            pending_key[-1] = node
        else:
            parent.value.append((pending_key[-1], node))
            pending_key[-1] = None
        return None

    def register(anchor: str | None, node: Node) -> None:
        if anchor is not None:
            anchors[anchor] = node

    for event in yaml.parse(text, Loader=_PARSER):
        done: Node | None = None
        if isinstance(event, yaml.DocumentStartEvent):
            anchors.clear()
        elif isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(event.value, event.implicit)
            node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            register(event.anchor, node)
            done = attach(node)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise _Refused(
                    _mark_problem(display, event.start_mark, f"unknown alias *{event.anchor}")
                )
            done = attach(anchors[event.anchor])
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) >= MAX_DEPTH:
                raise _Refused(
                    _mark_problem(
                        display, event.start_mark, f"nested more than {MAX_DEPTH} levels deep"
                    )
                )
            is_map = isinstance(event, yaml.MappingStartEvent)
            kind = MappingNode if is_map else SequenceNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = Resolver.DEFAULT_MAPPING_TAG if is_map else Resolver.DEFAULT_SEQUENCE_TAG
            collection = kind(tag, [], event.start_mark, event.end_mark, event.flow_style)
            register(event.anchor, collection)
            attach(collection)
            stack.append(collection)
            pending_key.append(None)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            pending_key.pop()
            finished = stack.pop()
            if not stack:
                done = finished
        if done is not None:
            yield done


def _cached_resolver() -> Any:
    """The implicit tag of a plain scalar, cached: manifests repeat the same keys and values
    thousands of times, and resolving runs a handful of regexes each time."""
    resolver = Resolver()
    cache: dict[tuple[str, Any], str] = {}

    def resolve(value: str, implicit: Any) -> str:
        key = (value, tuple(implicit))
        tag = cache.get(key)
        if tag is None:
            tag = cache[key] = resolver.resolve(ScalarNode, value, implicit)
        return tag

    return resolve


def _mark_problem(display: str, mark: Any, message: str) -> Problem:
    return Problem(display, mark.line + 1, mark.column + 1, "", message)


def _position(node: Node, display: str) -> Position:
    return Position(display, node.start_mark.line + 1, node.start_mark.column + 1)


def _code_point(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character)


def _is_empty_scalar(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.value == "" and not node.style


def _yaml_kind(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


class _Converter:
    """Nodes -> plain data, recording positions and refusing what YAML allows but a
    manifest must not contain."""

    _constructor = SafeConstructor()

    def __init__(self, display: str) -> None:
        self.display = display
        self.values: dict[Path, Position] = {}
        self.keys: dict[Path, Position] = {}
        self.problems: list[Problem] = []
        self._converted = 0
        self._distinct: set[int] = set()
        self._active: set[int] = set()

    def convert(self, node: Node, path: Path) -> Any:
        self._count(node, path)
        position = _position(node, self.display)
        self.values[path] = position
        if id(node) in self._active:
            raise _Refused(Problem.at(position, path, "an alias refers to its own anchor"))
        self._active.add(id(node))
        try:
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
            if isinstance(node, SequenceNode):
                self._check_tag(node, _YAML + "seq", path)
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            return self._scalar(node, path)
        finally:
            self._active.discard(id(node))

    def _count(self, node: Node, path: Path) -> None:
        self._converted += 1
        self._distinct.add(id(node))
        if self._converted - len(self._distinct) > MAX_ALIAS_EXPANSION:
            raise _Refused(
                Problem.at(
                    _position(node, self.display),
                    path,
                    f"aliases expand to more than {MAX_ALIAS_EXPANSION} extra nodes "
                    "(a 'billion laughs' document?); refusing to expand it",
                )
            )

    def _check_tag(self, node: Node, expected: str, path: Path) -> bool:
        if node.tag == expected:
            return True
        self.problems.append(
            Problem.at(
                _position(node, self.display),
                path,
                f"unsupported YAML tag {node.tag!r}; a manifest uses plain YAML only "
                "(strings, numbers, booleans, null, lists, mappings)",
            )
        )
        return False

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any]:
        self._check_tag(node, _YAML + "map", path)
        explicit: dict[str, tuple[Position, Node]] = {}
        merge_sources: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merge_sources.append(value_node)
                continue
            key = self._key(key_node, path)
            if key is None:
                continue
            key_position = _position(key_node, self.display)
            if key in explicit:
                first = explicit[key][0]
                self.problems.append(
                    Problem.at(
                        key_position,
                        (*path, key),
                        f"duplicate key {key!r} (first at line {first.line}); YAML would "
                        "silently keep only the last one: remove or rename one of them",
                    )
                )
                continue
            explicit[key] = (key_position, value_node)
        result: dict[str, Any] = {}
        if merge_sources:
            result = self._merged(merge_sources, path)
            self.values[path] = _position(node, self.display)
        for key, (key_position, value_node) in explicit.items():
            self.keys[(*path, key)] = key_position
            result[key] = self.convert(value_node, (*path, key))
            if _is_empty_scalar(value_node):
                # `KEY:` with nothing after it: the key is the place to point at
                self.values[(*path, key)] = key_position
        return result

    def _merged(self, merge_sources: list[Node], path: Path) -> dict[str, Any]:
        """`<<: *base` or `<<: [*a, *b]`: the earlier source wins, explicit keys win over all.

        Sources are converted lowest priority first, so positions recorded by a
        winning source overwrite those of the sources it overrides."""
        mappings: list[Node] = []
        for source in merge_sources:
            mappings.extend(source.value if isinstance(source, SequenceNode) else [source])
        result: dict[str, Any] = {}
        for item in reversed(mappings):
            if not isinstance(item, MappingNode):
                self.problems.append(
                    Problem.at(
                        _position(item, self.display),
                        path,
                        "a merge key `<<` takes a mapping or a list of mappings (e.g. `<<: *base`)",
                    )
                )
                continue
            result.update(self.convert(item, path))
        return result

    def _key(self, node: Node, path: Path, *, report: bool = True) -> str | None:
        if isinstance(node, ScalarNode) and node.tag == _YAML + "str":
            return node.value
        if report:
            shown = node.value if isinstance(node, ScalarNode) else "a " + type(node).__name__
            self.problems.append(
                Problem.at(
                    _position(node, self.display),
                    path,
                    f"key {shown!r} is not a string (YAML reads it as "
                    f'{node.tag.removeprefix(_YAML)}); quote it, e.g. "{shown}":',
                )
            )
        return None

    def _scalar(self, node: Node, path: Path) -> Any:
        tag = node.tag
        if tag not in _SCALAR_TAGS:
            self._check_tag(node, _YAML + "str", path)
            return node.value
        if tag == _YAML + "str" or tag == _YAML + "timestamp":
            return node.value  # a date stays the text the user wrote
        try:
            if tag == _YAML + "null":
                return None
            if tag == _YAML + "bool":
                return self._constructor.construct_yaml_bool(node)
            if tag == _YAML + "int":
                return self._constructor.construct_yaml_int(node)
            return self._constructor.construct_yaml_float(node)
        except (ValueError, yaml.YAMLError):
            self.problems.append(
                Problem.at(
                    _position(node, self.display),
                    path,
                    f"{node.value!r} is not a valid {tag.removeprefix(_YAML)}",
                )
            )
            return node.value


__all__ = ["LoadedFile", "format_path", "load_file", "load_files", "read_files"]
