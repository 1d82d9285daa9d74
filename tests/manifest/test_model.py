"""Valid manifests -> the model exactly as model.py documents it."""

from __future__ import annotations

from pathlib import Path

from reconciler.manifest.model import (
    UNSET,
    FromEnv,
    FromFile,
    Healthcheck,
    LiteralValue,
    Manifest,
    Region,
)
from reconciler.manifest.validate import load_manifest
from tests.fixtures.manifests import WriteManifest

APP = """
version: 1
projects:
  shop:
    apps:
      web:
{body}
"""


def load_app(write_manifest: WriteManifest, body: str) -> Manifest:
    indented = "\n".join(" " * 8 + line for line in body.strip("\n").splitlines())
    return load_manifest([write_manifest(APP.format(body=indented))])


def test_defaults_deep_merge_into_both_environments_environment_wins(
    write_manifest: WriteManifest,
) -> None:
    manifest = load_app(
        write_manifest,
        """
defaults:
  build: {rootDirectory: ., watchPaths: [a/**, b/**]}
  runtime: {port: 3000, vCpus: 0.5, healthcheck: {method: GET, path: /h, intervalSeconds: 30}}
  regions: [{name: fra, replicas: {min: 1, max: 2}}]
  variables: {A: one, B: two}
environments:
  preview:
    runtime: {vCpus: 1, healthcheck: {path: /preview}}
    build: {watchPaths: [c/**]}
    regions: [{name: iad, replicas: {min: 1, max: 1}}]
    variables: {B: {value: override}, C: three}
""",
    )
    app = manifest.projects[0].apps[0]
    # written order first, then the environment `defaults` makes managed
    assert [e.name for e in app.environments] == ["preview", "production"]
    preview, production = app.environments
    assert preview.runtime and production.runtime and preview.build and production.build
    assert (preview.runtime.port, preview.runtime.vcpus) == (3000, 1.0)
    assert preview.runtime.healthcheck == Healthcheck("GET", "/preview", interval_seconds=30)
    assert production.runtime.healthcheck == Healthcheck("GET", "/h", interval_seconds=30)
    assert preview.build.watch_paths == ("c/**",)  # lists are replaced, not merged
    assert preview.build.root_directory == "."
    assert production.build.watch_paths == ("a/**", "b/**")
    assert [r.name for r in preview.regions] == ["iad"]  # type: ignore[union-attr]
    assert [r.name for r in production.regions] == ["fra"]  # type: ignore[union-attr]
    preview_vars = {v.key: v.source for v in preview.variables}  # type: ignore[union-attr]
    assert preview_vars == {
        "A": LiteralValue("one"),
        "B": LiteralValue("override"),
        "C": LiteralValue("three"),
    }
    assert [v.key for v in production.variables] == ["A", "B"]  # type: ignore[union-attr]
    assert production.domains is UNSET and production.policies is UNSET


def test_positions_point_at_the_file_line_each_value_came_from(
    write_manifest: WriteManifest,
) -> None:
    manifest = load_app(
        write_manifest,
        """
defaults:
  runtime: {port: 3000}
environments:
  production:
    runtime: {vCpus: 1}
""",
    )
    app = manifest.projects[0].apps[0]
    production, preview = app.environments  # `defaults` makes both managed
    assert production.runtime and preview.runtime
    positions = production.runtime.positions
    assert (positions["port"].line, positions["vCpus"].line) == (7, 10)
    assert set(preview.runtime.positions) == {"port"}
    assert positions["port"].file.endswith("manifest.yaml")
    assert manifest.projects[0].pos and manifest.projects[0].pos.line == 3
    assert app.pos and (app.pos.line, app.pos.column) == (5, 7)


def test_omitted_is_unset_and_null_clears(write_manifest: WriteManifest) -> None:
    manifest = load_app(
        write_manifest,
        """
git: null
environments:
  production:
    build: {dockerfile: null, buildCommand: make}
    runtime: {healthcheck: null, openapiSpecPath: null}
  preview:
    build: {}
""",
    )
    app = manifest.projects[0].apps[0]
    assert app.git is None and app.oci is UNSET and app.name is UNSET and app.id is None
    production, preview = app.environments
    assert production.build and production.runtime and preview.build
    assert production.build.dockerfile is None and production.build.build_command == "make"
    assert production.build.root_directory is UNSET
    assert production.runtime.healthcheck is None
    assert production.runtime.openapi_spec_path is None
    assert production.runtime.port is UNSET
    assert preview.build.dockerfile is UNSET
    assert preview.runtime is UNSET and preview.variables is UNSET


