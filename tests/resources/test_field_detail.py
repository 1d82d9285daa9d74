"""Field-level detail: a one-item change in a long list, or one changed line of a long text,
reads as that item or line in every output format (the two cases of the audit).

Changes are computed by the resource modules from manifest and live values, then rendered,
so these tests cover the path a reviewer sees, not hand-built diffs.
"""

from __future__ import annotations

import json
from types import MappingProxyType

from reconciler.manifest.model import Build, Environment, LiteralValue, Policy, Runtime, Variable
from reconciler.plan import secrets
from reconciler.plan.changes import (
    ABSENT,
    SENSITIVE,
    Change,
    FieldDiff,
    ItemEdit,
    Plan,
    PolicyEdit,
    PolicyListDetail,
)
from reconciler.plan.kinds.base import Location, list_item_edits
from reconciler.plan.kinds.policies import plan_policies, read_policies
from reconciler.plan.kinds.settings import plan_settings, read_environment
from reconciler.plan.kinds.variables import READ_OPERATION, live_variables, plan_variables
from reconciler.report.plan_json import render_json, render_markdown, render_text
from reconciler.sensitive import Secret

REF = Location("proj_12345678", "app_12345678", "production", "env_12345678")
LONGEST_LINE = 200

OFFICE = [f"10.0.{i // 200}.{i % 200}/32" for i in range(60)]
CERT = "-----BEGIN CERTIFICATE-----\n" + "".join(
    f"MIIDdzCCAl+gAwIBAgIEb{i:02d}Tq0ZjANBgkqhkiG9w0BAQsFADBsMRAwDgYDVQQGEwdVbmtub3du{i:02d}\n"
    for i in range(28)
) + "-----END CERTIFICATE-----\n"  # fmt: skip


def _policy(ips: list[str], methods: tuple[str, ...] = ("GET",)) -> Policy:
    frozen = MappingProxyType
    return Policy(
        name="office-only",
        enabled=True,
        match=(
            frozen({"path": frozen({"path": frozen({"prefix": "/admin"})})}),
            frozen({"remoteIp": frozen({"notIn": tuple(ips)})}),
            frozen({"method": frozen({"methods": methods})}),
        ),
        rule_kind="firewall",
        rule=frozen({"action": "ACTION_DENY"}),
    )


def _live_policy(ips: list[str], methods: list[str] | None = None) -> dict[str, object]:
    return {
        "id": "pol_12345678",
        "name": "office-only",
        "enabled": True,
        "match": [
            {"path": {"path": {"prefix": "/admin"}}},
            {"remoteIp": {"notIn": ips}},
            {"method": {"methods": methods or ["GET"]}},
        ],
        "firewall": {"action": "ACTION_DENY"},
    }


def _policies_change(ips: list[str], live_ips: list[str], **kw: object) -> Change | None:
    environment = Environment("production", policies=(_policy(ips, **kw),))  # type: ignore[arg-type]
    return plan_policies("shop", "web", environment, read_policies([_live_policy(live_ips)]), REF)


def _changed_policy(change: Change) -> PolicyEdit:
    """The one policy the change of a policy list changes in place."""
    assert isinstance(change.detail, PolicyListDetail)
    (edit,) = [e for e in change.detail.edits if e.op == "change"]
    return edit


def _variable_change(value: str, live_value: str) -> Change:
    variable = Variable("CERT", LiteralValue(value), "recoverable")
    live = [{"key": "CERT", "kind": "recoverable", "value": live_value}]
    environment = Environment("production", variables=(variable,))
    current = live_variables(READ_OPERATION, live)
    result = plan_variables(
        "shop", "web", environment, current, REF, prune=True, fingerprint_key=None
    )
    (change,) = result.changes
    return change


def _settings_change(live: dict[str, object], **sections: object) -> Change:
    environment = Environment("production", **sections)  # type: ignore[arg-type]
    live_environment = read_environment({"slug": "production", **live})
    change = plan_settings("shop", "web", environment, live_environment, REF)
    assert change is not None
    return change


def _outputs(change: Change) -> dict[str, str]:
    plan = Plan(changes=(change,))
    return {"text": render_text(plan), "markdown": render_markdown(plan), "json": render_json(plan)}


