"""YAML text -> plain data, with a position for every key and value.

PyYAML's own composer is recursive (deep nesting crashes libyaml's bindings
outright), lets the last of two duplicate keys win and builds whatever tags
it is told to. So this module drives the event stream of the (C, when
available) parser itself with an explicit stack, then turns the nodes into
plain dicts, lists and scalars, refusing what a manifest has no use for and
recording `path -> (line, column)` for every key and value on the way. Its nodes
hold a line and column rather than PyYAML's `Mark` objects, and each part of
the tree is let go once converted, so a large manifest's memory is about its
data and positions, not three copies of it.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from reconciler.manifest.model import Position
from reconciler.manifest.problems import Path, Problem

MAX_ALIAS_EXPANSION = 100_000
"""Nodes that aliases may add beyond the file's own (the "billion laughs" guard)."""
MAX_DEPTH = 64
"""A manifest is about 12 levels deep; anything past this is garbage or an attack."""
_PARSER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
LARGEST_NUMBER = sys.float_info.max
"""Integers beyond it are refused while loading: no float holds them, so JSON readers (the
platform's, and the model's float() of a vCpus) cannot read them as numbers. (A smaller
integer may still stand for a variable's text: `ID: 123456789012345678901` is taken as is.)"""
_YAML = "tag:yaml.org,2002:"
_MERGE_TAG = _YAML + "merge"
_SCALAR_TAGS = {_YAML + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_PLAIN_INTEGER = re.compile(r"-?[1-9][0-9]*|0")
_UNCLEAR_FLOAT_MARKS = ("_", ":")
"""YAML 1.1 drops underscores in floats and reads `1:30.5` in base 60."""
Place = tuple[int, int]
"""(line, column), 1-based, in the file being read: a large manifest has a few hundred
thousand, and a tuple costs a small part of what a `Position` (with its file) costs to make."""


class RefusedNumber(str):
    """The text of a number the loader refused (too large, or not finite), its problem already
    reported: kept as text, so no field takes it, and the schema says nothing more about it."""


@dataclass(frozen=True)
class NonDecimalNumber:
    """A number YAML 1.1 reads from text that is not plain decimal: `01234` is octal 668,
    `0x1F` 31, `0b101` 5, `1:30` base-60 90, `1_000` 1000, `+5` 5.

    Such text rarely means that number: `01234` is a ZIP code, `1:30` a time, `16:9` a ratio,
    and YAML 1.2 tools (editors among them) read `010` as ten. It is kept apart from int,
    float and str, so every typed field refuses it (the schema's messages say how to write
    what was meant) and no such value ever becomes text or a setting silently."""

    text: str
    value: int | float

    def reading(self) -> str:
        """How YAML 1.1 reads the text: 'an octal number (668)', 'the number 5 (...)'."""
        digits = self.text.lstrip("+-")
        number = str(self.value)
        if ":" in digits:
            return f"a base-60 number ({number})"
        if digits.startswith("0b"):
            return f"a binary number ({number})"
        if digits.startswith("0x"):
            return f"a hexadecimal number ({number})"
        if self.is_octal:
            return f"an octal number ({number})"
        if "_" in digits:
            return f"the number {number} (underscores are dropped)"
        if self.text.startswith("+"):
            return f"the number {number} (the + sign is dropped)"
        return f"the number {number}"

    @property
    def is_octal(self) -> bool:
        digits = self.text.lstrip("+-")
        prefixed = digits[:2] in ("0b", "0x")
        return isinstance(self.value, int) and len(digits) > 1 and digits[0] == "0" and not prefixed

    def as_decimal_digits(self) -> str:
        """`0512` -> `512`: what a leading zero was most likely meant to be."""
        sign = "-" if self.text.startswith("-") else ""
        return sign + (self.text.lstrip("+-").replace("_", "").lstrip("0") or "0")


@dataclass(frozen=True)
class Yaml11Boolean:
    """`yes`, `no`, `on`, `off` (in any of YAML 1.1's spellings): booleans to YAML 1.1 (and so to
    PyYAML), but text to YAML 1.2, which keeps only `true` and `false`.

    Editors read manifests as YAML 1.2, so `deleteProtection: yes` is an error there while YAML 1.1
    would quietly make it true. Kept apart from bool and str, like NonDecimalNumber, every typed
    field refuses it: a boolean field asks for true or false, a text field for quotes."""

    text: str
    value: bool


class FloatAsWritten(float):
    """A float that remembers its text, so a message can quote back `1.10` rather than
    the `1.1` YAML made of it."""

    text: str

    def __new__(cls, value: float, text: str) -> FloatAsWritten:
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __reduce__(self) -> tuple[type[FloatAsWritten], tuple[float, str]]:
        # copy and pickle would otherwise call FloatAsWritten(value) without the text
        return FloatAsWritten, (float(self), self.text)


class Refused(Exception):
    """Stops reading one file; the problem is reported and the other files go on."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class SyntaxRefused(Refused):
    """The YAML parser's own refusal (syntax, or a limit of the parser itself)."""


class TooDeep(Refused):
    """Collections nested past MAX_DEPTH."""


SCALAR, SEQUENCE, MAPPING = "scalar", "sequence", "mapping"


class Node:
    """One YAML node, with only what conversion needs: PyYAML's nodes keep two `Mark` objects
    each, which made the node tree of a large manifest ten times its plain data."""

    __slots__ = ("anchored", "kind", "place", "seen", "style", "tag", "value")

    def __init__(
        self, kind: str, tag: str, value: Any, place: Place, style: str | None = None
    ) -> None:
        self.kind = kind
        self.tag = tag
        self.value = value  # text; a list of nodes; a list of (key, value) node pairs
        self.place = place  # 1-based, as positions are; shared with the position maps
        self.style = style
        self.seen = False  # converted once already (reached again only through an alias)
        self.anchored = False  # has an anchor, so an alias may convert it (and all below) again


def compose_single_document(text: str, display: str) -> Node:
    try:
        return _single_document(text, display, _PARSER)
    except SyntaxRefused as refused:
        if _PARSER is yaml.SafeLoader:
            raise
        # libyaml has limits of its own that fire before ours, with its own message and
        # position (PyYAML 6.0.4's scanner refuses 1,000 flow levels while it looks ahead for
        # keys, so the depth limit below is never reached). The pure-Python parser reads
        # lazily and has no such limit: where it meets the depth limit, that is the answer,
        # whichever PyYAML is installed; any other syntax error stays the C parser's.
        try:
            _single_document(text, display, yaml.SafeLoader)
        except TooDeep as too_deep:
            raise too_deep from None
        except Refused:
            pass
        raise refused from None


def _single_document(text: str, display: str, parser: Any) -> Node:
    documents = 0
    root: Node | None = None
    try:
        for document in _compose(text, display, parser):
            documents += 1
            if documents > 1:
                raise Refused(
                    Problem.at(
                        node_position(document, display),
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
        raise SyntaxRefused(
            Problem.at(Position(display, line, column), "", f"YAML syntax error: {reason}")
        ) from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        raise Refused(
            Problem.at(
                Position(display, line, column),
                "",
                f"character U+{_code_point(error.character):04X} is not allowed in YAML "
                "(control characters cannot appear in a manifest)",
            )
        ) from None
    except yaml.YAMLError as error:
        raise Refused(Problem.for_file(display, f"YAML error: {error}")) from None
    if root is None:
        raise Refused(Problem.for_file(display, "file has no YAML document; it needs `version: 1`"))
    return root


def _compose(text: str, display: str, parser: Any) -> Iterator[Node]:
    """Build node trees from parser events with an explicit stack (no recursion)."""
    resolve = _cached_resolver()
    anchors: dict[str, Node] = {}
    stack: list[Node] = []
    pending_key: list[Node | None] = []

    def attach(node: Node) -> Node | None:
        if not stack:
            return node
        parent = stack[-1]
        if parent.kind == SEQUENCE:
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
            node.anchored = True

    for event in yaml.parse(text, Loader=parser):
        done: Node | None = None
        if isinstance(event, yaml.DocumentStartEvent):
            anchors.clear()
        elif isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(event.value, event.implicit)
            node = Node(SCALAR, tag, event.value, _place(event), event.style)
            register(event.anchor, node)
            done = attach(node)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise Refused(
                    _mark_problem(display, event.start_mark, f"unknown alias *{event.anchor}")
                )
            done = attach(anchors[event.anchor])
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) >= MAX_DEPTH:
                raise TooDeep(
                    _mark_problem(
                        display, event.start_mark, f"nested more than {MAX_DEPTH} levels deep"
                    )
                )
            is_map = isinstance(event, yaml.MappingStartEvent)
            tag = event.tag
            if tag is None or tag == "!":
                tag = Resolver.DEFAULT_MAPPING_TAG if is_map else Resolver.DEFAULT_SEQUENCE_TAG
            collection = Node(MAPPING if is_map else SEQUENCE, tag, [], _place(event))
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
            # unannotated in types-PyYAML
            tag = cache[key] = resolver.resolve(ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
        return tag

    return resolve


def _place(event: yaml.Event) -> Place:
    """Where an event starts (the parser marks every event it makes)."""
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def _mark_problem(display: str, mark: Any, message: str) -> Problem:
    return Problem.at(Position(display, mark.line + 1, mark.column + 1), "", message)


def node_position(node: Node, display: str) -> Position:
    line, column = node.place
    return Position(display, line, column)


def _code_point(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character)


def _is_empty_scalar(node: Node) -> bool:
    return node.kind == SCALAR and node.value == "" and not node.style


class Converter:
    """Nodes -> plain data, recording positions and refusing what YAML allows but a
    manifest must not contain."""

    _constructor = SafeConstructor()

    def __init__(self, display: str) -> None:
        self.display = display
        self.values: dict[Path, Place] = {}
        self.keys: dict[Path, Place] = {}
        self.problems: list[Problem] = []
        self._extra = 0
        self._active: set[int] = set()
        self._anchored_active = 0  # anchored nodes among those being converted

    def convert(self, node: Node, path: Path) -> Any:
        if node.seen:
            self._count_expansion(node, path)
        node.seen = True
        self.values[path] = node.place
        if node.anchored:
            return self._convert_anchored(node, path)
        data = self._converted(node, path)
        if node.kind != SCALAR and not self._anchored_active:
            # Only an alias reaches a node twice, and no anchor is above this one: what is
            # below it is converted for good, so it is let go (the tree never stands whole
            # beside its data).
            node.value = []
        return data

    def _convert_anchored(self, node: Node, path: Path) -> Any:
        """Only an alias reaches a node twice, so only an anchored node can be met again
        while it is being converted: an alias inside its own anchor."""
        if id(node) in self._active:
            raise Refused(
                Problem.at(
                    node_position(node, self.display), path, "an alias refers to its own anchor"
                )
            )
        self._active.add(id(node))
        self._anchored_active += 1
        data = self._converted(node, path)
        self._active.discard(id(node))
        self._anchored_active -= 1
        return data

    def _converted(self, node: Node, path: Path) -> Any:
        if node.kind == MAPPING:
            return self._mapping(node, path)
        if node.kind == SEQUENCE:
            self._check_tag(node, _YAML + "seq", path)
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node, path)

    def _count_expansion(self, node: Node, path: Path) -> None:
        """Nodes converted more than once come from aliases: count those expansions."""
        self._extra += 1
        if self._extra > MAX_ALIAS_EXPANSION:
            raise Refused(
                Problem.at(
                    node_position(node, self.display),
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
                node_position(node, self.display),
                path,
                f"unsupported YAML tag {node.tag!r}; a manifest uses plain YAML only "
                "(strings, numbers, booleans, null, lists, mappings)",
            )
        )
        return False

    def _mapping(self, node: Node, path: Path) -> dict[str, Any]:
        self._check_tag(node, _YAML + "map", path)
        explicit: dict[str, tuple[Place, Node]] = {}
        merge_sources: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merge_sources.append(value_node)
                continue
            key = self._key(key_node, path)
            if key is None:
                continue
            key_place = key_node.place
            if key in explicit:
                first_line = explicit[key][0][0]
                self.problems.append(
                    Problem.at(
                        node_position(key_node, self.display),
                        (*path, key),
                        f"duplicate key {key!r} (first at line {first_line}); YAML would "
                        "silently keep only the last one: remove or rename one of them",
                    )
                )
                continue
            explicit[key] = (key_place, value_node)
        result: dict[str, Any] = {}
        if merge_sources:
            result = self._merged(merge_sources, path)
            self.values[path] = node.place
        for key, (key_place, value_node) in explicit.items():
            key_path = (*path, key)
            self.keys[key_path] = key_place
            result[key] = self.convert(value_node, key_path)
            if _is_empty_scalar(value_node):
                # `KEY:` with nothing after it: the key is the place to point at
                self.values[key_path] = key_place
        return result

    def _merged(self, merge_sources: list[Node], path: Path) -> dict[str, Any]:
        """`<<: *base` or `<<: [*a, *b]`: the earlier source wins, explicit keys win over all.

        Sources are converted lowest priority first, so positions recorded by a
        winning source overwrite those of the sources it overrides."""
        mappings: list[Node] = []
        for source in merge_sources:
            mappings.extend(source.value if source.kind == SEQUENCE else [source])
        result: dict[str, Any] = {}
        for item in reversed(mappings):
            if item.kind != MAPPING:
                self.problems.append(
                    Problem.at(
                        node_position(item, self.display),
                        path,
                        "a merge key `<<` takes a mapping or a list of mappings (e.g. `<<: *base`)",
                    )
                )
                continue
            result.update(self.convert(item, path))
        return result

    def _key(self, node: Node, path: Path, *, report: bool = True) -> str | None:
        if node.kind == SCALAR and node.tag == _YAML + "str":
            text: str = node.value
            return text
        if report:
            self.problems.append(
                Problem.at(node_position(node, self.display), path, _non_string_key_message(node))
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
            # PyYAML's own readings of YAML 1.1 forms, on a node made for the moment
            plain = ScalarNode(tag, node.value)
            if tag == _YAML + "bool":
                return _boolean(node.value, self._constructor.construct_yaml_bool(plain))
            if tag == _YAML + "int":
                integer = self._constructor.construct_yaml_int(plain)
                if abs(integer) > LARGEST_NUMBER:
                    self.problems.append(
                        Problem.at(
                            node_position(node, self.display),
                            path,
                            f"an integer written in {len(node.value)} characters is too large a "
                            "number: no JSON reader holds it (quote it if you mean the text)",
                        )
                    )
                    return RefusedNumber(node.value)
                return _integer(node.value, integer)
            number = self._constructor.construct_yaml_float(plain)
            if not math.isfinite(number):
                self.problems.append(
                    Problem.at(
                        node_position(node, self.display),
                        path,
                        f"{node.value!r} is not a finite number; no manifest field takes "
                        "infinity or NaN (quote it if you mean the text)",
                    )
                )
                return RefusedNumber(node.value)
            return _float(node.value, number)
        except (ValueError, yaml.YAMLError):
            self.problems.append(
                Problem.at(
                    node_position(node, self.display),
                    path,
                    f"{node.value!r} is not a valid {tag.removeprefix(_YAML)}",
                )
            )
            return node.value


def _non_string_key_message(node: Node) -> str:
    """A scalar key: what YAML read it as, and the key quoted. A mapping or list key has no
    text of its own to quote back; it comes from braces or brackets meant as part of a
    name (an unrendered `{{ template }}`, a `[section]`) or from a stray `?` key."""
    if node.kind == MAPPING:
        return (
            "a mapping cannot be a key: keys are names (text); if the braces belong to the "
            'name, quote the whole key (e.g. "{name}":), otherwise write a plain name'
        )
    if node.kind == SEQUENCE:
        return (
            "a list cannot be a key: keys are names (text); if the brackets belong to the "
            'name, quote the whole key (e.g. "[name]":), otherwise write a plain name'
        )
    return (
        f"key {node.value!r} is not a string (YAML reads it as "
        f'{node.tag.removeprefix(_YAML)}); quote it, e.g. "{node.value}":'
    )


def _boolean(text: str, value: bool) -> bool | Yaml11Boolean:
    """Only the spellings YAML 1.2 shares (true, True, TRUE and the same for false) stay a bool."""
    return value if text.lower() in ("true", "false") else Yaml11Boolean(text, value)


def _integer(text: str, value: int) -> int | NonDecimalNumber:
    """Only plain decimal text stays an int: that is the one integer form whose text every
    reader (and `str()`, when a variable takes it as text) gives back unchanged."""
    return value if _PLAIN_INTEGER.fullmatch(text) else NonDecimalNumber(text, value)


def _float(text: str, value: float) -> float | NonDecimalNumber:
    """`1_0.5`, `1:30.5`, `+0.5`: the float forms a reviewer would misread, as for integers."""
    if text.startswith("+") or any(mark in text for mark in _UNCLEAR_FLOAT_MARKS):
        return NonDecimalNumber(text, value)
    # Text that is the float's own repr needs no remembering; and a plain float is one the
    # schema's quick check can read (quick_schema.py).
    return value if repr(value) == text else FloatAsWritten(value, text)
