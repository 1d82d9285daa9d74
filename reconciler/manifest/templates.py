"""Templates and `appDefaults`: which blocks end up under each environment of each app.

An environment is a stack of layers (reconciler/manifest/layers.py merges them; the nearest,
last, wins). For the environment E of app A in project P, from the lowest:

1. the workspace's `appDefaults`,
2. P's `appDefaults`,
3. each template of A's `extends`, in order,
4. A's `defaults`,
5. A's `environments.E`.

A block that extends templates has them under itself, in the order listed, each with its
own `extends` under it; a block that holds both its own settings and `environments` (an app
template, `appDefaults`) has its own settings under its `environments.E`. A template reached
twice for one environment with the same parameters is applied once, where it first appears.

Nothing here copies a template into its uses: each use of a shared block is a `Use`, and the
layers it gives are `(data, ("@", use, ...))`: paths that `real_path` turns back into the
place the value is written (in the template, or, for a parameter's value, in the use's
`params`), so every problem and every position of the model points at the source, and says
which blocks a value came through.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from reconciler.manifest.layers import Layer, Layered
from reconciler.manifest.model import ENVIRONMENT_NAMES, EnvironmentName
from reconciler.manifest.problems import WARNING, Path, Severity, format_path
from reconciler.manifest.schema import SchemaError, closest, did_you_mean, kind_of, schema_errors

if TYPE_CHECKING:
    from reconciler.manifest.document import Document

TEMPLATE_ONLY = ("extends", "environments", "params", "description")
"""Keys of a shared block that are not settings of an environment."""
IN_TEXT = ("string", "integer")
"""Parameter types that may stand inside text (`api.${domain}`): others only alone."""
USE = "@"
"""The first part of a path inside a use of a shared block: `("@", use_index, ...)`."""
MAX_NESTING = 16
"""Templates extending templates deeper than this are refused (a chain that long is a
mistake, and each level is a level of recursion)."""

_PLACEHOLDER = re.compile(r"\$\$\{|\$\{([^}]*)\}?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
Level = Literal["app", "settings"]


@dataclass(frozen=True)
class Use:
    """One application of a shared block (a template, an `appDefaults`) to one app."""

    source: Path
    """Where the block is written: `("templates", name)`, `("appDefaults",)`,
    `("projects", slug, "appDefaults")`."""
    app: Path
    """The app it ends up under."""
    chain: tuple[str, ...]
    """The shared blocks the values came through, outermost first, as manifest paths."""
    parameters: Mapping[Path, Path] = field(default_factory=dict)
    """A substituted value's path in the block -> where its parameter's value is written."""

    @property
    def app_address(self) -> str:
        return f"{self.app[1]}/{self.app[3]}"


@dataclass
class Expansion:
    """The layers of every managed environment of every app, and what was wrong on the way."""

    uses: list[Use] = field(default_factory=list)
    environments: dict[Path, list[tuple[EnvironmentName, Layered]]] = field(default_factory=dict)
    problems: list[tuple[Path, str, Severity, bool]] = field(default_factory=list)
    """(path, message, severity, at the key): placed by `Document.problem_at`."""


def real_path(uses: Sequence[Use], path: Path) -> Path:
    """Where the value at `path` is written: a use's path becomes the block's own, or the
    path of the parameter value it was substituted from."""
    while path and path[0] == USE:
        use = uses[int(path[1])]
        rest = path[2:]
        for cut in range(len(rest), -1, -1):
            target = use.parameters.get(rest[:cut])
            if target is not None:
                path = (*target, *rest[cut:])
                break
        else:
            path = (*use.source, *rest)
    return path


def shared_source(path: Path) -> bool:
    """Whether a (real) path is inside a shared block: a template or an `appDefaults`."""
    return bool(path) and (
        path[0] in ("templates", "appDefaults")
        or (len(path) > 2 and path[0] == "projects" and path[2] == "appDefaults")
    )


def expand(document: Document) -> Expansion:
    return _Expander(document).run()


@dataclass
class _App:
    path: Path
    layers: dict[EnvironmentName, list[Layer]]
    applied: dict[EnvironmentName, set[Hashable]]


class _Expander:
    def __init__(self, document: Document) -> None:
        self.doc = document
        self.result = Expansion()
        self._bodies: dict[Hashable, tuple[Any, dict[Path, str], list[SchemaError]]] = {}

    def run(self) -> Expansion:
        for name, body in self.doc.templates.items():
            if isinstance(body, dict):
                self._check_template(name, body)
        self._check_graph()
        for app_path, _, app in self.doc.apps():
            self.result.environments[app_path] = self._app(app_path, app)
        return self.result

    def report(
        self, path: Path, message: str, severity: Severity = "error", *, key: bool = False
    ) -> None:
        self.result.problems.append((path, message, severity, key))

    # --- one app --------------------------------------------------------------------------

    def _app(self, path: Path, app: dict[str, Any]) -> list[tuple[EnvironmentName, Layered]]:
        state = _App(
            path, {n: [] for n in ENVIRONMENT_NAMES}, {n: set() for n in ENVIRONMENT_NAMES}
        )
        workspace = self.doc.blocks.get("appDefaults")
        if isinstance(workspace, dict) and workspace:
            self._shared(state, workspace, ("appDefaults",))
        project = self.doc.projects.get(str(path[1]))
        scoped = project.get("appDefaults") if isinstance(project, dict) else None
        if isinstance(scoped, dict) and scoped:
            self._shared(state, scoped, ("projects", path[1], "appDefaults"))
        self._extends(state, app.get("extends"), (*path, "extends"), "app", ENVIRONMENT_NAMES, ())
        defaults = app.get("defaults")
        if isinstance(defaults, dict):
            self._settings(state, defaults, (*path, "defaults"), ENVIRONMENT_NAMES, ())
        envs = app.get("environments")
        envs = envs if isinstance(envs, dict) else {}
        written = [known for name in envs for known in ENVIRONMENT_NAMES if name == known]
        for name in written:
            env = envs[name]
            if isinstance(env, dict) or env is None:
                block = env if isinstance(env, dict) else {}
                self._settings(state, block, (*path, "environments", name), (name,), ())
        order = written + [n for n in ENVIRONMENT_NAMES if n not in written]
        return [(name, Layered(state.layers[name])) for name in order if state.layers[name]]

    def _shared(self, state: _App, block: dict[str, Any], source: Path) -> None:
        base = self._use(Use(source, state.path, (format_path(source),)))
        self._app_level(state, block, base, ENVIRONMENT_NAMES, (format_path(source),))

    def _app_level(
        self,
        state: _App,
        block: dict[str, Any],
        base: Path,
        targets: Sequence[EnvironmentName],
        chain: tuple[str, ...],
    ) -> None:
        """A block of an app's level: its templates, its own settings (both environments),
        then its `environments`."""
        self._extends(state, block.get("extends"), (*base, "extends"), "app", targets, chain)
        own = _own_settings(block)
        if own:
            for name in targets:
                state.layers[name].append((own, base))
        envs = block.get("environments")
        if isinstance(envs, dict):
            for name in targets:
                if name in envs and isinstance(envs[name], dict | None):
                    env = envs[name] or {}
                    self._settings(state, env, (*base, "environments", name), (name,), chain)

    def _settings(
        self,
        state: _App,
        block: dict[str, Any],
        base: Path,
        targets: Sequence[EnvironmentName],
        chain: tuple[str, ...],
    ) -> None:
        """A block of settings (`defaults`, an environment): its templates, then itself."""
        self._extends(state, block.get("extends"), (*base, "extends"), "settings", targets, chain)
        own = _own_settings(block)
        for name in targets:
            state.layers[name].append((own, base))

    # --- extends --------------------------------------------------------------------------

    def _extends(
        self,
        state: _App,
        items: Any,
        path: Path,
        level: Level,
        targets: Sequence[EnvironmentName],
        chain: tuple[str, ...],
    ) -> None:
        if not isinstance(items, list):
            return
        for index, item in enumerate(items):
            self._extend(state, item, (*path, index), level, targets, chain)

    def _extend(
        self,
        state: _App,
        item: Any,
        at: Path,
        level: Level,
        targets: Sequence[EnvironmentName],
        chain: tuple[str, ...],
    ) -> None:
        name, given = _parse_use(item)
        if name is None:
            return  # the schema reports it
        name_at = at if isinstance(item, str) else (*at, "template")
        template = self.doc.templates.get(name)
        if not isinstance(template, dict):
            if name not in self.doc.templates and not self._in_template(at):
                self.report(name_at, _unknown(name, list(self.doc.templates)))
            return  # in a template, _check_graph reports it once
        through = [s.removeprefix("templates.") for s in chain if s.startswith("templates.")]
        if name in through:
            return  # a loop: _check_graph reports it
        if len(through) >= MAX_NESTING:
            self.report(
                name_at,
                f"templates extend templates more than {MAX_NESTING} deep here "
                f"({' -> '.join([*through, name])}); flatten the chain",
            )
            return
        if level == "settings" and "environments" in template:
            self.report(
                name_at,
                f"template {name!r} has `environments`, so only an app's `extends` (or an "
                "`appDefaults`) can use it: move this use to the app's `extends`, or take "
                "the settings out of `environments`",
            )
            return
        values = self._values(name, template, given, at)
        if values is None:
            return
        key = (name, _hashable(values))
        remaining = [target for target in targets if key not in state.applied[target]]
        if not remaining:
            return
        for target in remaining:
            state.applied[target].add(key)
        body, placed, errors = self._body(name, template, values)
        parameters = {
            where: (*at, "params", param)
            if param in given
            else ("templates", name, "params", param, "default")
            for where, param in placed.items()
        }
        source: Path = ("templates", name)
        sources = (*chain, format_path(source))
        base = self._use(Use(source, state.path, sources, parameters))
        for path, of_key, message in errors:
            self.report((*base, *path), message, key=of_key)
        if level == "app":
            self._app_level(state, body, base, remaining, sources)
        else:
            self._settings(state, body, base, remaining, sources)

    def _use(self, use: Use) -> Path:
        self.result.uses.append(use)
        return (USE, len(self.result.uses) - 1)

    def _in_template(self, path: Path) -> bool:
        return (
            bool(path)
            and path[0] == USE
            and self.result.uses[int(path[1])].source[0] == "templates"
        )

    def _check_graph(self) -> None:
        """Every `extends` written in a template names a template, and no template is part
        of its own extends (each reported once, where it is written, whatever the uses)."""
        done: set[str] = set()
        for start in self.doc.templates:
            if start in done:
                continue
            stack: list[tuple[str, Iterator[tuple[Any, Path]]]] = [
                (start, _extends_items(self.doc.templates[start], ("templates", start)))
            ]
            while stack:
                name, items = stack[-1]
                step = next(items, None)
                if step is None:
                    done.add(name)
                    stack.pop()
                    continue
                item, at = step
                target, _ = _parse_use(item)
                if target is None:
                    continue
                name_at = at if isinstance(item, str) else (*at, "template")
                if target not in self.doc.templates:
                    self.report(name_at, _unknown(target, list(self.doc.templates)))
                    continue
                visiting = [entry for entry, _ in stack]
                if target in visiting:
                    loop = " -> ".join([*visiting[visiting.index(target) :], target])
                    self.report(
                        name_at,
                        f"template {target!r} extends itself ({loop}); a template cannot be "
                        "part of its own extends: remove one of these uses",
                    )
                elif target not in done:
                    body = self.doc.templates[target]
                    stack.append((target, _extends_items(body, ("templates", target))))

    # --- parameters -----------------------------------------------------------------------

    def _values(
        self, name: str, template: dict[str, Any], given: dict[str, Any], at: Path
    ) -> dict[str, Any] | None:
        """The value of each parameter for one use; None (after reporting) when a value is
        missing, unknown or of the wrong type."""
        declared = _declarations(template)
        wrong = False
        for param in given:
            if param not in declared:
                wrong = True
                suggestion = closest(str(param), list(declared))
                self.report(
                    (*at, "params", param),
                    f"template {name!r} has no parameter {param!r}"
                    + (did_you_mean(suggestion) if suggestion else "")
                    + f" ({_parameters(declared)})",
                    key=True,
                )
        values: dict[str, Any] = {}
        for param, declaration in declared.items():
            kind = declaration.get("type")
            if param in given:
                value = given[param]
                if not _has_type(value, kind):
                    wrong = True
                    self.report(
                        (*at, "params", param),
                        f"parameter {param!r} of template {name!r} is declared {kind}; got "
                        f"{kind_of(value)}",
                    )
                values[param] = value
            elif "default" in declaration:
                values[param] = declaration["default"]
            else:
                wrong = True
                self.report(
                    at,
                    f"template {name!r} needs parameter {param!r} ({kind}): write the use as "
                    f"{{template: {name}, params: {{{param}: ...}}}}",
                )
        return None if wrong else values

    def _body(
        self, name: str, template: dict[str, Any], values: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[Path, str], list[SchemaError]]:
        """The template with its parameters substituted, which parameter each substituted
        value comes from, and what the schema finds wrong with those values (made once for
        each set of values; the rest of the template is the schema's as written)."""
        key = (name, _hashable(values))
        made = self._bodies.get(key)
        if made is None:
            placed: dict[Path, str] = {}
            body = {
                k: v if k in ("params", "description") else _substituted(v, values, (k,), placed)
                for k, v in template.items()
            }
            errors: list[SchemaError] = []
            if placed:
                settings = {k: v for k, v in body.items() if k not in ("params", "description")}
                errors = [
                    error
                    for error in schema_errors(settings, "appDefaults")
                    if any(error[0][:cut] in placed for cut in range(len(error[0]) + 1))
                ]
            made = self._bodies[key] = (body, placed, errors)
        return made

    def _check_template(self, name: str, body: dict[str, Any]) -> None:
        """What is wrong with a template whatever its uses: its parameters' declarations and
        every `${...}` it writes."""
        declared = _declarations(body)
        for param, declaration in declared.items():
            kind = declaration.get("type")
            if "default" in declaration and not _has_type(declaration["default"], kind):
                self.report(
                    ("templates", name, "params", param, "default"),
                    f"the default of parameter {param!r} must be of its type, {kind}; got "
                    f"{kind_of(declaration['default'])}",
                )
        used: set[str] = set()
        for path, text in _texts(body, ("templates", name)):
            for found in _PLACEHOLDER.finditer(text):
                if found.group(0) == "$${":
                    continue
                param = found.group(1)
                if not found.group(0).endswith("}") or param is None or not _NAME.fullmatch(param):
                    self.report(
                        path,
                        f"{found.group(0)!r} is not a parameter: write ${{name}} (letters, "
                        "digits and underscores), or $${ for the text ${",
                    )
                elif param not in declared:
                    self.report(
                        path,
                        f"template {name!r} has no parameter {param!r} ({_parameters(declared)})"
                        f": declare it under `params`, or write $${{{param}}} for the text "
                        f"${{{param}}}",
                    )
                else:
                    used.add(param)
                    kind = declared[param].get("type")
                    if found.group(0) != text and kind not in IN_TEXT:
                        self.report(
                            path,
                            f"parameter {param!r} is a {kind}, which cannot be part of text: "
                            f"write it alone ('${{{param}}}'), or declare it a string",
                        )
        for param in declared:
            if param not in used:
                self.report(
                    ("templates", name, "params", param),
                    f"template {name!r} never uses parameter {param!r} (no ${{{param}}} in "
                    "it): remove it, or use it",
                    WARNING,
                    key=True,
                )


def _own_settings(block: dict[str, Any]) -> dict[str, Any]:
    """The block's settings of an environment, without the keys of templates and defaults."""
    if not any(key in block for key in TEMPLATE_ONLY):
        return block
    return {k: v for k, v in block.items() if k not in TEMPLATE_ONLY}


def _extends_items(template: Any, path: Path) -> Iterator[tuple[Any, Path]]:
    """The `extends` items a template writes (its own and its environments'), with paths."""
    if not isinstance(template, dict):
        return
    blocks = [(template, path)]
    envs = template.get("environments")
    if isinstance(envs, dict):
        blocks += [(env, (*path, "environments", n)) for n, env in envs.items()]
    for block, where in blocks:
        items = block.get("extends") if isinstance(block, dict) else None
        if isinstance(items, list):
            for index, item in enumerate(items):
                yield item, (*where, "extends", index)


def _parse_use(item: Any) -> tuple[str | None, dict[str, Any]]:
    if isinstance(item, str):
        return item, {}
    if isinstance(item, dict) and isinstance(item.get("template"), str):
        params = item.get("params")
        return item["template"], params if isinstance(params, dict) else {}
    return None, {}


def _declarations(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    params = template.get("params")
    if not isinstance(params, dict):
        return {}
    return {name: d for name, d in params.items() if isinstance(d, dict)}


def _has_type(value: Any, kind: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    return True  # an unknown type: the schema reports it


def _hashable(value: Any) -> Hashable:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[", *(_hashable(v) for v in value))
    return (type(value).__name__, repr(value))


def _texts(node: Any, path: Path) -> Iterator[tuple[Path, str]]:
    """Every text holding `$` in a template, but its parameter declarations and description."""
    if isinstance(node, str):
        if "$" in node:
            yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            if len(path) == 2 and key in ("params", "description"):
                continue
            yield from _texts(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _texts(value, (*path, index))


def _substituted(node: Any, values: dict[str, Any], path: Path, placed: dict[Path, str]) -> Any:
    """`node` with `${name}` replaced: text that is only `${name}` becomes the value itself,
    `${name}` within text its text; `$${` is `${`. What `_check_template` reports stays."""
    if isinstance(node, str):
        if "$" not in node:
            return node
        whole = _PLACEHOLDER.fullmatch(node)
        if whole and whole.group(1) in values and whole.group(0).endswith("}"):
            placed[path] = whole.group(1)
            return values[whole.group(1)]
        first: list[str] = []

        def replace(found: re.Match[str]) -> str:
            param = found.group(1)
            if found.group(0) == "$${":
                return "${"
            if param in values and found.group(0).endswith("}"):
                value = values[param]
                if isinstance(value, str) or (
                    isinstance(value, int) and not isinstance(value, bool)
                ):
                    first.append(param)
                    return str(value)
            return found.group(0)

        text = _PLACEHOLDER.sub(replace, node)
        if first:
            placed[path] = first[0]
        return text
    if isinstance(node, dict):
        return {k: _substituted(v, values, (*path, k), placed) for k, v in node.items()}
    if isinstance(node, list):
        return [_substituted(v, values, (*path, i), placed) for i, v in enumerate(node)]
    return node


def _parameters(declared: Mapping[str, Any]) -> str:
    return f"its parameters: {', '.join(declared)}" if declared else "it declares none"


def _unknown(name: str, known: list[str]) -> str:
    suggestion = closest(name, known)
    listed = ", ".join(known) if known else "none are defined"
    return (
        f"no template is named {name!r}"
        + (did_you_mean(suggestion) if suggestion else "")
        + f" (templates: {listed})"
    )
