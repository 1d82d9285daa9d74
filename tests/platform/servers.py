"""Servers for client tests: an ASGI app answering like a web server that is not the platform
(serve it with `tests.fixtures.loopback.LoopbackServer`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@dataclass
class Answer:
    status: int
    body: bytes = b""
    content_type: str = "application/json"


@dataclass
class FixedAnswers:
    """An ASGI app answering every request with `answer` (or `by_operation[operation]`) and
    recording the operations it was asked, like a web server that is not the platform."""

    answer: Answer = field(default_factory=lambda: Answer(404))
    by_operation: dict[str, Answer] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    async def _handle(self, request: Request) -> Response:
        operation = request.url.path.rsplit("/", 1)[-1]
        self.seen.append(operation)
        answer = self.by_operation.get(operation, self.answer)
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
