"""Plan rendering: text (Terraform-like), JSON (documented machine format), markdown (PR comments).

`sample_plan()` builds by hand a plan with every action, every resource kind, a
policy list edited in the middle, sensitive and unknown values, notes, a
blocked delete and a replace; test_planfile.py reuses it.
"""

from __future__ import annotations

import json
import re
from types import MappingProxyType

import pytest

from reconciler import __version__
from reconciler.errors import PlainSecretError
from reconciler.manifest.model import Position
from reconciler.plan.changes import (
    ABSENT,
    FORMAT_VERSION,
    UNKNOWN,
    Action,
    Call,
    Change,
    FieldDiff,
    Note,
    Plan,
    PolicyEdit,
    PolicyListDetail,
    SecretRef,
    SecretSource,
    VariableDetail,
)
from reconciler.platform.operations import get_operation
from reconciler.report.plan_json import plan_to_dict, render_json, render_markdown, render_text
from reconciler.report.plan_lines import outcome

SENTINEL = "SENTINEL-7c1e-secret-value"
SENSITIVE = "(sensitive value)"
ANSI = re.compile(r"\x1b\[")

DENY_ADMIN = {
    "name": "admin-only-from-office",
    "enabled": True,
    "match": [
        {"path": {"path": {"prefix": "/admin"}}},
        {"remoteIp": {"notIn": ["203.0.113.0/24"]}},
    ],
    "firewall": {"action": "ACTION_DENY"},
}
LOG_API = {"name": "log-api", "enabled": True, "logging": {"requestHeaders": True}}
BLOCK_BOTS = {
    "name": "block-bots",
    "enabled": True,
    "match": [{"header": {"name": "user-agent", "value": {"prefix": "bot"}}}],
    "firewall": {"action": "ACTION_DENY"},
}
OLD_RULE = {"name": "old-rule", "enabled": False, "firewall": {"action": "ACTION_DENY"}}
LAST = {"name": "last", "enabled": True, "logging": {"query": True}}


def _env(**fields: object) -> dict[str, object]:
    return {
        "project": "proj_12345678",
        "app": "app_12345678",
        "environment": "production",
        **fields,
    }


def project_create() -> Change:
    return Change(
        address="project.shop",
        kind="project",
        action=Action.CREATE,
        before=None,
        after={"slug": "shop", "name": "Shop", "deleteProtection": True},
        calls=(
            Call(
                get_operation("projects.createProject"),
                {"name": "Shop", "slug": "shop"},
                "project.*.create_project",
                creates=True,
            ),
            Call(
                get_operation("projects.updateProject"),
                {"project": "shop", "deleteProtection": True},
                "project.*.update_project",
            ),
        ),
        position=Position("platform/shop.yaml", 4, 5),
    )


def app_update() -> Change:
    return Change(
        address="app.shop/web",
        kind="app",
        action=Action.UPDATE,
        before={"slug": "web", "name": "Web", "git": {"repository": "acme/shop-web"}},
        after={"slug": "web", "name": "Shop Web", "git": {"repository": "acme/shop-web"}},
        diffs=(FieldDiff("name", "Web", "Shop Web"),),
        calls=(
            Call(
                get_operation("apps.updateApp"),
                {"project": "shop", "app": "app_12345678", "name": "Shop Web"},
                "app.app_12345678.update_app",
            ),
        ),
        depends_on=("project.shop",),
        position=Position("platform/shop.yaml", 8, 7),
    )


def settings_update() -> Change:
    return Change(
        address="settings.shop/web/production",
        kind="settings",
        action=Action.UPDATE,
        before={"runtime": {"vCpus": 0.5}, "build": {"buildCommand": "npm run build"}},
        after={"runtime": {"vCpus": 1}, "build": {"buildCommand": None}},
        diffs=(
            FieldDiff("runtime.vCpus", 0.5, 1),
            FieldDiff("runtime.healthcheck", ABSENT, {"method": "GET", "path": "/healthz"}),
            FieldDiff("build.buildCommand", "npm run build", None),
            FieldDiff("build.watchPaths", ["src/**"], ["src/**", "package.json"]),
            FieldDiff("build.dockerfile", "Dockerfile", ABSENT),
        ),
        calls=(
            Call(
                get_operation("environments.updateSettings"),
                _env(vCpus=1, buildCommand=None),
                "environment.env_1234.update_environment",
            ),
        ),
    )


