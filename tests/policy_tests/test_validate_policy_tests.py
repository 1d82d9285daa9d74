"""`validate` on `policyTests` (errors at file:line:column) and on what a policy list does to
requests (warnings at the policy or member they are about)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciler.manifest.validate import load_manifest
from tests.fixtures.cli import run_cli

HEAD = """\
version: 1
projects:
  shop:
    apps:
      web:
        oci: {image: "ghcr.io/acme/web:1.0"}
"""

POLICIES = """\
            policies:
              - name: admin-only-from-office
                enabled: true
                match:
                  - path: {path: {prefix: /admin}}
                  - remoteIp: {notIn: ["203.0.113.0/24"]}
                firewall: {action: ACTION_DENY}
              - name: log-api
                enabled: true
                match: [{path: {path: {prefix: /api}}}]
                logging: {requestHeaders: true}
"""


def validate(tmp_path: Path, body: str) -> tuple[int, list[dict[str, Any]]]:
    path = tmp_path / "platform.yaml"
    path.write_text(HEAD + body, encoding="utf-8")
    result = run_cli(["validate", "-f", str(path), "--format", "json"])
    # not the subject here: the production environments of these manifests have no health
    # check, which the built-in rule production-healthcheck warns about
    problems = json.loads(result.stdout)
    return result.exit_code, [p for p in problems if p.get("rule") != "production-healthcheck"]


def places(problems: list[dict[str, Any]], severity: str) -> list[tuple[int, int, str]]:
    return [(p["line"], p["column"], p["path"]) for p in problems if p["severity"] == severity]


def messages(problems: list[dict[str, Any]]) -> str:
    return "\n".join(p["message"] for p in problems)


def env(tests: str, policies: str = POLICIES) -> str:
    return "        environments:\n          production:\n" + policies + tests


def test_a_valid_test_list_builds_into_the_model(tmp_path: Path) -> None:
    tests = """\
            policyTests:
              - name: admin is closed to the internet
                request:
                  method: GET
                  path: /admin/users
                  query: {debug: "1", tag: [a, b]}
                  headers: {X-Api-Key: abc}
                  clientIp: 198.51.100.7
                expect: deny
                decidedBy: admin-only-from-office
                loggedBy: []
    """
    code, problems = validate(tmp_path, env(tests))
    assert (code, problems) == (0, [])
    manifest = load_manifest([tmp_path / "platform.yaml"])
    [test] = manifest.projects[0].app("web").environment("production").policy_tests  # type: ignore[union-attr]
    assert (test.method, test.path, test.client_ip, test.expect) == (
        "GET",
        "/admin/users",
        "198.51.100.7",
        "deny",
    )
    assert dict(test.query) == {"debug": ("1",), "tag": ("a", "b")}
    assert dict(test.headers) == {"X-Api-Key": ("abc",)}
    assert (test.decided_by, test.logged_by) == ("admin-only-from-office", ())
    assert test.pos is not None and (test.pos.line, test.pos.column) == (21, 17)


def test_names_kinds_ip_and_path_are_checked_at_their_place(tmp_path: Path) -> None:
    tests = """\
            policyTests:
              - name: t1
                request: {method: GET, path: admin, clientIp: 198.51.100.7}
                expect: deny
                decidedBy: log-api
              - name: t2
                request: {method: GET, path: "/a?b=1", clientIp: 10.0.0.0/8}
                expect: allow
                decidedBy: admin-only-from-office
                loggedBy: [log-api, no-such-policy, admin-only-from-office]
              - name: t1
                request: {method: GET, path: /, clientIp: 2001:db8::1}
                expect: allow
    """
    code, problems = validate(tmp_path, env(tests))
    assert code == 1
    base = "projects.shop.apps.web.environments.production.policyTests"
    assert places(problems, "error") == [
        (22, 46, f"{base}[0].request.path"),
        (24, 28, f"{base}[0].decidedBy"),
        (26, 46, f"{base}[1].request.path"),
        (26, 66, f"{base}[1].request.clientIp"),
        (28, 28, f"{base}[1].decidedBy"),
        (29, 37, f"{base}[1].loggedBy[1]"),
        (29, 53, f"{base}[1].loggedBy[2]"),
        (30, 23, f"{base}[2].name"),
    ]
    text = messages(problems)
    assert "starts with `/` and holds no `?`" in text
    assert (
        "'log-api' is a logging policy of shop/web/production; decidedBy names a firewall" in text
    )
    assert "'10.0.0.0/8' is not an IP address" in text
    assert "decidedBy names the firewall policy that blocks the request, so it goes with" in text
    assert "no policy of shop/web/production is named 'no-such-policy'" in text
    assert "'admin-only-from-office' is a firewall policy" in text
    assert "test 't1' is also policyTests[0] of shop/web/production" in text


def test_tests_of_an_environment_whose_policies_are_unmanaged_are_an_error(
    tmp_path: Path,
) -> None:
    body = """\
        environments:
          production:
            runtime: {port: 8080}
            policyTests:
              - name: t
                request: {method: GET, path: /, clientIp: 198.51.100.7}
                expect: allow
    """
    code, problems = validate(tmp_path, body)
    assert code == 1
    [error] = problems
    assert (error["line"], error["column"]) == (10, 13)
    assert (
        "shop/web/production has policy tests but the manifest does not manage its policies"
        in (error["message"])
    )


def test_defaults_tests_reach_both_environments_and_an_environment_list_replaces_them(
    tmp_path: Path,
) -> None:
    body = """\
        defaults:
          policies:
            - {name: deny-all, enabled: true, firewall: {action: ACTION_DENY}}
          policyTests:
            - {name: closed, request: {method: GET, path: /, clientIp: 192.0.2.1}, expect: deny}
        environments:
          preview:
            policies: []
            policyTests:
              - {name: open, request: {method: GET, path: /, clientIp: 192.0.2.1}, expect: allow}
    """
    code, problems = validate(tmp_path, body)
    assert code == 0 and places(problems, "error") == []
    app = load_manifest([tmp_path / "platform.yaml"]).projects[0].app("web")
    assert app is not None
    names = {e.name: [t.name for t in e.policy_tests] for e in app.environments}
    assert names == {"preview": ["open"], "production": ["closed"]}
    result = run_cli(["test", "-f", str(tmp_path / "platform.yaml")])
    assert result.exit_code == 0, result.output
    assert "shop/web/preview\n  PASS  open\nshop/web/production\n  PASS  closed\n" in result.stdout


def test_defaults_tests_without_policies_in_one_environment_name_that_environment(
    tmp_path: Path,
) -> None:
    body = """\
        defaults:
          policyTests:
            - {name: closed, request: {method: GET, path: /, clientIp: 192.0.2.1}, expect: deny}
        environments:
          production:
            policies: [{name: deny-all, enabled: true, firewall: {action: ACTION_DENY}}]
    """
    code, problems = validate(tmp_path, body)
    assert code == 1
    [error] = [p for p in problems if p["severity"] == "error"]
    assert error["path"] == "projects.shop.apps.web.defaults.policyTests"
    assert error["message"].startswith("shop/web/preview has policy tests")


WARNED = """\
        environments:
          production:
            policies:
              - name: deny-all
                enabled: true
                firewall: {action: ACTION_DENY}
              - name: after-deny-all
                enabled: true
                match: [{path: {path: {prefix: /x}}}]
                logging: {}
          preview:
            policies:
              - name: block-admin
                enabled: true
                match: [{path: {path: {prefix: /admin}}}, {method: {methods: [POST]}}]
                firewall: {action: ACTION_DENY}
              - name: same-conditions
                enabled: true
                match: [{method: {methods: [POST]}}, {path: {path: {prefix: /admin}}}]
                firewall: {action: ACTION_DENY}
              - name: draft
                enabled: false
                match: [{path: {path: {prefix: /admin}}}, {method: {methods: [POST]}}]
                logging: {}
              - name: unanchored
                enabled: true
                match: [{path: {path: {regex: "/api"}}, header: {name: X-A, value: {exact: "a,b"}}}]
                firewall: {action: ACTION_DENY}
