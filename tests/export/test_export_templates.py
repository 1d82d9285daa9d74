"""`export --templates`: what several apps share is written once, the round trip still plans
no changes, and the result is shorter."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from reconciler.export.templates import factor_templates
from reconciler.manifest.history import comparable
from reconciler.manifest.model import Manifest, listed
from reconciler.manifest.validate import load_manifest
from tests.engine.template_workspaces import write, written_out
from tests.fixtures.cli import run_cli

NODE = {"build": {"rootDirectory": ".", "buildCommand": "npm run build"}}


def app(**environments: Any) -> dict[str, Any]:
    return {"name": "x", "oci": {"image": "nginx:1.27"}, "environments": environments}


def test_items_several_apps_share_become_one_template_they_extend() -> None:
    shared_runtime = {"port": 3000, "memoryMib": 512, "vCpus": 1}
    projects = {
        "shop": {
            "name": "Shop",
            "apps": {
                f"app-{n}": app(
                    production={
                        "runtime": dict(shared_runtime),
                        "variables": {"LOG": "json", "OWN": f"own-{n}"},
                        "domains": [f"app-{n}.example.com"],
                    }
                )
                for n in range(4)
            },
        },
        "blog": {"name": "Blog", "apps": {"site": app(production={"runtime": {"port": 3000}})}},
    }
    templates, factored = factor_templates(projects)
    # port 3000 alone is not worth a template for the five apps that have it, but it joins
    # the template of the four that share more
    assert templates == {
        "shared-1": {
            "environments": {
                "production": {"runtime": shared_runtime, "variables": {"LOG": "json"}}
            }
        }
    }
    assert factored["shop"]["apps"]["app-2"] == {
        "name": "x",
        "oci": {"image": "nginx:1.27"},
        "extends": ["shared-1"],
        "environments": {
            "production": {"variables": {"OWN": "own-2"}, "domains": ["app-2.example.com"]}
        },
    }
    assert factored["blog"] == projects["blog"]


def test_the_factored_manifest_means_what_the_plain_export_means(tmp_path: Path) -> None:
    plain = {
        slug: {"apps": yaml.safe_load(text)["projects"][slug]["apps"]}
        for text in written_out(2, 10).values()
        for slug in yaml.safe_load(text)["projects"]
    }
    templates, factored = factor_templates(plain)
    assert len(templates) >= 2
    (tmp_path / "plain.yaml").write_text(
        yaml.safe_dump({"version": 1, "projects": plain}, sort_keys=False)
    )
    (tmp_path / "templated.yaml").write_text(
        yaml.safe_dump(
            {"version": 1, "templates": templates, "projects": factored}, sort_keys=False
        )
    )
    models = [load_manifest([tmp_path / name]) for name in ("plain.yaml", "templated.yaml")]
    assert meaning(models[0]) == meaning(models[1])


def meaning(manifest: Manifest) -> Any:
    """The model, each environment's variables by name: they are a set to the platform, and
    those an app takes from its templates come first in the model, before its own."""
    return [
        comparable(
            dataclasses.replace(
                project,
                apps=tuple(
                    dataclasses.replace(
                        app,
                        environments=tuple(
                            dataclasses.replace(
                                env, variables=tuple(sorted(env.variables or (), key=str))
                            )
                            for env in app.environments
                        ),
                    )
                    for app in listed(project.apps)
                ),
            )
        )
        for project in manifest.projects
    ]


def test_export_templates_round_trips_and_is_shorter(tmp_path: Path) -> None:
    workspace = write(tmp_path / "workspace", written_out(2, 10))
    state = f"local:{tmp_path / 'live.json'}"
    applied = run_cli(["apply", "-f", str(workspace), "--base-url", state, "--auto-approve"])
    assert applied.exit_code == 0, applied.output

    plain = run_cli(["export", "--base-url", state])
    templated = run_cli(["export", "--base-url", state, "--templates"])
    assert templated.exit_code == 0, templated.output
    assert "templates:" in templated.stdout
    assert templated.stdout.count("\n") < plain.stdout.count("\n") * 0.7

    out = tmp_path / "exported"
    written = run_cli(["export", "--base-url", state, "--templates", "--out-dir", str(out)])
    assert written.exit_code == 0, written.output
    assert sorted(p.name for p in out.iterdir()) == [
        "_templates.yaml",
        "team-0.yaml",
        "team-1.yaml",
    ]
    valid = run_cli(["validate", "-f", str(out)])
    assert valid.exit_code == 0, valid.output
    # the only warnings: the workspace's apps without a health check, as they are live
    warned = [line for line in valid.stderr.splitlines() if line.startswith("warning: ")]
    assert all(line.endswith("[production-healthcheck]") for line in warned), valid.stderr
    planned = run_cli(["plan", "-f", str(out), "--base-url", state, "--detailed-exitcode"])
    assert planned.exit_code == 0, planned.output
    assert "No changes. Live state matches the manifest." in planned.stdout
