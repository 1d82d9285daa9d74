"""The permissions a plan lists by default: the fewest strings that cover every one it needs.

Properties over any list of needed permission strings: every needed string is implied by the
compact list (a key holding exactly it can do everything the plan's apply does); the compact
list grants no action the plan does not need, and no write on an object beyond those the plan
names unless it writes every one of them; it is never longer. tests/proof/test_access.py
applies real plans with a key holding exactly the compact list.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reconciler.emulator.auth import ACTIONS, ApiKey
from reconciler.plan.permissions import compact, implied, parse

IDS = {"project": "proj", "app": "app", "environment": "env"}


@st.composite
def permission(draw: st.DrawFn) -> str:
    scope = draw(st.sampled_from(sorted(ACTIONS)))
    action = draw(st.sampled_from(ACTIONS[scope]))
    target = draw(st.sampled_from(["*", *(f"{IDS[scope]}_{i}" for i in range(4))]))
    return f"{scope}.{target}.{action}"


needed_lists = st.lists(permission(), max_size=40)


@given(needed_lists)
def test_every_needed_permission_is_implied_by_the_compact_list(needed: list[str]) -> None:
    listed = compact(needed)
    assert all(implied(p, listed) for p in needed)
    # as the platform checks it (the emulator's key): wildcard or the ID-specific string
    key = ApiKey("k", list(listed))
    for p in needed:
        scope, target, action = parse(p) or ("", "", "")
        assert key.allows(scope, action, None if target == "*" else target)


@given(needed_lists)
def test_the_compact_list_grants_no_action_the_plan_does_not_need(needed: list[str]) -> None:
    listed = compact(needed)
    needed_actions = {(p.split(".")[0], p.split(".")[2]) for p in needed}
    assert {(p.split(".")[0], p.split(".")[2]) for p in listed} == needed_actions
    assert len(listed) <= len(set(needed))
    assert list(listed) == sorted(set(listed))


@given(needed_lists)
def test_a_write_is_widened_only_when_every_object_the_plan_names_needs_it(
    needed: list[str],
) -> None:
    listed = compact(needed)
    objects: dict[str, set[str]] = {}
    for p in needed:
        scope, target, _ = p.split(".")
        if target != "*":
            objects.setdefault(scope, set()).add(target)
    for p in listed:
        scope, target, action = p.split(".")
        if target != "*" or action.startswith("read_") or p in needed:
            continue
        ids = {
            t for q in needed if (s := q.split("."))[0] == scope and s[2] == action for t in [s[1]]
        }
        assert ids == objects[scope] and len(ids) > 1


def test_reads_are_wildcards_and_writes_name_their_objects() -> None:
    needed = [
        "environment.env_1.read_policies",
        "environment.env_2.read_policies",
        "environment.env_1.set_policies",
        "environment.env_2.read_environment_variables",
        "project.*.read_project",
        "project.proj_1.create_app",
    ]
    assert compact(needed) == (
        "environment.*.read_environment_variables",
        "environment.*.read_policies",
        "environment.env_1.set_policies",
        "project.*.read_project",
        "project.proj_1.create_app",
    )


def test_a_write_on_every_object_the_plan_names_is_its_wildcard() -> None:
    needed = [
        "environment.env_1.read_policies",
        "environment.env_2.read_policies",
        "environment.env_1.set_policies",
        "environment.env_2.set_policies",
    ]
    assert compact(needed) == ("environment.*.read_policies", "environment.*.set_policies")
    # one object: its own string, no longer than the wildcard and granting less
    assert compact(["app.app_1.update_app"]) == ("app.app_1.update_app",)
