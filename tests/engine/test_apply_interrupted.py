"""The summary of an interrupted apply, over generated plans interrupted at any call.

Whatever the plan and wherever the interrupt falls: every change of the plan is named exactly
once; "Applied" holds exactly the changes whose calls all went through; the change of the
call held in flight is "in progress", never "applied" nor "not started"; a change with no
call sent is "not started"; and the counts line agrees with the lists.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.apply import ApplyOptions, SilentObserver, execute
from reconciler.plan.changes import Plan
from reconciler.report.progress import ApplyRecord, render_interrupted_apply
from tests.engine.apply_plans import FakePlatform
from tests.engine.test_apply_properties import plans

SECTION = re.compile(r"^(?P<title>[A-Z][^\n]*) \((?P<count>\d+)\):\n(?P<lines>(?:  .*\n?)*)", re.M)


class HoldingPlatform(FakePlatform):
    """Answers like FakePlatform, except call number `hold` (from 0), which never answers."""

    def __init__(self, hold: int) -> None:
        super().__init__()
        self.hold = hold
        self.sent = 0
        self.held = asyncio.Event()
        self.held_body: Mapping[str, Any] | None = None

    async def call(self, operation: str, body: Mapping[str, Any]) -> Any:
        number, self.sent = self.sent, self.sent + 1
        if number == self.hold:
            self.held_body = body
            self.held.set()
            await asyncio.Event().wait()  # in flight until cancelled
        return await super().call(operation, body)


async def _interrupted(plan: Plan, hold: int) -> tuple[ApplyRecord, HoldingPlatform]:
    platform = HoldingPlatform(hold)
    record = ApplyRecord(SilentObserver())
    run = asyncio.ensure_future(
        execute(plan, platform, resolve=lambda ref: "x", options=ApplyOptions(), observer=record)
    )
    await asyncio.wait(
        [run, asyncio.ensure_future(platform.held.wait())], return_when="FIRST_COMPLETED"
    )
    run.cancel()  # what Ctrl-C and SIGTERM do to the running apply
    await asyncio.gather(run, return_exceptions=True)
    return record, platform


def _sections(text: str) -> dict[str, list[str]]:
    """Section title -> the addresses it lists (each line's first word, before ':' or ' (')."""
    found = {}
    for match in SECTION.finditer(text):
        lines = [line.strip() for line in match["lines"].splitlines() if line.strip()]
        assert len(lines) == int(match["count"]), match.group(0)
        found[match["title"].split(":")[0]] = [re.split(r":| \(", line)[0] for line in lines]
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=plans(), data=st.data())
def test_every_change_is_reported_once_where_the_interrupt_left_it(plan: Plan, data: Any) -> None:
    total_calls = sum(len(c.calls) for c in plan.changes)
    hold = data.draw(st.integers(0, max(0, total_calls - 1)))
    record, platform = asyncio.run(_interrupted(plan, hold))

    text = render_interrupted_apply(plan, record, "reconciler apply -f platform/")
    sections = _sections(text)
    named = [address for addresses in sections.values() for address in addresses]
    # failed-half-way changes are listed as applied (what went through) and as failed
    partly = {r.change.address for r in record.finished.values() if r.partly_applied}
    assert sorted(set(named)) == sorted(c.address for c in plan.changes)
    for address, times in Counter(named).items():
        assert times == (2 if address in partly else 1), (address, text)

    applied = set(sections.get("Applied", []))
    in_progress = set(sections.get("In progress when interrupted", []))
    not_started = set(sections.get("Not started", []))
    done = {a for a, r in record.finished.items() if r.outcome.value == "done"}
    assert applied - partly == done
    assert not in_progress & (applied | not_started)
    assert not_started.isdisjoint(record.sent)  # not one call of theirs was sent
    if platform.held_body is not None:  # the held call's change is in flight, nothing else
        held = {a for a in record.sent if a not in record.finished}
        assert held and held <= in_progress
    counts = re.search(r"(\d+) in progress, (\d+) not started\.", text)
    assert counts is not None
    assert (int(counts[1]), int(counts[2])) == (len(in_progress), len(not_started))