"""


def test_warnings_about_the_policy_list_point_at_the_policy_or_member(tmp_path: Path) -> None:
    code, problems = validate(tmp_path, WARNED)
    assert code == 0
    base = "projects.shop.apps.web.environments"
    assert places(problems, "warning") == [
        (10, 17, f"{base}.production.policies[0]"),
        (13, 17, f"{base}.production.policies[1]"),
        (23, 17, f"{base}.preview.policies[1]"),
        (33, 32, f"{base}.preview.policies[3].match[0].path"),
        (33, 65, f"{base}.preview.policies[3].match[0].header"),
    ]
    text = messages(problems)
    assert "this enabled firewall policy has no conditions" in text
    assert (
        "policies[0] 'deny-all' before it is an enabled firewall policy without conditions" in text
    )
    assert "policies[0] 'block-admin' before it is an enabled firewall policy with the same" in text
    assert "regex-full-match" in text and "repeated-header" in text
    # the disabled `draft` after block-admin is not warned about: it is off on purpose


def test_warnings_do_not_fail_validate_unless_strict(tmp_path: Path) -> None:
    path = tmp_path / "platform.yaml"
    path.write_text(HEAD + WARNED, encoding="utf-8")
    assert run_cli(["validate", "-f", str(path)]).exit_code == 0
    assert run_cli(["validate", "-f", str(path), "--strict"]).exit_code == 1


def test_methods_header_names_and_control_characters_are_refused_at_their_place(
    tmp_path: Path,
) -> None:
    tests = r"""
            policyTests:
              - name: t
                request:
                  method: "GE T"
                  path: "/a\r\nX-Injected: 1"
                  query: {"q\x00": "1", tag: [ok, "b\x1b[2J"]}
                  headers: {"X Y": a, X-Ok: "v\n", X-List: [fine, "tab\tis fine", "del\x7f"]}
                  clientIp: 198.51.100.7
                expect: allow
    """
    code, problems = validate(tmp_path, env(tests))
    assert code == 1
    base = "projects.shop.apps.web.environments.production.policyTests[0].request"
    assert places(problems, "error") == [
        (24, 27, f"{base}.method"),
        (25, 25, f"{base}.path"),
        (26, 27, f"{base}.query.q\\x00"),  # a key's control characters shown escaped
        (26, 51, f"{base}.query.tag[1]"),
        (27, 29, f"{base}.headers.X Y"),
        (27, 45, f"{base}.headers.X-Ok"),
        (27, 83, f"{base}.headers.X-List[2]"),
    ]
    method, path, name, value, header, header_value, listed = [
        p["message"] for p in problems if p["severity"] == "error"
    ]
    assert method == (
        "'GE T' is not an HTTP method: a method is a token of letters, digits and "
        "!#$%&'*+-.^_`|~ (no space or control character), sent as written: e.g. GET, POST"
    )
    assert path == (
        "the path holds the control character '\\r' (U+000D) at character 3, which no request "
        "carries (CR and LF end the request line): remove it, or write it percent-encoded as a "
        "client sends it (%0D)"
    )
    assert name.startswith("the name of query parameter 'q\\x00' holds the control character")
    assert value.startswith("the value holds the control character '\\x1b' (U+001B) at charac")
    assert header == (
        "'X Y' is not a header name: a name is a token of letters, digits and !#$%&'*+-.^_`|~ "
        "(no space, colon or control character)"
    )
    assert header_value == (
        "the value holds the control character '\\n' (U+000A) at character 2, which HTTP does "
        "not allow in a header value (CR and LF end the header line): remove it (a tab inside "
        "a value is allowed)"
    )
    assert listed.startswith("the value holds the control character '\\x7f' (U+007F) at")


def test_a_client_ip_no_request_comes_from_is_refused(tmp_path: Path) -> None:
    addresses = ["0.0.0.0", "::", "::ffff:0.0.0.0", "224.0.0.1", "ff02::1", "255.255.255.255"]
    tests = "            policyTests:\n" + "".join(
        f"""\
              - name: t{index}
                request: {{method: GET, path: /, clientIp: "{address}"}}
                expect: allow