def _body(text: str) -> list[str]:
    """The lines inside the change's `{ ... }` block of the text rendering."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(" {"))
    return lines[start + 1 : lines.index("    }", start)]


def _assert_short_lines(outputs: dict[str, str]) -> None:
    for name in ("text", "markdown"):
        longest = max(outputs[name].splitlines(), key=len)
        assert len(longest) <= LONGEST_LINE, (name, len(longest))


# --------------------------------------------------------------------------- audit case 1


def test_one_ip_changed_in_a_60_entry_list_shows_that_ip_only():
    wanted = list(OFFICE)
    wanted[7] = "10.9.9.9/32"
    change = _policies_change(wanted, OFFICE)
    assert change is not None
    edit = _changed_policy(change)
    (diff,) = edit.diffs
    assert diff.path == "match[1].remoteIp.notIn"
    # a set for the gateway: the old range left it, the new one came
    assert diff.items == (
        ItemEdit("remove", 7, None, "10.0.0.7/32", None),
        ItemEdit("insert", None, 7, None, "10.9.9.9/32"),
    )
    outputs = _outputs(change)
    assert _body(outputs["text"]) == [
        '      ~ [0] name = "office-only"',
        "          ~ match[1].remoteIp.notIn: 60 items -> 60 items",
        '              - [7] = "10.0.0.7/32"',
        '              + [7] = "10.9.9.9/32"',
        "                # (59 unchanged items hidden)",
    ]
    assert [line for line in outputs["markdown"].splitlines() if "10." in line] == [
        '-         [7] = "10.0.0.7/32"',
        '+         [7] = "10.9.9.9/32"',
    ]
    _assert_short_lines(outputs)
    # the JSON keeps both whole lists and adds the edits
    (json_change,) = json.loads(outputs["json"])["changes"]
    (json_diff,) = json_change["policy_edits"][0]["diffs"]
    assert json_diff["before"] == OFFICE and json_diff["after"] == wanted
    assert json_diff["items"] == [
        {
            "op": "remove",
            "before_index": 7,
            "after_index": None,
            "before": "10.0.0.7/32",
            "after": None,
        },
        {"op": "insert", "before_index": None, "after_index": 7, "before": None, "after": "10.9.9.9/32"},
    ]  # fmt: skip


def test_ranges_added_and_removed_anywhere_are_named_not_shifted():
    wanted = ["192.0.2.0/24", *OFFICE[:30], *OFFICE[31:]]
    change = _policies_change(wanted, OFFICE)
    assert change is not None
    body = _body(render_text(Plan(changes=(change,))))
    assert body[1:] == [
        "          ~ match[1].remoteIp.notIn: 60 items -> 60 items",
        '              + [0] = "192.0.2.0/24"',
        '              - [30] = "10.0.0.30/32"',
        "                # (59 unchanged items hidden)",
    ]


def test_reordering_a_set_like_list_shows_the_positions_that_change():
    """The comparison is unchanged (order is sent as written), so a reorder is still a change;
    its detail says which positions get which range instead of showing nothing."""
    wanted = [OFFICE[1], OFFICE[0], *OFFICE[2:]]
    change = _policies_change(wanted, OFFICE)
    assert change is not None
    (diff,) = _changed_policy(change).diffs
    assert [(e.op, e.before_index, e.after_index) for e in diff.items] == [
        ("change", 0, 0),
        ("change", 1, 1),
    ]


def test_short_method_lists_are_shown_whole():
    change = _policies_change(OFFICE, OFFICE, methods=("GET", "POST"))
    assert change is not None
    body = _body(render_text(Plan(changes=(change,))))
    assert '          ~ match[2].method.methods = ["GET"] -> ["GET", "POST"]' in body


def test_equal_lists_in_other_number_forms_are_no_change():
    assert list_item_edits([1, 2.0, "a"], [1.0, 2, "a"]) == ()
    assert _policies_change(OFFICE, list(OFFICE)) is None


# --------------------------------------------------------------------------- audit case 2


def test_one_line_changed_in_a_30_line_value_shows_that_line_with_context():
    wanted = CERT.replace("AgIEb12Tq0", "AgIEb12XXXX")
    change = _variable_change(wanted, CERT)
    (diff,) = [d for d in change.diffs if d.path == "value"]
    assert diff.before == CERT and diff.after == wanted  # the plan keeps the whole values
    outputs = _outputs(change)
    body = _body(outputs["text"])
    assert body == [
        "      ~ value: 30 lines -> 30 lines",
        "            # (11 unchanged lines hidden)",
        "            " + CERT.splitlines()[11],
        "            " + CERT.splitlines()[12],
        "          - " + CERT.splitlines()[13],
        "          + " + wanted.splitlines()[13],
        "            " + CERT.splitlines()[14],
        "            " + CERT.splitlines()[15],
        "            # (14 unchanged lines hidden)",
    ]
    markdown = outputs["markdown"].splitlines()
    assert "-     " + CERT.splitlines()[13] in markdown
    assert "+     " + wanted.splitlines()[13] in markdown
    assert "      " + CERT.splitlines()[12] in markdown  # context: no symbol, not highlighted
    _assert_short_lines(outputs)
    (json_diff,) = [
        d for d in json.loads(outputs["json"])["changes"][0]["diffs"] if d["path"] == "value"
    ]
    assert json_diff["before"] == CERT and json_diff["after"] == wanted
    assert "items" not in json_diff


def test_a_multi_line_write_only_value_stays_masked_everywhere():
    key = b"fingerprint-key"
    old = CERT.replace("AgIEb05", "SECRET-OLD-LINE")
    new = CERT.replace("AgIEb05", "SECRET-NEW-LINE")
    fingerprint = secrets.fingerprint(key, "variable.shop/web/production/TLS_KEY", Secret(old))
    live = [
        {
            "key": "TLS_KEY",
            "kind": "writeonly",
            "description": secrets.with_fingerprint("tls", fingerprint),
        }
    ]
    variable = Variable("TLS_KEY", LiteralValue(new), "writeonly", description="tls")
    environment = Environment("production", variables=(variable,))
    current = live_variables(READ_OPERATION, live)
    result = plan_variables(
        "shop", "web", environment, current, REF, prune=True, fingerprint_key=key
    )
    (change,) = result.changes
    outputs = _outputs(change)
    for output in outputs.values():
        assert "SECRET-" not in output and "MIID" not in output
        assert SENSITIVE in output
    assert "      ~ value = (sensitive value) -> (sensitive value)" in outputs["text"].splitlines()


# --------------------------------------------------------------------------- settings lists

LIVE_SETTINGS = {
    "runtime": {"command": ["gunicorn", "app:main", "--bind", "0.0.0.0:8000", "--workers", "2",
                            "--timeout", "30", "--log-level", "info"]},
    "build": {"watchPaths": ["src/**", "package.json", "package-lock.json", "tsconfig.json",
                             "public/**", "scripts/build.mjs"]},
}  # fmt: skip


def test_an_ordered_command_edit_is_the_argument_that_changed_in_place():
    wanted = list(LIVE_SETTINGS["runtime"]["command"])  # type: ignore[index]
    wanted[5] = "4"
    wanted.insert(6, "--preload")
    change = _settings_change(LIVE_SETTINGS, runtime=Runtime(command=tuple(wanted)))
    (diff,) = change.diffs
    assert diff.items == (
        ItemEdit("change", 5, 5, "2", "4"),
        ItemEdit("insert", None, 6, None, "--preload"),
    )
    # the whole new list is what updateSettings sends
    assert change.calls[0].body["command"] == wanted
    assert _body(render_text(Plan(changes=(change,)))) == [
        "      ~ runtime.command: 10 items -> 11 items",
        '          ~ [5] = "2" -> "4"',
        '          + [6] = "--preload"',
        "            # (9 unchanged items hidden)",
    ]
    (json_diff,) = json.loads(render_json(Plan(changes=(change,))))["changes"][0]["diffs"]
    assert [item["op"] for item in json_diff["items"]] == ["change", "insert"]


def test_watch_paths_are_a_set_one_glob_added_is_one_line():
    wanted = [*LIVE_SETTINGS["build"]["watchPaths"], "vite.config.ts"]  # type: ignore[index]
    change = _settings_change(LIVE_SETTINGS, build=Build(watch_paths=tuple(wanted)))
    assert _body(render_text(Plan(changes=(change,)))) == [
        "      ~ build.watchPaths: 6 items -> 7 items",
        '          + [6] = "vite.config.ts"',
        "            # (6 unchanged items hidden)",
    ]


def test_a_list_appearing_where_there_was_none_is_shown_whole():
    change = _settings_change({"runtime": {}}, runtime=Runtime(command=("serve", "--port=80")))
    assert change.diffs == (FieldDiff("runtime.command", ABSENT, ["serve", "--port=80"]),)
    assert (
        '      + runtime.command = ["serve", "--port=80"]'
        in render_text(Plan(changes=(change,))).splitlines()
    )
