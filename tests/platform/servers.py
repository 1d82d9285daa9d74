"""Servers for client tests: an ASGI app answering like a web server that is not the platform
(serve it with `tests.fixtures.loopback.LoopbackServer`), and raw asyncio servers on loopback
for answers no framework would send (endless chunked bodies, trickles)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
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


RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def raw_server(handler: RawHandler) -> AsyncIterator[str]:
    """A bare asyncio TCP server on loopback in the running loop; yields its base URL. Handlers
    still running when the block ends are cancelled (an endless body ends with the test)."""
    running: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await read_request(reader)
            await handler(reader, writer)
        except (ConnectionError, asyncio.CancelledError, asyncio.IncompleteReadError):
            pass
        finally:
            running.discard(task)
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        still_running = list(running)
        for task in still_running:
            task.cancel()
        await asyncio.gather(*still_running, return_exceptions=True)
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """The head and the Content-Length body of one HTTP/1.1 request."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return head + await reader.readexactly(length)
