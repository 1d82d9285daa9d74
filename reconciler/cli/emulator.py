"""`reconciler emulator`: serve the local platform emulator over HTTP."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import click

from reconciler.cli.colour import quiet_color_option
from reconciler.cli.options import report_errors
from reconciler.errors import ReconcilerError, UsageError
from reconciler.report.output import accept_output_failure, discard_stdout, echo


class _Rate(click.ParamType[float]):
    """A positive number of requests per second, written `20` or `20/s`."""

    name = "rate"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip().removesuffix("/s")
        try:
            rate = float(text)
        except ValueError:
            self.fail(f"{value!r} is not a rate such as 20 or 20/s", param, ctx)
        if not rate > 0 or rate == float("inf"):
            self.fail(f"{value!r} must be a positive number of requests per second", param, ctx)
        return rate


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8787,
    show_default=True,
    help="Port to listen on (0 picks a free one).",
)
@click.option(
    "--state",
    "state_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Persist state to this JSON file (atomic writes) and load it at start.",
)
@click.option(
    "--keys",
    "keys_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file `keys: [{key: ..., permissions: [...]}]`. Default: one dev key with "
    "every permission ($RECONCILER_API_KEY, or generated).",
)
@click.option(
    "--latency-ms", type=click.IntRange(min=0), default=0, help="Delay added to every API call."
)
@click.option(
    "--fault-rate",
    type=click.FloatRange(0, 1),
    default=0.0,
    help="Fraction of API calls answered 429/500 (503 for domains.listDomains).",
)
@click.option("--seed", type=int, help="Seed for IDs and faults, for repeatable runs.")
@click.option(
    "--rate-limit",
    type=_Rate(),
    metavar="N[/s]",
    help="Requests per second (e.g. 20 or 20/s) before 429 with Retry-After.",
)
@click.option(
    "--step-ms",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Time each deployment status step takes.",
)
@click.option(
    "--accept-unknown",
    is_flag=True,
    help="Behave like a platform newer than the spec, to try how reconciler handles what it "
    "does not know: accept members, policy kinds (e.g. rateLimit) and values the spec does "
    "not list, keep them and return them. Off by default: the emulator follows the spec.",
)
@click.option(
    "--unknown-in",
    "unknown_settings",
    multiple=True,
    metavar="NAME=SECTION",
    help="With --accept-unknown: keep the updateSettings member NAME in the environment's "
    "`runtime` or `build` (e.g. gpu=runtime); others stay at its top level. Repeatable.",
)
@click.option(
    "--extra-environment",
    "extra_environments",
    multiple=True,
    metavar="NAME",
    help="With --accept-unknown: every app is created with this environment too, besides "
    "production and preview (e.g. staging). Repeatable.",
)
@quiet_color_option
@report_errors
def emulator(
    host: str,
    port: int,
    state_file: Path | None,
    keys_file: Path | None,
    latency_ms: int,
    fault_rate: float,
    seed: int | None,
    rate_limit: float | None,
    step_ms: int,
    accept_unknown: bool,
    unknown_settings: tuple[str, ...],
    extra_environments: tuple[str, ...],
) -> None:
    """Run the local platform emulator (the whole platform API) until Ctrl-C."""
    import uvicorn

    from reconciler.emulator.app import ENV_API_KEY, EmulatorConfig, create_app, is_loopback
    from reconciler.emulator.auth import KeysFileError, load_keys
    from reconciler.emulator.store import StateFileError, StateLock, StateLockedError

    newer = _newer_platform(accept_unknown, unknown_settings, extra_environments)
    try:
        keys = load_keys(keys_file) if keys_file is not None else None
    except KeysFileError as error:
        raise UsageError(str(error), hint="see `reconciler emulator --help`") from error
    state_lock = StateLock(state_file) if state_file is not None else None
    try:  # the server writes the file until it stops: one writer at a time
        if state_lock is not None:
            state_lock.acquire()
    except StateLockedError as error:
        raise UsageError(str(error), hint="stop it, or pass another --state") from None
    except StateFileError as error:
        raise UsageError(str(error), hint="pass another --state") from None
    config = EmulatorConfig(
        keys=keys,
        state_file=state_file,
        latency_ms=latency_ms,
        fault_rate=fault_rate,
        seed=seed,
        rate_limit=rate_limit,
        step_ms=step_ms,
        accept_unknown=accept_unknown,
        unknown_settings=newer[0],
        extra_environments=newer[1],
    )
    try:
        app = create_app(config)
    except StateFileError as error:
        if state_lock is not None:
            state_lock.release()
        raise UsageError(str(error), hint="remove the file or pass another --state") from error
    sock = _bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    banner = [f"Emulator listening on http://{shown_host}:{bound_port}"]
    emulator_state = app.state.emulator
    if keys is None and emulator_state.dev_key_generated:
        banner.append(f"API key: {emulator_state.dev_key}")
    elif keys is None:  # the user's own key (maybe a real one) is never printed
        banner.append(f"API key: the value of {ENV_API_KEY}")
    else:
        banner.append(f"API keys: {len(keys)} from {keys_file}")
    if state_file is not None:
        banner.append(f"State file: {state_file}")
    if accept_unknown:
        banner.append("Behaving like a newer platform: members the spec does not list are kept.")
    banner.append("Press Ctrl-C to stop.")
    try:
        if not is_loopback(bound_host):
            echo(
                f"Warning: listening on {shown_host}, not on this machine's loopback: whoever "
                "can reach that address can call the emulator's API with its key (printed "
                "below when generated), and a key generated or taken from "
                f"{ENV_API_KEY} may be a real one. Admin calls (/_emulator/) still need the key "
                "and a loopback Host. For a local emulator keep --host 127.0.0.1.",
                err=True,
            )
        echo("\n".join(banner))
    except BrokenPipeError:
        sock.close()
        discard_stdout()
        raise ReconcilerError(
            "the standard output was closed, so the emulator could not tell its address; "
            "it did not start",
            hint="keep reading its output, or redirect it to a file",
        ) from None
    server = _server_class()(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    )
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        pass
    finally:
        sock.close()
    if state_lock is not None:
        state_lock.release()
    try:
        echo("Emulator stopped.")
    except BrokenPipeError:  # the reader left while the emulator ran: nothing left to tell it
        discard_stdout()
        accept_output_failure()


def _newer_platform(
    accept_unknown: bool, unknown_settings: tuple[str, ...], extra_environments: tuple[str, ...]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The --unknown-in map and the --extra-environment names, checked."""
    if (unknown_settings or extra_environments) and not accept_unknown:
        raise UsageError(
            "--unknown-in and --extra-environment describe a newer platform",
            hint="add --accept-unknown",
        )
    sections: dict[str, str] = {}
    for item in unknown_settings:
        name, _, section = item.partition("=")
        if not name or section not in ("runtime", "build"):
            raise UsageError(
                f"--unknown-in {item!r} is not NAME=runtime or NAME=build",
                hint="e.g. --unknown-in gpu=runtime",
            )
        sections[name] = section
    for name in extra_environments:
        if name in ("production", "preview") or not name:
            raise UsageError(
                f"--extra-environment {name!r}: every app has production and preview already",
                hint="name another environment, e.g. --extra-environment staging",
            )
    return sections, tuple(dict.fromkeys(extra_environments))


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn re-raises the signal that stopped it; a stop on Ctrl-C/SIGTERM is clean here."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                captured = getattr(self, "_captured_signals", None)
                if isinstance(captured, list):
                    captured.clear()

    return Server


def _bind(host: str, port: int) -> socket.socket:
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        # proto IPPROTO_TCP lets asyncio set TCP_NODELAY on accepted connections (without it
        # every response waits ~40 ms for a delayed ACK)
        sock = socket.socket(info[0], socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
    except OSError as error:
        raise UsageError(
            f"cannot listen on {host}:{port}: {error.strerror or error}",
            hint="pick another --port (0 chooses a free one) or --host",
        ) from error
    sock.listen(128)
    return sock