"""
        for index, address in enumerate(addresses)
    )
    code, problems = validate(tmp_path, env(tests))
    assert code == 1
    base = "projects.shop.apps.web.environments.production.policyTests"
    assert places(problems, "error") == [
        (22 + 3 * i, 59, f"{base}[{i}].request.clientIp") for i in range(len(addresses))
    ]
    found = [p["message"] for p in problems]
    assert found[0] == (
        "'0.0.0.0' is the unspecified address, which no request comes from (and which every "
        "machine can bind, so a live run would send from another address): write the address "
        "of the client the test is about, e.g. 198.51.100.7 or 2001:db8::7"
    )
    assert found[1].startswith("'::' is the unspecified address, which no request comes from")
    assert found[2].startswith("'::ffff:0.0.0.0' is the unspecified address")
    assert found[3].startswith("'224.0.0.1' is a multicast address, which no request comes from")
    assert found[4].startswith("'ff02::1' is a multicast address")
    assert found[5].startswith("'255.255.255.255' is the broadcast address, which no request")


def test_a_live_run_refuses_the_unspecified_address_before_sending(tmp_path: Path) -> None:
    """Binding 0.0.0.0 always works, so a live run would send from another address and report
    that address's verdict as the test's."""
    tests = """\
            policyTests:
              - {name: t, request: {method: GET, path: /, clientIp: 0.0.0.0}, expect: allow}
    """
    path = tmp_path / "platform.yaml"
    path.write_text(HEAD + env(tests), encoding="utf-8")
    nowhere = "http://127.0.0.1:1"
    result = run_cli(
        ["test", "-f", str(path), "--live", "--live-via", nowhere, "--base-url", nowhere]
    )
    assert result.exit_code == 1
    assert "platform.yaml:21:69: " in result.stderr
    assert "'0.0.0.0' is the unspecified address, which no request comes from" in result.stderr


def test_a_key_with_a_line_break_is_shown_escaped_in_the_problem_line(tmp_path: Path) -> None:
    tests = r"""
            policyTests:
              - name: t
                request:
                  method: GET
                  path: /
                  headers: {"X\nerror: forged\e[2J": a}
                  clientIp: 198.51.100.7
                expect: allow
    """
    path = tmp_path / "platform.yaml"
    path.write_text(HEAD + env(tests), encoding="utf-8")
    result = run_cli(["validate", "-f", str(path)])
    assert result.exit_code == 1
    [line] = result.stdout.splitlines()
    assert line.startswith(
        f"{path}:26:29: projects.shop.apps.web.environments.production.policyTests[0].request"
        ".headers.X\\x0aerror: forged\\x1b[2J: 'X\\nerror: forged\\x1b[2J' is not a header name"
    )