def secret_create() -> Change:
    ref = SecretRef("fromEnv:SHOP_STRIPE_KEY", "0123456789abcdef")
    return Change(
        address="variable.shop/web/production/STRIPE_KEY",
        kind="variable",
        action=Action.CREATE,
        before=None,
        after={"key": "STRIPE_KEY", "kind": "writeonly", "value": SENSITIVE},
        diffs=(FieldDiff("value", ABSENT, SENSITIVE, sensitive=True),),
        calls=(
            Call(
                get_operation("environments.setEnvironmentVariables"),
                _env(variables=[{"key": "STRIPE_KEY", "value": ref, "kind": "writeonly"}]),
                "environment.env_1234.set_environment_variables",
            ),
        ),
        detail=VariableDetail(SecretSource("fromEnv", "SHOP_STRIPE_KEY")),
    )


def secret_unknown_update() -> Change:
    return Change(
        address="variable.shop/web/production/TLS_KEY",
        kind="variable",
        action=Action.UPDATE,
        before={"key": "TLS_KEY", "kind": "writeonly", "value": SENSITIVE},
        after={"key": "TLS_KEY", "kind": "writeonly", "value": UNKNOWN},
        diffs=(FieldDiff("value", SENSITIVE, UNKNOWN, sensitive=True, known_after_apply=True),),
        notes=("the secret's source fromFile:secrets/tls.key is missing; it is compared at apply",),
        detail=VariableDetail(SecretSource("fromFile", "secrets/tls.key")),
    )


def variable_delete() -> Change:
    return Change(
        address="variable.shop/web/production/OLD_FLAG",
        kind="variable",
        action=Action.DELETE,
        before={"key": "OLD_FLAG", "kind": "recoverable", "value": "on"},
        after=None,
        calls=(
            Call(
                get_operation("environments.removeEnvironmentVariables"),
                _env(variables=["OLD_FLAG"]),
                "environment.env_1234.remove_environment_variables",
            ),
        ),
    )


def policies_update() -> Change:
    changed_log = {**LOG_API, "enabled": False}
    edits = (
        PolicyEdit("keep", 0, 0, DENY_ADMIN, DENY_ADMIN),
        PolicyEdit("insert", None, 1, None, BLOCK_BOTS),
        PolicyEdit("change", 1, 2, LOG_API, changed_log, (FieldDiff("enabled", True, False),)),
        PolicyEdit("remove", 2, None, OLD_RULE, None),
        PolicyEdit("keep", 3, 3, LAST, LAST),
    )
    return Change(
        address="policies.shop/web/production",
        kind="policies",
        action=Action.UPDATE,
        before={"policies": [DENY_ADMIN, LOG_API, OLD_RULE, LAST]},
        after={"policies": [DENY_ADMIN, BLOCK_BOTS, changed_log, LAST]},
        calls=(
            Call(
                get_operation("gateway.setPolicies"),
                _env(policies=[DENY_ADMIN, BLOCK_BOTS, changed_log, LAST]),
                "environment.env_1234.set_policies",
            ),
        ),
        detail=PolicyListDetail(edits),
    )


def domain_create() -> Change:
    return Change(
        address="domain.shop/web/production/www.shop.example.com",
        kind="domain",
        action=Action.CREATE,
        before=None,
        after={"domain": "www.shop.example.com"},
        calls=(
            Call(
                get_operation("domains.createDomain"),
                _env(domain="www.shop.example.com"),
                "environment.env_1234.create_domain",
                creates=True,
            ),
        ),
        depends_on=("domain.shop/web/preview/www.shop.example.com",),
    )


def domain_delete() -> Change:
    return Change(
        address="domain.shop/web/preview/www.shop.example.com",
        kind="domain",
        action=Action.DELETE,
        before={"domain": "www.shop.example.com", "status": "verified"},
        after=None,
        calls=(
            Call(
                get_operation("domains.deleteDomain"),
                {"domain": "dom_123"},
                "environment.env_5678.delete_domain",
            ),
        ),
        notes=("moves to production",),
    )


