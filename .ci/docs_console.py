"""A MkDocs hook: ` ```console ` blocks highlighted as the terminal sessions they are.

The documentation's console blocks are commands and their real output (tests/docs runs them):
each `$ COMMAND` line is a prompt and a bash command, every other line is output. Pygments' own
session lexer also reads a line starting with `#` as a root prompt, which many of reconciler's
output lines are (`  # app.shop/web will be updated in-place`), so this lexer takes only `$ `.
It marks the prompt `Generic.Prompt` and the output `Generic.Output`, which
docs/stylesheets/console.css keeps out of what the copy button copies: a reader copies the
commands alone.

mkdocs.yml names this file under `hooks:` and maps `console` to `reconciler-console` in
pymdownx.highlight's `extend_pygments_lang`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from pygments.lexer import Lexer
from pygments.lexers.shell import BashLexer
from pygments.token import Generic, _TokenType

NAME = "reconciler-console"
PROMPT = "$ "


class ConsoleLexer(Lexer):
    name = "Console session (reconciler documentation)"
    aliases: ClassVar[list[str]] = [NAME]

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        bash = BashLexer(**self.options)
        position = 0
        for line in text.splitlines(keepends=True):
            if line.startswith(PROMPT):
                yield position, Generic.Prompt, PROMPT
                for index, token, value in bash.get_tokens_unprocessed(line[len(PROMPT) :]):
                    yield position + len(PROMPT) + index, token, value
            else:
                yield position, Generic.Output, line
            position += len(line)


def on_startup(**_: Any) -> None:
    """Let pymdownx.highlight find the lexer by its name."""
    from pymdownx import highlight

    if getattr(highlight.get_lexer_by_name, "reconciler_console", False):
        return
    original = highlight.get_lexer_by_name

    def get_lexer_by_name(alias: str, **options: Any) -> Lexer:
        if alias == NAME:
            return ConsoleLexer(**options)
        return original(alias, **options)

    get_lexer_by_name.reconciler_console = True  # type: ignore[attr-defined]
    highlight.get_lexer_by_name = get_lexer_by_name
