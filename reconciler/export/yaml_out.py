"""Writing a manifest document as YAML that reads the way people write it and that
`reconciler validate` accepts."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from reconciler.escaping import shows
from reconciler.export.secret_names import SecretInput
from reconciler.manifest.schema import manifest_schema


def header_lines(*, pinned_ids: bool, secrets: Sequence[SecretInput]) -> list[str]:
    """The comment an exported file starts with: what was left out, and what to provide."""
    lines = ["Exported by `reconciler export`: fields at the platform's defaults are left out."]
    if pinned_ids:
        lines.append("`id:` pins each project and app: a changed slug key renames it in place.")
    if secrets:
        lines.append("Write-only values cannot be read back; set these before plan/apply:")
        lines += [f"  {s.env_name}" for s in secrets]
    return lines


FLOW_WIDTH = 64  # JSON length; the YAML form is shorter, so lines stay under 100


class _FlowMap(dict[str, Any]):
    pass


class _FlowList(list[Any]):
    pass


class _ManifestDumper(yaml.SafeDumper):
    """Block style for structure, flow style for short leaf maps and lists,
    literal blocks for multi-line strings; no tags, keys in insertion order."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Indent list items under their key, as people (and the docs) write them.
        return super().increase_indent(flow, False)


# Line breaks YAML normalises or folds (and PyYAML mis-quotes) and control characters: only
# a double-quoted scalar, with escapes, keeps them exactly.
_NEEDS_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\r]")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if _NEEDS_ESCAPES.search(value) or _invisible(value):
        style: str | None = '"'
    elif "\n" in value:
        style = "|" if _reads_well_as_block(value) else '"'
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _invisible(value: str) -> bool:
    """Whether `value` holds a character that would not show as itself (a bidirectional
    control, a zero-width character): written double-quoted, where `_escape_invisible` writes
    it as an escape."""
    return not all(char == "\n" or shows(char) for char in value)


_COMMAND_LINE = re.compile(r"^\s*::", re.MULTILINE)
"""A line a GitHub runner reads as a workflow command (`::add-mask::`...), once the block's
indentation is stripped: such text is written as one quoted line, `\\n` escapes for its breaks."""


def _reads_well_as_block(value: str) -> bool:
    """A plain `|` block: no indentation or chomping indicators, nothing invisible at line ends
    (a PEM file or a script reads well; leading spaces or blank tails are clearer quoted), and
    no line a CI log would run as a command."""
    lines = value.removesuffix("\n").split("\n")
    return (
        bool(value.strip())
        and not value[0].isspace()
        and not value.endswith("\n\n")
        and not any(line != line.rstrip() for line in lines)
        and not _COMMAND_LINE.search(value)
    )


def _escape_invisible(text: str) -> str:
    """The dumped YAML with each character that would not show as itself escaped: every such
    character is inside a double-quoted scalar (`_represent_str`), where `\\uXXXX` (or
    `\\UXXXXXXXX`) stands for it."""
    return "".join(char if char == "\n" or shows(char) else _yaml_escape(char) for char in text)


def _yaml_escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _represent_flow_map(dumper: yaml.SafeDumper, value: _FlowMap) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=True)


def _represent_flow_list(dumper: yaml.SafeDumper, value: _FlowList) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


_ManifestDumper.add_representer(str, _represent_str)
_ManifestDumper.add_representer(_FlowMap, _represent_flow_map)
_ManifestDumper.add_representer(_FlowList, _represent_flow_list)


# The structural levels a person writes in block style; everything below them
# (settings, regions, match items, small lists) is written in flow style when short.
_BLOCK_LEVELS: Mapping[str, Mapping[str, str]] = {
    "root": {"projects": "projects"},
    "projects": {"*": "project"},
    "project": {"apps": "apps"},
    "apps": {"*": "app"},
    "app": {"environments": "environments", "defaults": "environment"},
    "environments": {"*": "environment"},
    "environment": {"variables": "variables", "policies": "policies"},
    "variables": {},
    "policies": {"*": "policy"},
    "policy": {},
}


def _styled(value: Any, level: str | None = "root") -> Any:
    """Mark short collections below the structural levels for flow style."""
    children = _BLOCK_LEVELS.get(level or "", {})
    if isinstance(value, dict):
        inner = {k: _styled(v, children.get(k, children.get("*"))) for k, v in value.items()}
        return inner if level or not _fits_one_line(inner) else _FlowMap(inner)
    if isinstance(value, list):
        items = [_styled(v, children.get("*")) for v in value]
        return items if level or not _fits_one_line(items) else _FlowList(items)
    return value


def _fits_one_line(collection: dict[str, Any] | list[Any]) -> bool:
    values = list(collection.values()) if isinstance(collection, dict) else collection
    if any(isinstance(v, str) and "\n" in v for v in values):
        return False
    if not all(_is_scalar(v) or isinstance(v, _FlowMap | _FlowList) for v in values):
        return False
    return len(json.dumps(collection)) <= FLOW_WIDTH


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def schema_modeline() -> str:
    """The comment that points editors using the YAML language server (VS Code, Neovim,
    JetBrains) at the manifest schema, for completion, hover docs and inline errors."""
    return f"# yaml-language-server: $schema={manifest_schema()['$id']}\n"


def _dumped(document: Mapping[str, Any], *, width: int | None) -> str:
    return yaml.dump(
        _styled(dict(document)),
        Dumper=_ManifestDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=width if width is not None else float("inf"),
    )


def dump_manifest(document: Mapping[str, Any], *, header: Sequence[str] = ()) -> str:
    """YAML for a manifest document: the schema modeline, `header` as `#` comment lines,
    then the document."""
    text = _dumped(document, width=100)
    if _COMMAND_LINE.search(text):
        # a long quoted value was folded onto a line that starts with `::`, which a CI log
        # would run as a workflow command: written unfolded, each value on its own line
        text = _dumped(document, width=None)
    if not text.isprintable():
        text = _escape_invisible(text)
    return schema_modeline() + "".join(f"# {line}\n" for line in header) + text