def app_replace() -> Change:
    return Change(
        address="app.shop/api",
        kind="app",
        action=Action.REPLACE,
        before={
            "slug": "api",
            "name": "API",
            "sourceType": "git",
            "git": {"repository": "acme/api"},
        },
        after={
            "slug": "api",
            "name": "API",
            "sourceType": "oci",
            "oci": {"image": "ghcr.io/acme/api:1.0"},
        },
        diffs=(FieldDiff("sourceType", "git", "oci"),),
        calls=(
            Call(
                get_operation("apps.deleteApp"),
                {"project": "shop", "app": "app_api12345"},
                "app.app_api12345.delete_app",
            ),
            Call(
                get_operation("apps.createApp"),
                {
                    "project": "shop",
                    "name": "API",
                    "slug": "api",
                    "oci": {"image": "ghcr.io/acme/api:1.0"},
                },
                "project.proj_12345678.create_app",
                creates=True,
            ),
        ),
        reason="source_type_changed",
        notes=("apply refuses a replace unless run with --allow-replace",),
    )


def app_blocked() -> Change:
    return Change(
        address="app.shop/legacy",
        kind="app",
        action=Action.BLOCKED,
        before={"slug": "legacy", "name": "Legacy", "deleteProtection": True},
        after=None,
        reason="delete_protected",
    )


def sample_plan() -> Plan:
    return Plan(
        changes=(
            project_create(),
            app_update(),
            app_replace(),
            settings_update(),
            secret_create(),
            secret_unknown_update(),
            variable_delete(),
            policies_update(),
            domain_delete(),
            domain_create(),
            app_blocked(),
        ),
        notes=(
            Note(
                "warning",
                "app shop/admin is not in the manifest; it is left alone",
                "app.shop/admin",
            ),
            Note("info", "write-only variables are compared by presence and kind only"),
        ),
        permissions=("app.app_12345678.update_app", "project.*.create_project"),
        manifest_digest="sha256:aaaa",
        live_digest="sha256:bbbb",
        targets=("project.shop",),
        max_deletes=10,
        metadata=MappingProxyType({"baseUrl": "http://127.0.0.1:8787", "createdAt": 1700000000000}),
    )


def single(change: Change, **plan_fields: object) -> Plan:
    return Plan(changes=(change,), **plan_fields)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- text


