"""Templates, `extends` and `appDefaults`: the merge order, lists that combine, parameters,
what is refused and where, and positions that point at the source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from reconciler.cli import main
from reconciler.manifest.model import (
    App,
    Environment,
    LiteralValue,
    Manifest,
    SharedPosition,
    sources_of,
)
from reconciler.manifest.schema import manifest_schema
from reconciler.manifest.validate import ManifestInvalid, Problem, load_manifest

NGINX = 'oci: {image: "nginx:1.27"}'


def write(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def load(directory: Path, files: dict[str, str]) -> Manifest:
    return load_manifest([write(directory, files)])


def problems(directory: Path, files: dict[str, str]) -> tuple[Problem, ...]:
    with pytest.raises(ManifestInvalid) as caught:
        load(directory, files)
    return caught.value.problems


def app(manifest: Manifest, project: str, slug: str) -> App:
    found = manifest.project(project)
    assert found is not None
    result = found.app(slug)
    assert result is not None
    return result


def env(manifest: Manifest, address: str) -> Environment:
    project, slug, name = address.split("/")
    found = app(manifest, project, slug).environment(name)
    assert found is not None
    return found


def variables(environment: Environment) -> dict[str, str]:
    listed = environment.variables or ()
    return {v.key: v.source.value for v in listed if isinstance(v.source, LiteralValue)}


# --- the merge order --------------------------------------------------------------------------

LAYERS = {
    "00-templates.yaml": """version: 1
appDefaults:
  variables: {WS: ws, A: ws, B: ws, C: ws, D: ws, E: ws, F: ws}
templates:
  first:
    variables: {B: first, C: first, D: first, E: first, F: first, G: first}
  second:
    variables: {C: second, D: second, E: second, F: second, G: second}
    environments:
      production:
        variables: {D: second-production, E: second-production, F: second-production}
  in-defaults:
    variables: {E: in-defaults, F: in-defaults}
  in-production:
    variables: {F: in-production, H: in-production}
""",
    "10-shop.yaml": f"""version: 1
projects:
  shop:
    appDefaults:
      variables: {{A: project, B: project}}
    apps:
      web:
        {NGINX}
        extends: [first, second]
        defaults:
          extends: [in-defaults]
          variables: {{E: defaults}}
        environments:
          production:
            extends: [in-production]
            variables: {{H: production}}
""",
}


def test_layers_apply_in_the_documented_order_the_nearest_winning(tmp_path: Path) -> None:
    """workspace appDefaults < project appDefaults < the app's templates in order (each one's
    own settings under its environments) < defaults (its templates under it) < the
    environment (its templates under it)."""
    manifest = load(tmp_path, LAYERS)
    assert variables(env(manifest, "shop/web/production")) == {
        "WS": "ws",
        "A": "project",
        "B": "first",
        "C": "second",
        "D": "second-production",
        "E": "defaults",
        "F": "in-production",
        "G": "second",
        "H": "production",
    }
    assert variables(env(manifest, "shop/web/preview")) == {
        "WS": "ws",
        "A": "project",
        "B": "first",
        "C": "second",
        "D": "second",
        "E": "defaults",
        "F": "in-defaults",
        "G": "second",
    }


def test_a_value_keeps_where_it_is_written_and_the_blocks_it_came_through(tmp_path: Path) -> None:
    manifest = load(tmp_path, LAYERS)
    production = env(manifest, "shop/web/production")
    positions = {v.key: v.pos for v in production.variables or ()}
    templates = str(tmp_path / "00-templates.yaml")
    assert positions["D"] == SharedPosition(templates, 11, 21)
    assert sources_of(positions["D"]) == ("templates.second",)
    assert sources_of(positions["WS"]) == ("appDefaults",)
    assert sources_of(positions["A"]) == ("projects.shop.appDefaults",)
    assert sources_of(positions["E"]) == ()  # the app's own defaults
    assert positions["E"].file.endswith("10-shop.yaml")


def test_shared_blocks_make_environments_managed_like_defaults(tmp_path: Path) -> None:
    manifest = load(
        tmp_path,
        {
            "m.yaml": f"""version: 1
