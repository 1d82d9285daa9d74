"""Servers for client tests: an ASGI app answering like a web server that is not the platform
(serve it with `tests.fixtures.loopback.LoopbackServer`), raw asyncio servers on loopback
for answers no framework would send (endless chunked bodies, trickles), and a recording server
that keeps the bytes of each request as they arrived (no framework between: header names keep
their case, the method and target are not parsed)."""

from __future__ import annotations

import asyncio
import threading
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


class RecordingServer:
    """An HTTP/1.1 server on 127.0.0.1, in a thread of its own (so that code under test may run
    its own event loop meanwhile), answering every request `status` with no body and closing the
    connection. `received` holds each request's bytes (head and Content-Length body) exactly as
    they arrived, `clients` the address each came from; `stop()` ends it."""

    def __init__(self, status: int = 200) -> None:
        self.received: list[bytes] = []
        self.clients: list[str] = []
        self._answer = f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        self._loop = asyncio.new_event_loop()
        self._port: int | None = None
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self._thread.start()
        started.wait()
        if self._port is None:
            raise RuntimeError("the recording server did not start")
        self.base_url = f"http://127.0.0.1:{self._port}"

    def _run(self, started: threading.Event) -> None:
        try:
            server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0)
            )
            self._port = server.sockets[0].getsockname()[1]
        finally:
            started.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader)
            self.clients.append(writer.get_extra_info("peername")[0])
            self.received.append(request)
            writer.write(self._answer.encode())
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