class TestText:
    def test_headings_say_what_happens_to_each_address(self) -> None:
        text = render_text(sample_plan())
        for line in (
            "  # project.shop will be created",
            "  # app.shop/web will be updated in-place",
            "  # variable.shop/web/production/OLD_FLAG will be destroyed",
            "  # app.shop/api must be replaced (the source type changes between git and image)",
            "  # app.shop/legacy cannot be destroyed: delete protection is on",
        ):
            assert line in text.splitlines()

    def test_update_shows_field_diffs_with_quoted_strings(self) -> None:
        lines = render_text(sample_plan()).splitlines()
        assert '  ~ app "shop/web" {' in lines
        assert '      ~ name = "Web" -> "Shop Web"' in lines
        assert "      ~ runtime.vCpus = 0.5 -> 1" in lines
        assert '      + runtime.healthcheck = {method = "GET", path = "/healthz"}' in lines
        assert '      ~ build.buildCommand = "npm run build" -> null' in lines
        assert '      ~ build.watchPaths = ["src/**"] -> ["src/**", "package.json"]' in lines
        assert '      - build.dockerfile = "Dockerfile"' in lines

    def test_create_and_delete_show_their_attributes(self) -> None:
        lines = render_text(sample_plan()).splitlines()
        assert '  + project "shop" {' in lines
        assert '      + name = "Shop"' in lines
        assert "      + deleteProtection = true" in lines
        assert '  - variable "shop/web/production/OLD_FLAG" {' in lines
        assert '      - value = "on"' in lines

    def test_replace_shows_what_forces_it_then_the_new_object(self) -> None:
        lines = render_text(sample_plan()).splitlines()
        start = lines.index('-/+ app "shop/api" {')
        block = lines[start : lines.index("    }", start)]
        assert '      ~ sourceType = "git" -> "oci"' in block
        assert '      + oci.image = "ghcr.io/acme/api:1.0"' in block
        # sourceType is shown once, as the diff, not again as a new attribute
        assert sum("sourceType" in line for line in block) == 1
        assert "    # apply refuses a replace unless run with --allow-replace" in lines

    def test_blocked_delete_says_how_to_lift_protection_and_sends_nothing(self) -> None:
        text = render_text(sample_plan())
        assert "deleteProtection: false" in text
        assert '! app "shop/legacy"' not in text
        assert "1 deletion blocked by delete protection" in text

    def test_sensitive_and_unknown_values(self) -> None:
        lines = render_text(sample_plan()).splitlines()
        assert "      + value = (sensitive value)" in lines
        assert "      ~ value = (sensitive value) -> (known after apply)" in lines

    def test_each_secret_names_its_source_inside_its_block(self) -> None:
        text = render_text(sample_plan())
        stripe = text[text.index("# variable.shop/web/production/STRIPE_KEY") :]
        assert stripe[: stripe.index("    }")].endswith(
            "      + value = (sensitive value)\n        # value read from fromEnv SHOP_STRIPE_KEY\n"
        )
        tls = text[text.index("# variable.shop/web/production/TLS_KEY") :]
        assert "        # value read from fromFile secrets/tls.key\n    }" in tls
        assert text.count("# value read from") == 2  # only changes that send a secret

    def test_policy_list_edit_shows_one_insert_one_change_one_removal(self) -> None:
        lines = render_text(sample_plan()).splitlines()
        start = lines.index('  ~ policies "shop/web/production" {')
        block = lines[start : lines.index("    }", start)]
        assert block[1:] == [
            "        # (1 unchanged policy hidden)",
            '      + [1] name = "block-bots"',
            "          + enabled = true",
            '          + match = [{header = {name = "user-agent", value = {prefix = "bot"}}}]',
            '          + firewall.action = "ACTION_DENY"',
            '      ~ [1 -> 2] name = "log-api"',
            "          ~ enabled = true -> false",
            '      - [2] name = "old-rule"',
            "          - enabled = false",
            '          - firewall.action = "ACTION_DENY"',
            "        # (1 unchanged policy hidden)",
        ]
        # the kept policies are not repeated as if they had shifted
        assert not any("admin-only-from-office" in line or '"last"' in line for line in block)

    def test_notes_come_before_the_summary_and_permissions_last(self) -> None:
        lines = render_text(sample_plan()).splitlines()
        warning = lines.index(
            "Warning: app shop/admin is not in the manifest; it is left alone (app.shop/admin)"
        )
        info = lines.index("Note: write-only variables are compared by presence and kind only")
        summary = lines.index("Plan: 4 to add, 4 to change, 3 to destroy.")
        permissions = lines.index("Permissions needed by apply:")
        assert warning < info < summary < permissions
        assert lines[permissions + 1 :] == [
            "  app.app_12345678.update_app",
            "  project.*.create_project",
        ]

    def test_legend_lists_only_symbols_in_use(self) -> None:
        text = render_text(single(project_create()))
        assert "  + create" in text.splitlines()
        assert "update in-place" not in text
        full = render_text(sample_plan()).splitlines()
        assert "-/+ destroy and then create replacement" in full
        assert "  ! cannot be destroyed (delete protection is on; nothing is sent)" in full

    def test_no_changes(self) -> None:
        text = render_text(Plan(changes=(), notes=(Note("info", "3 apps unmanaged"),)))
        assert text.splitlines()[-1] == "No changes. Live state matches the manifest."
        assert "Note: 3 apps unmanaged" in text
        assert "Plan:" not in text

    def test_only_blocked_is_not_reported_as_no_changes(self) -> None:
        text = render_text(single(app_blocked()))
        assert "Plan: 0 to add, 0 to change, 0 to destroy." in text
        assert "1 deletion blocked by delete protection" in text
        assert "No changes." not in text
        assert "Nothing can be applied: every change of this plan is blocked." in text
        assert "will perform" not in text

    def test_too_many_deletions_warns_that_apply_will_refuse(self) -> None:
        plan = Plan(changes=(variable_delete(), domain_delete(), app_replace()), max_deletes=2)
        text = render_text(plan)
        assert (
            "more than --max-deletes (2): apply will refuse it unless you raise --max-deletes"
            in text
        )
        within = Plan(changes=plan.changes, max_deletes=3)
        assert "--max-deletes" not in render_text(within)

    def test_colour_only_when_asked(self) -> None:
        plain = render_text(sample_plan(), color=False)
        assert not ANSI.search(plain)
        coloured = render_text(sample_plan(), color=True)
        assert "\x1b[32m+\x1b[0m project" in coloured  # green create
        assert "\x1b[33m~\x1b[0m name" in coloured  # yellow update
        assert "\x1b[31m-\x1b[0m value" in coloured  # red destroy
        assert "\x1b[35m-/+\x1b[0m app" in coloured  # magenta replace
        # same content once the escape codes are removed
        assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain

    def test_quotes_stay_escaped_and_newlines_give_a_line_diff_inside_the_block(self) -> None:
        change = Change(
            address="app.shop/web",
            kind="app",
            action=Action.UPDATE,
            before=None,
            after=None,
            diffs=(
                FieldDiff("name", 'say "hi"', 'say "bye"'),
                FieldDiff("description", 'say "hi"', "two\nlines"),
            ),
        )
        lines = render_text(single(change)).splitlines()
        assert '      ~ name = "say \\"hi\\"" -> "say \\"bye\\""' in lines
        start = lines.index("      ~ description: 1 line -> 2 lines")
        # each line of the text is its own diff line, indented inside the change's block
        assert lines[start + 1 : start + 4] == [
            '          - say "hi"',
            "          + two",
            "          + lines",
        ]