def test_healthcheck_server_defaults_are_filled(write_manifest: WriteManifest) -> None:
    manifest = load_app(
        write_manifest,
        """
environments:
  production:
    runtime: {healthcheck: {method: POST, path: /ping, initialDelaySeconds: 5}}
""",
    )
    runtime = manifest.projects[0].apps[0].environments[0].runtime
    assert runtime and runtime.healthcheck == Healthcheck(
        method="POST",
        path="/ping",
        interval_seconds=10,
        timeout_seconds=5,
        failure_threshold=3,
        initial_delay_seconds=5,
    )


def test_variable_shorthands_kinds_and_integers(
    write_manifest: WriteManifest, tmp_path: Path
) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "tls.key").write_text("-----BEGIN KEY-----\n")
    manifest = load_app(
        write_manifest,
        """
environments:
  production:
    variables:
      PORT: 3000
      NAME: web
      URL: {value: "https://x.example.com", description: backend}
      COUNT: {value: 7}
      TOKEN: {fromEnv: WEB_TOKEN}
      VISIBLE_TOKEN: {fromEnv: WEB_TOKEN, kind: recoverable}
      TLS_KEY: {fromFile: secrets/tls.key}
      HIDDEN: {value: x, kind: writeonly}
""",
    )
    variables = manifest.projects[0].apps[0].environments[0].variables
    assert variables
    by_key = {v.key: v for v in variables}
    assert list(by_key) == [
        "PORT",
        "NAME",
        "URL",
        "COUNT",
        "TOKEN",
        "VISIBLE_TOKEN",
        "TLS_KEY",
        "HIDDEN",
    ]
    assert by_key["PORT"].source == LiteralValue("3000")
    assert by_key["COUNT"].source == LiteralValue("7")
    assert by_key["URL"].description == "backend" and by_key["NAME"].description is UNSET
    kinds = {key: v.kind for key, v in by_key.items()}
    assert kinds == {
        "PORT": "recoverable",
        "NAME": "recoverable",
        "URL": "recoverable",
        "COUNT": "recoverable",
        "TOKEN": "writeonly",
        "VISIBLE_TOKEN": "recoverable",
        "TLS_KEY": "writeonly",
        "HIDDEN": "writeonly",
    }
    assert by_key["TOKEN"].source == FromEnv("WEB_TOKEN")
    assert by_key["TLS_KEY"].source == FromFile(
        str(tmp_path / "secrets" / "tls.key"), "secrets/tls.key", str(tmp_path)
    )
    assert by_key["TOKEN"].is_secret_reference and not by_key["PORT"].is_secret_reference
    assert by_key["PORT"].pos and (by_key["PORT"].pos.line, by_key["PORT"].pos.column) == (9, 15)


def test_from_file_resolves_against_the_declaring_files_directory(tmp_path: Path) -> None:
    team = tmp_path / "teams" / "shop"
    team.mkdir(parents=True)
    (team / "db.password").write_text("hunter2")
    (team / "shop.yaml").write_text(
        "version: 1\nprojects:\n  shop:\n    apps:\n      web:\n        environments:\n"
        "          production:\n            variables:\n"
        "              DB: {fromFile: db.password}\n"
    )
    manifest = load_manifest([tmp_path])
    (variable,) = manifest.projects[0].apps[0].environments[0].variables  # type: ignore[misc]
    assert variable.source == FromFile(str(team / "db.password"), "db.password", str(team))


def test_empty_collections_are_authoritative(write_manifest: WriteManifest) -> None:
    manifest = load_app(
        write_manifest,
        """
environments:
  production: {variables: {}, domains: [], policies: []}
""",
    )
    env = manifest.projects[0].apps[0].environments[0]
    assert (env.variables, env.domains, env.policies) == ((), (), ())
    assert env.build is UNSET and env.regions is UNSET


def test_hosts_lower_cased_without_trailing_dot(write_manifest: WriteManifest) -> None:
    manifest = load_app(
        write_manifest,
        """
environments:
  production: {domains: [Shop.Example.COM., www.example.com]}
""",
    )
    domains = manifest.projects[0].apps[0].environments[0].domains
    assert [d.host for d in domains] == ["shop.example.com", "www.example.com"]  # type: ignore[union-attr]


