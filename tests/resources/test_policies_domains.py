"""policies.py (normalisation, alignment) and domains.py (moves, prune, conflicts)."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import given
from hypothesis import strategies as st

from reconciler.manifest.model import Environment, Policy
from reconciler.plan.changes import Action, PolicyListDetail
from reconciler.plan.kinds import domains, policies
from reconciler.plan.kinds.base import Location

REF = Location("proj_12345678", "app_12345678", "production", "env_12345678")


def desired(name, ip="10.0.0.0/8", **kw):
    return Policy(
        name=name,
        enabled=kw.get("enabled", True),
        match=(MappingProxyType({"remoteIp": MappingProxyType({"in": (ip,)})}),),
        rule_kind="firewall",
        rule=MappingProxyType({"action": "ACTION_DENY"}),
    )


def live(name, ip="10.0.0.0/8", **extra):
    return {"id": f"pol_{name}xxxx", "name": name, "enabled": True,
            "match": [{"remoteIp": {"in": [ip]}}], "firewall": {"action": "ACTION_DENY"}, **extra}  # fmt: skip


def plan(wanted, current):
    environment = Environment("production", policies=tuple(wanted))
    live = None if current is None else policies.read_policies(current)
    return policies.plan_policies("shop", "web", environment, live, REF)


def edits_of(change):
    assert isinstance(change.detail, PolicyListDetail)
    return change.detail.edits


def test_ids_false_flags_and_absent_match_are_normalised_away():
    logging_live = {"id": "pol_1", "name": "log", "enabled": False, "match": [],
                    "logging": {"requestHeaders": True, "responseHeaders": False, "query": False}}  # fmt: skip
    header_live = {"id": "pol_2", "name": "h", "enabled": True, "firewall": {"action": "ACTION_DENY"},
                   "match": [{"header": {"name": "X", "value": {"exact": "a", "ignoreCase": False}}}]}  # fmt: skip
    wanted = [
        Policy("log", False, (), "logging", MappingProxyType({"requestHeaders": True})),
        Policy("h", True, (MappingProxyType({"header": MappingProxyType(
            {"name": "X", "value": MappingProxyType({"exact": "a"})})}),),
            "firewall", MappingProxyType({"action": "ACTION_DENY"})),
    ]  # fmt: skip
    assert plan(wanted, [logging_live, header_live]) is None


def test_an_insertion_mid_list_is_one_insert_among_keeps():
    current = [live(n, f"10.{i}.0.0/16") for i, n in enumerate("abcde")]
    wanted = [desired(n, f"10.{i}.0.0/16") for i, n in enumerate("abcde")]
    wanted.insert(2, desired("new", "192.0.2.0/24"))
    change = plan(wanted, current)
    assert [e.op for e in edits_of(change)] == ["keep", "keep", "insert", "keep", "keep", "keep"]
    (call,) = change.calls
    assert [p["name"] for p in call.body["policies"]] == ["a", "b", "new", "c", "d", "e"]
    assert "id" not in call.body["policies"][0]
    assert call.permission == "environment.env_12345678.set_policies"


def test_a_removal_and_a_change_are_aligned_by_content():
    current = [live("a"), live("b"), live("c", "10.3.0.0/16"), live("d")]
    wanted = [desired("a"), desired("c", "10.9.0.0/16"), desired("d")]
    edits = edits_of(plan(wanted, current))
    assert [(e.op, e.before_index, e.after_index) for e in edits] == [
        ("keep", 0, 0),
        ("change", 1, 1),
        ("remove", 2, None),
        ("keep", 3, 2),
    ] or [e.op for e in edits].count("remove") == 1
    changed = next(e for e in edits if e.op == "change")
    assert all(d.path for d in changed.diffs)


def test_reorder_and_empty_lists():
    assert plan([], []) is None
    assert plan([], None) is None  # a new app with an empty list: nothing to send
    change = plan([], [live("a")])
    assert change.action is Action.UPDATE and change.calls[0].body["policies"] == []
    swapped = plan([desired("b"), desired("a")], [live("a"), live("b")])
    assert swapped is not None


# --- domains --------------------------------------------------------------------------------


def environment(env, hosts, live_domains, prune=True):
    return domains.EnvironmentDomains(
        project="shop", app="web", environment=env, hosts=tuple(hosts),
        positions={}, live=None if live_domains is None else tuple(live_domains),
        ref=Location("proj_1", "app_1", env, f"env_{env}"), prune=prune,
    )  # fmt: skip


def domain(host, env):
    return domains.LiveDomain.parse("domains.listDomains", {
        "id": f"dom_{host}", "domain": host, "projectId": "proj_1", "appId": "app_1",
        "environmentId": f"env_{env}", "status": "verified"})  # fmt: skip


def attached(host, project_id, app_id, environment_id):
    """A `domains.getDomain` answer: where a host is attached."""
    return domains.LiveDomain.parse("domains.getDomain", {
        "id": f"dom_{host}", "domain": host, "projectId": project_id, "appId": app_id,
        "environmentId": environment_id, "status": "verified"})  # fmt: skip


def test_only_new_hosts_not_held_by_a_read_environment_are_looked_up():
    envs = [
        environment(
            "production",
            ["a.example.com", "moved.example.com"],
            [domain("a.example.com", "production")],
        ),
        environment("preview", ["new.example.com"], [domain("moved.example.com", "preview")]),
    ]
    assert domains.hosts_to_look_up(envs) == ["new.example.com"]


def test_move_is_delete_there_then_create_here_even_without_prune():
    envs = [
        environment("production", ["moved.example.com"], [], prune=False),
        environment(
            "preview",
            [],
            [domain("moved.example.com", "preview"), domain("kept.example.com", "preview")],
            prune=False,
        ),
    ]
    result = domains.plan_domains(envs, {}, describe=str, going_away={})
    by_address = {c.address: c for c in result.changes}
    delete = by_address["domain.shop/web/preview/moved.example.com"]
    create = by_address["domain.shop/web/production/moved.example.com"]
    assert delete.action is Action.DELETE and delete.reason == "moved"
    assert delete.calls[0].permission == "environment.env_preview.delete_domain"
    assert create.depends_on == (delete.address,)
    assert "domain.shop/web/preview/kept.example.com" not in by_address


def test_prune_conflict_and_a_host_on_an_app_going_away():
    envs = [environment("production", ["taken.example.com", "free.example.com", "old-app.example.com"],
                        [domain("stale.example.com", "production")])]  # fmt: skip
    lookups = {
        "taken.example.com": attached("taken.example.com", "proj_9", "app_9", "env_9"),
        "free.example.com": None,
        "old-app.example.com": attached("old-app.example.com", "proj_1", "app_gone", "env_x"),
    }
    result = domains.plan_domains(
        envs,
        lookups,
        describe=lambda d: "blog/site/production",
        going_away={"app_gone": "app.shop/gone"},
    )
    by_host = {c.address.rsplit("/", 1)[1]: c for c in result.changes}
    assert by_host["stale.example.com"].action is Action.DELETE
    assert by_host["taken.example.com"].reason == "attached_elsewhere"
    assert "blog/site/production" in by_host["taken.example.com"].notes[0]
    assert by_host["free.example.com"].reason is None
    assert by_host["old-app.example.com"].depends_on == ("app.shop/gone",)
    assert [n.address for n in result.notes] == ["domain.shop/web/production/taken.example.com"]
    assert by_host["free.example.com"].calls[0].body == {
        "project": "proj_1",
        "app": "app_1",
        "environment": "production",
        "domain": "free.example.com",
    }


# --- alignment properties -------------------------------------------------------------------

names = st.lists(st.sampled_from("abcdefgh"), max_size=8)


def canonical(name, ip="10.0.0.0/8"):
    return policies.normalise_policy(desired(name, ip).to_api())


@given(names, names)
def test_alignment_accounts_for_every_policy_once_in_order(before_names, after_names):
    before = [canonical(n) for n in before_names]
    after = [canonical(n) for n in after_names]
    edits = policies.align(before, after)
    before_side = [e.before_index for e in edits if e.before_index is not None]
    after_side = [e.after_index for e in edits if e.after_index is not None]
    assert sorted(before_side) == list(range(len(before)))
    assert after_side == list(range(len(after)))  # edits read in the new list's order
    for edit in edits:
        if edit.op == "keep":
            assert before[edit.before_index] == after[edit.after_index]


@given(names.filter(lambda n: len(set(n)) == len(n)), st.integers(0, 8))
def test_one_insertion_is_one_insert(before_names, position):
    before = [canonical(n) for n in before_names]
    after = list(before)
    after.insert(min(position, len(after)), canonical("new", "192.0.2.0/24"))
    ops = [e.op for e in policies.align(before, after)]
    assert ops.count("insert") == 1 and ops.count("keep") == len(before)