# --------------------------------------------------------------------------- JSON


class TestJson:
    def test_top_level_fields(self) -> None:
        data = json.loads(render_json(sample_plan()))
        assert data["format_version"] == FORMAT_VERSION
        assert data["reconciler_version"] == __version__
        assert data["summary"] == {"add": 4, "change": 4, "destroy": 3, "blocked": 1}
        assert data["permissions"] == ["app.app_12345678.update_app", "project.*.create_project"]
        assert data["manifest_digest"] == "sha256:aaaa"
        assert data["live_digest"] == "sha256:bbbb"
        assert data["targets"] == ["project.shop"]
        assert data["max_deletes"] == 10
        assert data["metadata"] == {"baseUrl": "http://127.0.0.1:8787", "createdAt": 1700000000000}
        assert data["notes"][0] == {
            "severity": "warning",
            "message": "app shop/admin is not in the manifest; it is left alone",
            "address": "app.shop/admin",
        }

    def test_actions_use_terraform_vocabulary(self) -> None:
        by_address = {c["address"]: c for c in json.loads(render_json(sample_plan()))["changes"]}
        assert by_address["project.shop"]["actions"] == ["create"]
        assert by_address["app.shop/web"]["actions"] == ["update"]
        assert by_address["variable.shop/web/production/OLD_FLAG"]["actions"] == ["delete"]
        assert by_address["app.shop/api"]["actions"] == ["delete", "create"]
        assert by_address["app.shop/api"]["action_reason"] == "source_type_changed"
        assert by_address["app.shop/legacy"]["actions"] == ["no-op"]
        assert by_address["app.shop/legacy"]["action"] == "blocked"
        assert "action_reason" not in by_address["app.shop/web"]

    def test_change_fields(self) -> None:
        by_address = {c["address"]: c for c in json.loads(render_json(sample_plan()))["changes"]}
        project = by_address["project.shop"]
        assert project["kind"] == "project"
        assert project["before"] is None
        assert project["after"] == {"slug": "shop", "name": "Shop", "deleteProtection": True}
        assert project["position"] == "platform/shop.yaml:4:5"
        assert project["calls"][0] == {
            "operation": "projects.createProject",
            "body": {"name": "Shop", "slug": "shop"},
            "permission": "project.*.create_project",
            "creates": True,
        }
        assert by_address["app.shop/web"]["depends_on"] == ["project.shop"]
        assert by_address["settings.shop/web/production"]["position"] is None

    def test_absent_side_of_a_diff_is_an_omitted_key_null_is_kept(self) -> None:
        settings = next(
            c for c in json.loads(render_json(sample_plan()))["changes"] if c["kind"] == "settings"
        )
        diffs = {d["path"]: d for d in settings["diffs"]}
        assert "before" not in diffs["runtime.healthcheck"]
        assert diffs["runtime.healthcheck"]["after"] == {"method": "GET", "path": "/healthz"}
        assert diffs["build.buildCommand"]["after"] is None
        assert "after" not in diffs["build.dockerfile"]
        assert diffs["runtime.vCpus"] == {
            "path": "runtime.vCpus",
            "before": 0.5,
            "after": 1,
            "sensitive": False,
            "known_after_apply": False,
        }

    def test_secret_refs_and_policy_edits(self) -> None:
        changes = json.loads(render_json(sample_plan()))["changes"]
        secret = next(c for c in changes if c["address"].endswith("STRIPE_KEY"))
        variable = secret["calls"][0]["body"]["variables"][0]
        assert variable["value"] == {
            "$secret": {"source": "fromEnv:SHOP_STRIPE_KEY", "fingerprint": "0123456789abcdef"}
        }
        policies = next(c for c in changes if c["kind"] == "policies")
        assert [e["op"] for e in policies["policy_edits"]] == [
            "keep",
            "insert",
            "change",
            "remove",
            "keep",
        ]
        change = policies["policy_edits"][2]
        assert (change["before_index"], change["after_index"]) == (1, 2)
        assert change["diffs"][0]["path"] == "enabled"

    def test_keys_are_sorted_for_reviewable_snapshots(self) -> None:
        text = render_json(sample_plan())
        data = json.loads(text)
        assert list(data) == sorted(data)
        assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        assert plan_to_dict(sample_plan()) == data

    def test_plain_writeonly_value_in_a_call_is_refused(self) -> None:
        leaky = Change(
            address="variable.shop/web/production/STRIPE_KEY",
            kind="variable",
            action=Action.CREATE,
            before=None,
            after=None,
            calls=(
                Call(
                    get_operation("environments.setEnvironmentVariables"),
                    _env(
                        variables=[{"key": "STRIPE_KEY", "value": SENTINEL}]
                    ),  # API default kind: writeonly
                    "environment.*.set_environment_variables",
                ),
            ),
        )
        with pytest.raises(PlainSecretError) as caught:
            render_json(single(leaky))
        assert "STRIPE_KEY" in str(caught.value)
        assert SENTINEL not in str(caught.value)

    def test_recoverable_values_are_not_secrets(self) -> None:
        change = Change(
            address="variable.shop/web/production/NODE_ENV",
            kind="variable",
            action=Action.CREATE,
            before=None,
            after={"key": "NODE_ENV", "kind": "recoverable", "value": "production"},
            calls=(
                Call(
                    get_operation("environments.setEnvironmentVariables"),
                    _env(
                        variables=[
                            {"key": "NODE_ENV", "value": "production", "kind": "recoverable"}
                        ]
                    ),
                    "environment.*.set_environment_variables",
                ),
            ),
        )
        assert '"value": "production"' in render_json(single(change))


