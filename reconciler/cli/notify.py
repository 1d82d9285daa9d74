"""`--notify/--no-notify` and `--notify-in-sync` of `plan` and `apply`, and `outcome`, the one
call through which a command says what it produced (its plan, or the record of its apply).

`notifies(command, default=...)` goes right above the command's function, under
`report_errors`. Before the command runs it reads the notification URLs from the environment
(registering each as a sensitive value, whether or not anything is posted); it notes how the
command ended (its exit status, the error it raised, an interrupt), and posts the
notification when click closes the command's context: after everything the command printed,
its error message included. What happens there, a delivery that fails or a bug, is a warning
on standard error and never changes the exit status.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar

import click
from click.core import ParameterSource

from reconciler.errors import OutputError, ReconcilerError, UsageError
from reconciler.plan.changes import Plan
from reconciler.report import notify as notifications
from reconciler.report.output import echo

P = ParamSpec("P")
R = TypeVar("R")

EXIT_INTERRUPTED = 130


def delivery_timing() -> notifications.Timing | None:
    """Real time: `None` (tests replace this to count retries without waiting)."""
    return None


@dataclass
class _Watch:
    command: Literal["plan", "apply"]
    enabled: bool
    in_sync: bool
    asked: bool
    """`--notify` or `--notify-in-sync` was given on the command line."""
    found: notifications.Destinations
    subject: Plan | notifications.ApplyRun | None = None
    exit_code: int | None = None
    """None while the command runs."""
    error: BaseException | None = None
    interrupted: bool = False

    def ended(
        self, exit_code: int, error: BaseException | None = None, *, interrupted: bool = False
    ) -> None:
        self.exit_code, self.error, self.interrupted = exit_code, error, interrupted


_watching: ContextVar[_Watch | None] = ContextVar("reconciler_notify", default=None)


def outcome(subject: Plan | notifications.ApplyRun) -> None:
    """What the running command produced, for its notification: the plan (`plan`), or the
    record of the apply that fills in as it goes (`apply`)."""
    watch = _watching.get()
    if watch is not None:
        watch.subject = subject


def notifies(
    command: Literal["plan", "apply"], *, default: bool
) -> Callable[[Callable[P, R]], Callable[..., R]]:
    """The notification options of `command` (`--notify` on by `default`), and the watch over
    how it ends (see the module's docstring)."""

    def decorate(func: Callable[P, R]) -> Callable[..., R]:
        @functools.wraps(func)
        def wrapper(*args: Any, notify: bool, notify_in_sync: bool, **kwargs: Any) -> R:
            ctx = click.get_current_context()
            given = ctx.get_parameter_source("notify") is ParameterSource.COMMANDLINE
            if given and not notify and notify_in_sync:
                raise UsageError("--no-notify and --notify-in-sync contradict each other")
            watch = _Watch(
                command,
                enabled=notify or notify_in_sync,
                in_sync=notify_in_sync,
                asked=(given and notify) or notify_in_sync,
                found=_destinations(),
            )
            ctx.call_on_close(functools.partial(_finish, watch))
            token = _watching.set(watch)
            try:
                result = func(*args, **kwargs)
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
                watch.ended(code, interrupted=code == EXIT_INTERRUPTED)
                raise
            except KeyboardInterrupt:
                watch.ended(EXIT_INTERRUPTED, interrupted=True)
                raise
            except ReconcilerError as error:
                watch.ended(error.exit_code, error)
                raise
            except Exception as error:
                watch.ended(1, error)
                raise
            finally:
                _watching.reset(token)
            watch.ended(0)
            return result

        events = (
            "drift found or failed" if command == "plan" else "applied, failed or rollout failed"
        )
        option = click.option(
            "--notify/--no-notify",
            default=default,
            show_default=True,
            help=f"Post the outcome ({events}) to the webhooks in "
            f"{notifications.SLACK_URL_ENV} and {notifications.WEBHOOK_URL_ENV}; nothing is "
            "posted while neither is set.",
        )
        in_sync = click.option(
            "--notify-in-sync",
            is_flag=True,
            help="Post also when there is nothing to change (implies --notify).",
        )
        return option(in_sync(wrapper))

    return decorate


def _destinations() -> notifications.Destinations:
    return notifications.destinations(os.environ)


def _finish(watch: _Watch) -> None:
    """Post the notification of the command that just ended; say on stderr how it went."""
    if not watch.enabled or watch.exit_code is None:
        return
    try:
        _post(watch)
    except KeyboardInterrupt:
        _say(
            "Warning: interrupted while posting the notification. The exit status is not affected."
        )
    except Exception as error:  # a notification never fails the command
        _say(
            f"Warning: could not post the notification: internal error ({type(error).__name__})."
            " The exit status is not affected."
        )


def _post(watch: _Watch) -> None:
    from reconciler.cli.interrupts import run_async

    assert watch.exit_code is not None
    for problem in watch.found.problems:
        _say(f"Warning: {problem}.")
    if not watch.found.found:
        if watch.asked and not watch.found.configured:
            _say(
                f"Warning: --notify: neither {notifications.SLACK_URL_ENV} nor {notifications.WEBHOOK_URL_ENV} "
                "is set; no notification was posted."
            )
        return
    link = notifications.run_link(os.environ)
    ending = notifications.Ending(watch.exit_code, watch.error, watch.interrupted)
    subject = watch.subject
    if watch.command == "plan":
        plan = subject if isinstance(subject, Plan) else None
        notification = notifications.plan_notification(
            plan, ending, in_sync=watch.in_sync, link=link
        )
    else:
        run = None if isinstance(subject, Plan) else subject
        notification = notifications.apply_notification(
            run, ending, in_sync=watch.in_sync, link=link
        )
    if notification is None:
        return
    deliveries = run_async(notifications.send(notification, watch.found, timing=delivery_timing()))
    for delivery in deliveries:
        _say(notifications.describe(delivery, notification))


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError, OutputError):  # stderr gone: nothing to do
        echo(line, err=True)