templates:
  production-only:
    environments:
      production: {{runtime: {{vCpus: 1}}}}
  both: {{runtime: {{port: 8080}}}}
projects:
  shop:
    apps:
      one: {{{NGINX}, extends: [production-only]}}
      two: {{{NGINX}, extends: [both]}}
      three: {{{NGINX}}}
"""
        },
    )
    assert [e.name for e in app(manifest, "shop", "one").environments] == ["production"]
    assert [e.name for e in app(manifest, "shop", "two").environments] == [
        "production",
        "preview",
    ]
    assert app(manifest, "shop", "three").environments == ()


def test_maps_merge_by_key_and_lists_replace(tmp_path: Path) -> None:
    manifest = load(
        tmp_path,
        {
            "m.yaml": f"""version: 1
templates:
  base:
    runtime: {{port: 3000, command: [node, a.js], healthcheck: {{method: GET, path: /a}}}}
    regions: [{{name: fra, replicas: {{min: 1, max: 2}}}}]
projects:
  shop:
    apps:
      web:
        {NGINX}
        extends: [base]
        environments:
          production:
            runtime: {{command: [node, b.js], healthcheck: {{path: /b}}}}
            regions: [{{name: iad, replicas: {{min: 1, max: 2}}}}]
"""
        },
    )
    production = env(manifest, "shop/web/production")
    assert production.runtime and production.runtime.port == 3000
    assert production.runtime.command == ("node", "b.js")
    assert production.runtime.healthcheck and production.runtime.healthcheck.path == "/b"
    assert production.runtime.healthcheck.method == "GET"
    assert [r.name for r in production.regions or ()] == ["iad"]


def policy(name: str) -> str:
    return f"{{name: {name}, enabled: true, logging: {{requestHeaders: true}}}}"


def test_prepend_and_append_wrap_the_list_of_the_blocks_above(tmp_path: Path) -> None:
    """A lower block's prepend goes outside a higher one's, whichever block holds the list."""
    manifest = load(
        tmp_path,
        {
            "m.yaml": f"""version: 1
appDefaults:
  policies: {{prepend: [{policy("ws-first")}], append: [{policy("ws-last")}]}}
templates:
  team:
    policies: {{prepend: [{policy("team-first")}], append: [{policy("team-last")}]}}
  replaced:
    policies: [{policy("replaced")}]
projects:
  shop:
    apps:
      web:
        {NGINX}
        extends: [replaced, team]
        environments:
          production:
            policies: [{policy("own")}]
          preview: {{}}
"""
        },
    )
    names = {
        e.name: [p.name for p in e.policies or ()]
        for e in app(manifest, "shop", "web").environments
    }
    assert names == {
        "production": ["ws-first", "team-first", "own", "team-last", "ws-last"],
        "preview": ["ws-first", "team-first", "replaced", "team-last", "ws-last"],
    }


def test_a_template_reached_twice_applies_once_where_it_first_appears(tmp_path: Path) -> None:
    common = f"""version: 1
templates:
  base: {{policies: {{prepend: [{policy("base")}]}}, runtime: {{port: 1000}}}}
  a: {{extends: [base], runtime: {{port: 2000}}}}
  b: {{extends: [base], policies: {{append: [{policy("b")}]}}}}
projects:
  shop:
    apps:
      web:
        {NGINX}
        extends: EXTENDS
"""
    diamond = load(tmp_path, {"m.yaml": common.replace("EXTENDS", "[a, b, base]")})
    production = env(diamond, "shop/web/production")
    assert [p.name for p in production.policies or ()] == ["base", "b"]
    assert production.runtime and production.runtime.port == 2000  # base under a, not above


# --- parameters -------------------------------------------------------------------------------

PARAMETERS = f"""version: 1
templates:
  public-web:
    params:
      host: {{type: string}}
      port: {{type: integer, default: 8080}}
      regions: {{type: list, default: [{{name: fra, replicas: {{min: 1, max: 2}}}}]}}
    runtime: {{port: "${{port}}"}}
    variables: {{PUBLIC_URL: "https://${{host}}:${{port}}/", SHELL_TEXT: "$${{HOME}}/bin"}}
    environments:
      production:
        domains: ["${{host}}"]
        regions: "${{regions}}"
      preview:
        domains: ["preview.${{host}}"]