# --------------------------------------------------------------------------- markdown


def change_lines(markdown: str, address: str) -> list[str]:
    """The lines of one change in the markdown's diff block: its `@@` heading, its body."""
    lines = markdown.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("@@ ") and f" {address} " in line
    )
    end = start + 1
    while not lines[end].startswith(("@@ ", "```")):
        end += 1
    return lines[start:end]


class TestMarkdown:
    def test_result_line_first_then_deletion_warning(self) -> None:
        text = render_markdown(sample_plan())
        assert text.startswith("**Plan:** 4 to add, 4 to change, 3 to destroy.\n")
        caution = text.index("> [!CAUTION]")
        assert caution < text.index("```diff")
        warning = text[caution : text.index("\n\n", caution)]
        assert "**This plan destroys 3 objects:**" in warning
        assert "> - <code>app.shop/api</code> (replaced: destroyed, then created again)" in warning
        assert "> - <code>variable.shop/web/production/OLD&#95;FLAG</code>" in warning
        assert "> - <code>domain.shop/web/preview/www.shop.example.com</code>" in warning

    def test_every_change_shows_without_a_click_in_one_diff_block(self) -> None:
        text = render_markdown(sample_plan())
        # the permissions are the one folded section
        assert text.count("<details>") == 1
        assert text.count("```diff\n") == 1
        assert [line for line in text.splitlines() if line.startswith("@@ ")] == [
            f"@@ {c.action.symbol} {c.address} {outcome(c)} @@" for c in sample_plan().changes
        ]
        assert change_lines(text, "app.shop/web") == [
            "@@ ~ app.shop/web will be updated in-place @@",
            '- name = "Web"',
            '+ name = "Shop Web"',
        ]

    def test_each_secret_names_its_source_in_its_diff_block(self) -> None:
        lines = change_lines(render_markdown(sample_plan()), "variable.shop/web/production/TLS_KEY")
        assert "- value = (sensitive value)" in lines
        assert "+ value = (known after apply)" in lines
        assert "# value read from fromFile secrets/tls.key" in lines

    def test_diff_lines_start_with_their_symbol_for_github_colouring(self) -> None:
        """An update is a `-` and a `+` line (GitHub colours no `~`); a header without a value
        of its own is a context line."""
        block = change_lines(render_markdown(sample_plan()), "policies.shop/web/production")
        assert block[1:] == [
            "# (1 unchanged policy hidden)",
            '+ [1] name = "block-bots"',
            "+     enabled = true",
            '+     match = [{header = {name = "user-agent", value = {prefix = "bot"}}}]',
            '+     firewall.action = "ACTION_DENY"',
            '  [1 -> 2] name = "log-api"',
            "-     enabled = true",
            "+     enabled = false",
            '- [2] name = "old-rule"',
            "-     enabled = false",
            '-     firewall.action = "ACTION_DENY"',
            "# (1 unchanged policy hidden)",
        ]

    def test_no_changes(self) -> None:
        text = render_markdown(Plan(changes=()))
        result, digest = text.split("\n\n")
        assert result == "**No changes. Live state matches the manifest.**"
        # an empty plan's digest too: a merge must not send what a review saw as no change
        assert digest.startswith("<sub>Reviewed-plan digest: <code>calls:v1:presence:")

    def test_no_deletion_warning_without_deletions(self) -> None:
        text = render_markdown(single(project_create()))
        assert "[!CAUTION]" not in text
        assert text.startswith("**Plan:** 1 to add, 0 to change, 0 to destroy.")

    def test_cut_at_a_whole_change_with_a_note_under_a_small_limit(self) -> None:
        plan = sample_plan()
        full = render_markdown(plan)
        limit = len(full) // 2
        cut = render_markdown(plan, limit=limit, full_plan_url="https://ci.example.com/runs/7")
        assert len(cut) < limit
        assert cut.startswith("**Plan:** 4 to add, 4 to change, 3 to destroy.")
        assert cut.count("<details>") == cut.count("</details>")  # no block cut in half
        assert cut.count("```") % 2 == 0
        shown = [line for line in cut.splitlines() if line.startswith("@@ ")]
        assert 0 < len(shown) < len(plan.changes)
        left_out = plan.changes[len(shown) :]
        note = cut[cut.index("**Left out to fit one comment:**") :]
        # exactly what: each change left out by its address, and the permissions
        assert f"> - {len(left_out)} changes: " in note
        for change in left_out:
            assert f"<code>{change.address}</code>" in note.replace("&#95;", "_")
        assert "the permissions apply needs" in note
        assert "> The whole plan: <https://ci.example.com/runs/7>" in note
        # the digest is never cut
        assert cut.rstrip().splitlines()[-1].startswith("<sub>Reviewed-plan digest:")

    def test_a_cut_comment_without_a_url_says_how_to_see_the_whole_plan(self) -> None:
        plan = sample_plan()
        cut = render_markdown(plan, limit=len(render_markdown(plan)) // 2)
        assert "<code>reconciler show PLANFILE</code>" in cut

    def test_a_url_that_is_not_one_is_not_written(self) -> None:
        plan = sample_plan()
        cut = render_markdown(
            plan, limit=len(render_markdown(plan)) // 2, full_plan_url="javascript:alert(1)"
        )
        assert "javascript" not in cut

    @pytest.mark.parametrize("limit", [200, 400, 1000, 3000])
    def test_always_under_the_limit(self, limit: int) -> None:
        text = render_markdown(sample_plan(), limit=limit)
        assert len(text) < limit
        assert text.startswith("**Plan:**")

    @pytest.mark.parametrize("limit", [1000, 3000])
    def test_the_digest_line_is_never_cut(self, limit: int) -> None:
        text = render_markdown(sample_plan(), limit=limit)
        assert text.endswith("applies exactly these calls)</sub>\n")

    def test_default_limit_leaves_room_for_a_heading_in_one_github_comment(self) -> None:
        many = Plan(
            changes=tuple(
                Change(
                    address=f"variable.shop/web/production/KEY_{i}",
                    kind="variable",
                    action=Action.CREATE,
                    before=None,
                    after={"key": f"KEY_{i}", "kind": "recoverable", "value": "x" * 200},
                )
                for i in range(400)
            )
        )
        text = render_markdown(many)
        assert 60000 < len(text) < 65536 - 1000
        assert "**Left out to fit one comment:**" in text

    def test_backticks_in_values_cannot_close_the_code_block(self) -> None:
        change = Change(
            address="app.shop/web",
            kind="app",
            action=Action.UPDATE,
            before=None,
            after=None,
            diffs=(FieldDiff("name", "a", "```</details> <b>x</b>"),),
        )
        text = render_markdown(single(change))
        assert "\n````diff\n" in text
        assert "\n````\n" in text
        assert text.count("</details>") == 1  # the value's own, inside the code block

    def test_html_outside_code_blocks_is_escaped(self) -> None:
        change = Change(
            address="domain.shop/web/production/<script>.example.com",
            kind="domain",
            action=Action.DELETE,
            before=None,
            after=None,
        )
        plan = Plan(changes=(change,), notes=(Note("warning", "watch <this> `tick`"),))
        text = render_markdown(plan)
        outside = re.sub(r"```diff\n.*?\n```\n", "", text, flags=re.S)
        assert "<script>" not in outside
        assert "&lt;script&gt;" in outside
        assert "watch &lt;this&gt; &#96;tick&#96;" in outside
        # inside the diff block it is text: GitHub renders no HTML there
        assert "@@ - domain.shop/web/production/<script>.example.com will be destroyed @@" in text


# --------------------------------------------------------------------------- secrets


def test_sentinel_secret_appears_in_no_format() -> None:
    """A secret present only as a SecretRef and in sensitive diffs never reaches the output."""
    ref = SecretRef("fromEnv:SHOP_STRIPE_KEY", "fedcba9876543210")
    change = Change(
        address="variable.shop/web/production/STRIPE_KEY",
        kind="variable",
        action=Action.UPDATE,
        before={"key": "STRIPE_KEY", "kind": "writeonly", "value": SENTINEL},
        after={"key": "STRIPE_KEY", "kind": "writeonly", "value": ref},
        diffs=(FieldDiff("value", SENTINEL, SENTINEL + "-new", sensitive=True),),
        calls=(
            Call(
                get_operation("environments.setEnvironmentVariables"),
                _env(variables=[{"key": "STRIPE_KEY", "value": ref, "kind": "writeonly"}]),
                "environment.*.set_environment_variables",
            ),
        ),
    )
    safe = Change(**{**change.__dict__, "before": {"key": "STRIPE_KEY", "kind": "writeonly"}})
    plan = Plan(changes=(change,))
    outputs = [render_text(plan), render_text(plan, color=True), render_markdown(plan)]
    outputs.append(render_json(Plan(changes=(safe,))))
    for output in outputs:
        assert SENTINEL not in output
        assert SENSITIVE in output
    # the display form with a plain write-only value is refused by the machine format
    with pytest.raises(PlainSecretError) as caught:
        render_json(plan)
    assert SENTINEL not in str(caught.value)


def test_control_characters_in_plan_text_cannot_inject_escape_codes() -> None:
    """Values, notes and addresses come from manifests and API answers: print them inert."""
    evil = "\x1b[31mred\x9b2J\nnext"
    change = Change(
        address=f"variable.shop/web/production/{evil}",
        kind="variable",
        action=Action.UPDATE,
        before=None,
        after=None,
        diffs=(FieldDiff(f"value{evil}", evil, {evil: evil}),),
        reason=evil,
        notes=(evil,),
        detail=VariableDetail(SecretSource("fromFile", evil)),
    )
    plan = Plan(changes=(change,), notes=(Note("error", evil, evil),), permissions=(evil,))
    for output in (render_text(plan), render_markdown(plan)):
        assert "\x1b" not in output and "\x9b" not in output
        assert "\\x1b" in output or "\\u001b" in output  # shown, not dropped
        assert "\nnext" not in output


def test_markdown_counts_characters_outside_the_bmp_twice() -> None:
    """GitHub counts UTF-16 units: a comment of emoji must be cut earlier than its len()."""
    changes = tuple(
        Change(
            address=f"app.shop/app{i}",
            kind="app",
            action=Action.CREATE,
            before=None,
            after={"name": "\U0001f680" * 300},
        )
        for i in range(20)
    )
    text = render_markdown(Plan(changes=changes), limit=5000)
    assert len(text.encode("utf-16-le")) // 2 < 5000
    assert "**Left out to fit one comment:**" in text


def test_markdown_drops_the_permissions_first_with_a_note() -> None:
    permissions = tuple(f"environment.env_{i}.set_policies" for i in range(200))
    plan = Plan(changes=(project_create(),), permissions=permissions)
    full = render_markdown(plan, show_permissions=True)
    assert "Permissions needed by apply (200)" in full
    cut = render_markdown(plan, limit=len(full) - 10, show_permissions=True)
    assert "@@ + project.shop will be created @@" in cut
    assert "Permissions needed" not in cut
    assert "> - the permissions apply needs (200 strings)" in cut
