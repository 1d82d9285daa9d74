"""Fault injection (rules, fault rate, phase after), rate limit, latency, concurrency."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from reconciler.emulator.app import EmulatorConfig
from tests.emulator.helpers import make_project, ok, problem
from tests.fixtures.emulator import EmulatorServer


def _statuses(emulator: EmulatorServer, operation: str) -> list[int]:
    return [r["status"] for r in emulator.requests() if r["operation"] == operation]


def test_rule_fails_exactly_the_third_matching_call(emulator: EmulatorServer) -> None:
    emulator.set_faults(
        [{"operation": "projects.createProject", "after": 2, "times": 1, "status": 500}]
    )
    for index in range(4):
        emulator.call("projects.createProject", {"name": "P", "slug": f"shop-{index}"})
        emulator.call("projects.listProjects")  # other operations do not count
    assert _statuses(emulator, "projects.createProject") == [200, 200, 500, 200]
    assert _statuses(emulator, "projects.listProjects") == [200] * 4
    slugs = [p["slug"] for p in ok(emulator.call("projects.listProjects"))["data"]]
    assert slugs == ["shop-0", "shop-1", "shop-3"]  # phase before: nothing was processed


def test_phase_after_processes_then_fails(emulator: EmulatorServer) -> None:
    emulator.set_faults(
        [{"operation": "projects.createProject", "status": 503, "phase": "after", "times": 1}]
    )
    body = {"name": "Shop", "slug": "shop"}
    problem(emulator.call("projects.createProject", body), 503)
    assert [p["slug"] for p in ok(emulator.call("projects.listProjects"))["data"]] == ["shop"]
    problem(emulator.call("projects.createProject", body), 409)  # a blind retry would conflict


def test_429_carries_retry_after_and_first_match_wins(emulator: EmulatorServer) -> None:
    emulator.set_faults(
        [
            {"operation": "projects.listProjects", "status": 429, "retryAfter": 7, "times": 1},
            {"operation": "projects.listProjects", "status": 429, "times": 1},
            {"operation": "projects.listProjects", "status": 429, "retryAfter": None, "times": 1},
            {"status": 500, "times": 1},
        ]
    )
    first = emulator.call("projects.listProjects")
    problem(first, 429)
    assert first.headers["retry-after"] == "7"
    second = emulator.call("projects.listProjects")
    assert second.status_code == 429 and second.headers["retry-after"] == "1"
    third = emulator.call("projects.listProjects")  # null: the header is left out
    assert third.status_code == 429 and "retry-after" not in third.headers
    problem(emulator.call("projects.getProject", {"project": "abc"}), 500)  # any operation
    problem(emulator.call("projects.getProject", {"project": "abc"}), 404)


def test_probability_zero_never_fires_and_reset_clears_rules(emulator: EmulatorServer) -> None:
    emulator.set_faults([{"status": 500, "probability": 0}])
    assert all(emulator.call("projects.listProjects").status_code == 200 for _ in range(5))
    emulator.set_faults([{"status": 500}])
    problem(emulator.call("projects.listProjects"), 500)
    emulator.reset()
    ok(emulator.call("projects.listProjects"))
    assert len(emulator.requests()) == 1


def test_latency_rule_without_status_only_delays(emulator: EmulatorServer) -> None:
    # A wide margin: on a loaded CI machine an undelayed call can take a good part of 150 ms.
    emulator.set_faults([{"operation": "projects.listProjects", "latencyMs": 600, "times": 1}])
    started = time.monotonic()
    ok(emulator.call("projects.listProjects"))
    assert time.monotonic() - started >= 0.6
    started = time.monotonic()
    ok(emulator.call("projects.listProjects"))
    assert time.monotonic() - started < 0.6


def test_fault_rate_is_seeded_and_uses_listed_statuses(start_emulator) -> None:
    def run() -> list[int]:
        server = start_emulator(EmulatorConfig(dev_key="k", fault_rate=0.5, seed=11))
        statuses = [server.call("domains.listDomains").status_code for _ in range(40)]
        statuses += [server.call("projects.listProjects").status_code for _ in range(40)]
        return statuses

    first, second = run(), run()
    assert first == second
    assert set(first[:40]) <= {200, 429, 500, 503} and set(first[40:]) <= {200, 429, 500}
    assert 10 < first.count(200) < 70
    assert 503 in first[:40]


def test_global_latency(start_emulator) -> None:
    server = start_emulator(EmulatorConfig(dev_key="k", latency_ms=120))
    started = time.monotonic()
    ok(server.call("projects.listProjects"))
    assert time.monotonic() - started >= 0.12


def test_rate_limit_answers_429_with_retry_after(start_emulator) -> None:
    server = start_emulator(EmulatorConfig(dev_key="k", rate_limit=5))
    responses = [server.call("projects.listProjects") for _ in range(12)]
    limited = [r for r in responses if r.status_code == 429]
    assert limited and responses[0].status_code == 200
    assert all(int(r.headers["retry-after"]) >= 1 for r in limited)
    problem(limited[0], 429)


def test_concurrent_writes_never_corrupt_state(emulator: EmulatorServer) -> None:
    def create(index: int) -> int:
        return emulator.call(
            "projects.createProject", {"name": "P", "slug": f"p-{index}"}
        ).status_code

    def clash(_: int) -> int:
        return emulator.call("projects.createProject", {"name": "P", "slug": "same"}).status_code

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(create, range(40))) == [200] * 40
        clashes = list(pool.map(clash, range(16)))
    assert clashes.count(200) == 1 and clashes.count(409) == 15
    projects = emulator.state()["projects"]
    assert len(projects) == 41 and len({p["slug"] for p in projects.values()}) == 41
    make_project(emulator, "after")