projects:
  shop:
    apps:
      web:
        {NGINX}
        extends: [{{template: public-web, params: {{host: shop.example.com}}}}]
      api:
        {NGINX}
        extends:
          - template: public-web
            params:
              host: api.example.com
              port: 9000
              regions: [{{name: iad, replicas: {{min: 2, max: 4}}}}]
"""


def test_parameters_replace_whole_values_and_text(tmp_path: Path) -> None:
    manifest = load(tmp_path, {"m.yaml": PARAMETERS})
    web, api = env(manifest, "shop/web/production"), env(manifest, "shop/api/production")
    assert web.runtime and web.runtime.port == 8080 and api.runtime and api.runtime.port == 9000
    assert variables(api) == {
        "PUBLIC_URL": "https://api.example.com:9000/",
        "SHELL_TEXT": "${HOME}/bin",
    }
    assert [d.host for d in web.domains or ()] == ["shop.example.com"]
    assert [d.host for d in env(manifest, "shop/api/preview").domains or ()] == [
        "preview.api.example.com"
    ]
    assert [(r.name, r.min_replicas) for r in web.regions or ()] == [("fra", 1)]
    assert [(r.name, r.min_replicas) for r in api.regions or ()] == [("iad", 2)]


def test_a_substituted_value_is_placed_at_the_value_the_use_gives(tmp_path: Path) -> None:
    manifest = load(tmp_path, {"m.yaml": PARAMETERS})
    api = env(manifest, "shop/api/production")
    domain = (api.domains or ())[0]
    assert domain.pos and (domain.pos.line, domain.pos.column) == (27, 21)  # params.host
    assert sources_of(domain.pos) == ("templates.public-web",)
    region = (api.regions or ())[0]
    assert region.pos and region.pos.line == 29  # the list the use gives


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("{}", "template 'public-web' needs parameter 'host' (string)"),
        ("{host: x.example.com, hots: y}", "has no parameter 'hots'; did you mean 'host'?"),
        ("{host: x.example.com, port: '80'}", "is declared integer; got string '80'"),
        ("{host: 'Not A Host'}", "'Not A Host' is not a fully qualified host name"),
        ("{host: x.example.com, port: 0}", "0 is too small: the minimum is 1"),
    ],
)
def test_parameter_values_are_checked_where_the_use_gives_them(
    tmp_path: Path, params: str, message: str
) -> None:
    text = PARAMETERS.replace("{host: shop.example.com}", params)
    found = problems(tmp_path, {"m.yaml": text})
    assert any(message in problem.message for problem in found), found
    for problem in found:  # the host goes to both environments: each is reported
        assert problem.line == 21 and problem.path.startswith("projects.shop.apps.web.extends[0]")


def test_a_parameter_that_is_not_text_stands_only_alone(tmp_path: Path) -> None:
    text = PARAMETERS.replace('regions: "${regions}"', 'regions: "${regions} x"')
    found = problems(tmp_path, {"m.yaml": text})
    assert any(
        "parameter 'regions' is a list, which cannot be part of text" in p.message for p in found
    )


# --- what is refused --------------------------------------------------------------------------


def test_a_template_defined_in_two_files_names_both(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        {
            "a.yaml": "version: 1\ntemplates:\n  web: {runtime: {port: 1}}\n",
            "b.yaml": "version: 1\ntemplates:\n  web: {runtime: {port: 2}}\n",
        },
    )
    assert [str(p) for p in found] == [
        f"{tmp_path}/b.yaml:3:3: templates.web: template 'web' is also defined at "
        f"{tmp_path}/a.yaml:3:3; define each template in one file only"
    ]


def test_app_defaults_must_agree_across_files(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        {
            "a.yaml": "version: 1\nappDefaults: {runtime: {port: 1}}\n",
            "b.yaml": "version: 1\nappDefaults: {runtime: {port: 2}}\n",
        },
    )
    assert len(found) == 1 and "every file that sets `appDefaults` must say the same" in str(
        found[0]
    )


def test_a_problem_in_a_template_is_reported_once_naming_every_app(tmp_path: Path) -> None:
    apps = "".join(f"      app-{n:02d}: {{{NGINX}, extends: [fw]}}\n" for n in range(40))
    files = {
        "templates.yaml": """version: 1