def test_runtime_numbers_and_regions(write_manifest: WriteManifest) -> None:
    manifest = load_app(
        write_manifest,
        """
environments:
  production:
    runtime: {vCpus: 2, memoryMib: 1024, storageMib: 0, command: [node, server.js]}
    regions: [{name: fra, replicas: {min: 0, max: 3}}]
""",
    )
    env = manifest.projects[0].apps[0].environments[0]
    assert env.runtime and isinstance(env.runtime.vcpus, float) and env.runtime.vcpus == 2.0
    assert env.runtime.storage_mib == 0 and env.runtime.command == ("node", "server.js")
    assert env.regions == (Region("fra", 0, 3),)


def test_policies_are_normalised_to_the_api_shape(write_manifest: WriteManifest) -> None:
    manifest = load_app(
        write_manifest,
        """
environments:
  production:
    policies:
      - name: everything
        enabled: false
        logging: {requestHeaders: true, responseBody: false, query: true}
      - name: empty-match
        enabled: true
        match: []
        firewall: {action: ACTION_DENY}
      - name: admin
        enabled: true
        match:
          - path: {path: {prefix: /admin, ignoreCase: false}}
            method: {methods: [POST]}
          - header: {name: X-Token, value: {exact: abc, ignoreCase: true}}
          - queryParam: {name: debug, present: true}
          - remoteIp: {notIn: [10.0.0.0/8, "2001:db8::/32"]}
        firewall: {action: ACTION_DENY}
""",
    )
    policies = manifest.projects[0].apps[0].environments[0].policies
    assert policies
    logging, empty, admin = policies
    assert logging.match == () and logging.rule_kind == "logging"
    assert dict(logging.rule) == {"requestHeaders": True, "query": True}
    assert empty.match == () and "match" not in empty.to_api()
    assert admin.to_api() == {
        "name": "admin",
        "enabled": True,
        "match": [
            {"path": {"path": {"prefix": "/admin"}}, "method": {"methods": ["POST"]}},
            {"header": {"name": "X-Token", "value": {"exact": "abc", "ignoreCase": True}}},
            {"queryParam": {"name": "debug", "present": True}},
            {"remoteIp": {"notIn": ["10.0.0.0/8", "2001:db8::/32"]}},
        ],
        "firewall": {"action": "ACTION_DENY"},
    }
    assert admin.pos and (admin.pos.line, admin.pos.column) == (16, 17)


def test_duplicate_policy_names_are_allowed_as_the_api_allows_them(
    write_manifest: WriteManifest,
) -> None:
    manifest = load_app(
        write_manifest,
        """
environments:
  production:
    policies:
      - {name: same, enabled: true, logging: {}}
      - {name: same, enabled: true, firewall: {action: ACTION_DENY}}
""",
    )
    assert len(manifest.projects[0].apps[0].environments[0].policies) == 2  # type: ignore[arg-type]


def test_project_and_app_fields(write_manifest: WriteManifest) -> None:
    path = write_manifest(
        """
        version: 1
        projects:
          shop:
            id: proj_12345678
            name: Shop
            deleteProtection: true
            apps:
              web:
                id: app_12345678
                name: Web
                deleteProtection: false
                git: {repository: acme/web}
              img:
                oci: {image: "ghcr.io/acme/img@sha256:0123456789abcdef0123456789abcdef"}
          empty-project: {}
          no-apps: {apps: {}}
        """
    )
    manifest = load_manifest([path])
    shop, empty, no_apps = manifest.projects
    assert (shop.id, shop.name, shop.delete_protection) == ("proj_12345678", "Shop", True)
    web, img = shop.apps
    assert (web.id, web.name, web.delete_protection) == ("app_12345678", "Web", False)
    assert web.git and web.git.repository == "acme/web" and web.git.default_branch is UNSET
    assert web.environments == ()
    assert img.oci and img.oci.image.endswith("0123456789abcdef") and img.git is UNSET
    # an absent `apps` block is unmanaged, an empty one lists no app (and is authoritative)
    assert empty.apps is UNSET and empty.name is UNSET
    assert no_apps.apps == ()
    assert manifest.project("shop") is shop and shop.app("img") is img
    assert manifest.base_dir == str(path.parent)


def test_x_extension_fields_hold_anchors_and_are_ignored(write_manifest: WriteManifest) -> None:
    path = write_manifest(
        """
        version: 1
        x-small: &small {vCpus: 0.25, memoryMib: 256}
        projects:
          shop:
            apps:
              web:
                environments:
                  preview: {runtime: *small}
        """
    )
    manifest = load_manifest([path])
    runtime = manifest.projects[0].apps[0].environments[0].runtime
    assert runtime and (runtime.vcpus, runtime.memory_mib) == (0.25, 256)
    assert runtime.positions["vCpus"].line == 2  # errors point at the shared definition