templates:
  fw:
    policies:
      - name: admin
        enabled: true
        match: [{path: {path: {regex: "(unclosed"}}}]
        firewall: {action: ACTION_DENY}
""",
        "apps.yaml": "version: 1\nprojects:\n  shop:\n    apps:\n" + apps,
    }
    found = problems(tmp_path, files)
    assert len(found) == 1
    problem = found[0]
    assert (Path(problem.file).name, problem.line) == ("templates.yaml", 7)
    assert problem.path == "templates.fw.policies[0].match[0].path.path.regex"
    assert problem.uses == tuple(f"shop/app-{n:02d}" for n in range(40))
    assert str(problem).endswith(
        "(used by 40 apps: shop/app-00, shop/app-01, shop/app-02, "
        "shop/app-03, shop/app-04, shop/app-05, shop/app-06, shop/app-07, shop/app-08, "
        "shop/app-09 and 30 more)"
    )
    result = CliRunner().invoke(main, ["validate", "-f", str(tmp_path), "--format", "json"])
    errors = [p for p in json.loads(result.stdout) if p["severity"] == "error"]
    assert [p["uses"] for p in errors] == [list(problem.uses)]


def test_odd_shapes_are_problems_never_tracebacks(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        {
            "m.yaml": f"""version: 1
templates:
  empty:
  listed: [1, 2]
  odd: {{extends: web, params: [1], environments: {{staging: {{}}}}}}
projects:
  shop:
    appDefaults: [1]
    apps:
      web: {{{NGINX}, extends: [[x], {{params: {{}}}}, empty, listed, odd, 7]}}
      api: {{{NGINX}, extends: {{template: odd}}, defaults: {{extends: [null]}}}}
"""
        },
    )
    assert found and all(p.line > 0 for p in found)


# --- editors ----------------------------------------------------------------------------------


def test_editors_accept_parameters_where_the_field_takes_another_type() -> None:
    validator = Draft202012Validator(manifest_schema())
    document = {
        "version": 1,
        "templates": {
            "web": {
                "params": {"port": {"type": "integer"}, "host": {"type": "string"}},
                "runtime": {"port": "${port}", "healthcheck": {"method": "GET", "path": "/"}},
                "domains": ["${host}", "preview.${host}"],
                "policies": {"prepend": [{"name": "a", "enabled": True, "logging": {}}]},
            }
        },
    }
    assert not list(validator.iter_errors(document))
    document["templates"]["web"]["runtime"]["port"] = "http"  # type: ignore[index]
    assert [e.json_path for e in validator.iter_errors(document)] == [
        "$.templates.web.runtime.port"
    ]
    document["templates"]["web"]["runtime"]["port"] = "${port"  # type: ignore[index]
    assert [e.json_path for e in validator.iter_errors(document)] == [
        "$.templates.web.runtime.port"
    ]


def test_settings_outside_shared_blocks_still_refuse_combinations_and_parameters(
    tmp_path: Path,
) -> None:
    found = problems(
        tmp_path,
        {
            "m.yaml": f"""version: 1
projects:
  shop:
    apps:
      web:
        {NGINX}
        environments:
          production:
            runtime: {{port: "${{port}}"}}
            policies: {{prepend: []}}
"""
        },
    )
    assert [(p.path, p.message[:20]) for p in found] == [
        ("projects.shop.apps.web.environments.production.runtime.port", "expected integer, go"),
        ("projects.shop.apps.web.environments.production.policies", "expected array, got "),
    ]
