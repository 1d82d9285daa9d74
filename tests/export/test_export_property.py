"""Property: for any live environments the spec allows, the exported YAML (with or without
`defaults`) loads, validates and diffs to nothing against that same live state (settings,
variables, policies, domains). "Any" includes values that are allowed but odd (a replica
range with min above max, max 0, host bits in a CIDR range, lower-case or unknown methods,
long write-only descriptions): the manifest warns about those, it never refuses them."""

from __future__ import annotations

import ipaddress
import string
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.export import (
    ExportedEnvironment,
    ExportOptions,
    build_export,
    exported_environment,
)
from reconciler.manifest.validate import load_manifest
from reconciler.plan.kinds.base import Location
from reconciler.plan.kinds.domains import parse_domains
from reconciler.plan.kinds.policies import plan_policies
from reconciler.plan.kinds.settings import plan_settings
from reconciler.plan.kinds.variables import plan_variables
from tests.export.fakes import exported_app, exported_project

text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=24)
# values people put in variables, including the ones YAML would silently retype
tricky = st.sampled_from(
    [
        "on",
        "off",
        "yes",
        "no",
        "true",
        "null",
        "~",
        "1.10",
        "0x1F",
        "1e3",
        "007",
        "3000",
        " leading",
        "trailing ",
        "a: b",
        "# not a comment",
        "- item",
        "[x]",
        "{y}",
        "*star",
        "&anchor",
        "!tag",
        "%pct",
        "@at",
        "`tick`",
        "'single'",
        '"double"',
        "line\nbreak",
        "ends with newline\n",
        "tab\there",
        "ünïcode ✓",
        "\\backslash",
    ]
)
value = st.one_of(text, tricky)
ident = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,11}", fullmatch=True)
slug_label = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8)


def string_match() -> st.SearchStrategy[dict[str, Any]]:
    kind = st.sampled_from(["exact", "prefix", "regex"])
    regex = st.sampled_from(["^/api", "\\.(php|env)$", "(?i)^/v[0-9]+/", "a|b"])
    return st.builds(
        lambda k, v, r, ic: {
            k: (r if k == "regex" else "/" + v),
            **({"ignoreCase": ic} if ic is not None else {}),
        },
        kind,
        text,
        regex,
        st.one_of(st.none(), st.booleans()),
    )


def named_match() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(
            lambda n: {"name": n, "present": True},
            st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,10}", fullmatch=True),
        ),
        st.builds(
            lambda n, v: {"name": n, "value": v},
            st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
            string_match(),
        ),
    )


def networks() -> st.SearchStrategy[list[str]]:
    # a range, or an address with a prefix length (host bits set: allowed, with a warning)
    written = st.sampled_from([lambda i: str(i.network), lambda i: str(i)])
    v4 = st.builds(
        lambda a, p, form: form(ipaddress.ip_interface((a, p))),
        st.integers(0, 2**32 - 1),
        st.integers(8, 32),
        written,
    )
    v6 = st.builds(
        lambda a, p, form: form(ipaddress.ip_interface((a, p))),
        st.integers(0, 2**128 - 1),
        st.integers(16, 128),
        written,
    )
    return st.lists(st.one_of(v4, v6), min_size=1, max_size=3, unique=True)


match_item = st.fixed_dictionaries(
    {},
    optional={
        "path": st.builds(lambda m: {"path": m}, string_match()),
        "method": st.builds(
            lambda ms: {"methods": ms},
            st.lists(
                # the spec's methods are any strings; the odd ones are warnings
                st.sampled_from(["GET", "POST", "PUT", "DELETE", "get", "Patch", "PURGE"]),
                min_size=1,
                max_size=3,
                unique=True,
            ),
        ),
        "header": named_match(),
        "queryParam": named_match(),
        "remoteIp": st.one_of(
            st.builds(lambda n: {"in": n}, networks()),
            st.builds(lambda n: {"notIn": n}, networks()),
        ),
    },
).filter(bool)

logging_rule = st.fixed_dictionaries(
    {
        k: st.booleans()
        for k in ("requestHeaders", "responseHeaders", "requestBody", "responseBody", "query")
    }
)
policy = st.builds(
    lambda i, name, enabled, match, rule: {
        "id": f"pol_{i}",
        "name": name,
        "enabled": enabled,
        **match,
        **rule,
    },
    st.integers(0, 10**6),
    text,
    st.booleans(),
    st.one_of(st.just({}), st.builds(lambda m: {"match": m}, st.lists(match_item, max_size=3))),
    st.one_of(
        st.just({"firewall": {"action": "ACTION_DENY"}}),
        st.builds(lambda r: {"logging": r}, logging_rule),
    ),
)

healthcheck = st.builds(
    lambda method, path, extra: {"method": method, "path": "/" + path, **extra},
    st.sampled_from(["GET", "POST"]),
    st.text(string.ascii_letters + "/-_", max_size=12),
    st.fixed_dictionaries(
        {
            "intervalSeconds": st.sampled_from([10, 1, 30, 3600]),
            "timeoutSeconds": st.sampled_from([5, 1, 60]),
            "failureThreshold": st.sampled_from([3, 1, 100]),
            "initialDelaySeconds": st.sampled_from([0, 15, 3600]),
        }
    ),
)
runtime = st.fixed_dictionaries(
    {},
    optional={
        "port": st.integers(1, 65535),
        "vCpus": st.builds(
            lambda n, as_float: n / 4 if as_float or n % 4 else n // 4,
            st.integers(1, 32),
            st.booleans(),
        ),
        "memoryMib": st.integers(1, 32).map(lambda n: n * 256),
        "storageMib": st.integers(0, 8).map(lambda n: n * 512),
        "command": st.lists(text, max_size=4),
        "healthcheck": healthcheck,
        "shutdownSignal": st.sampled_from(["SIGTERM", "SIGINT", "SIGQUIT", "SIGKILL"]),
        "upstreamProtocol": st.sampled_from(["http1", "h2c"]),
        "openapiSpecPath": st.sampled_from(["/openapi.json", "docs/api.yaml"]),
    },
)
build = st.fixed_dictionaries(
    {},
    optional={
        "dockerfile": st.sampled_from(["Dockerfile", "docker/prod.Dockerfile", ""]),
        "rootDirectory": st.sampled_from([".", "services/web", "apps/api"]),
        "buildCommand": st.one_of(st.just(""), text),
        "watchPaths": st.lists(
            st.sampled_from(["src/**", "*.py", "package.json", "docs/*.md"]),
            max_size=4,
            unique=True,
        ),
        "autoDeploy": st.booleans(),
    },
)
regions = st.lists(
    st.builds(
        # min and max independent: min above max and max 0 are allowed, with a warning
        lambda name, lo, hi: {"name": name, "replicas": {"min": lo, "max": hi}},
        slug_label,
        st.integers(0, 5),
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda r: r["name"],
)


def variables() -> st.SearchStrategy[list[dict[str, Any]]]:
    recoverable = st.builds(
        lambda v, d: {"kind": "recoverable", "value": v, **({"description": d} if d else {})},
        value,
        st.one_of(st.none(), st.text(min_size=1, max_size=40)),
    )
    writeonly = st.builds(
        lambda d: {"kind": "writeonly", **({"description": d} if d else {})},
        # up to the platform's 255: past 232 is a warning (no room for a fingerprint)
        st.one_of(st.none(), st.text(min_size=1, max_size=40), st.text(min_size=234, max_size=255)),
    )
    return st.lists(
        st.tuples(ident, st.one_of(recoverable, writeonly)), max_size=6, unique_by=lambda kv: kv[0]
    ).map(lambda items: [{"key": k, **v} for k, v in items])


hosts = st.lists(
    st.builds(lambda a, b: f"{a}.{b}.example.com", slug_label, slug_label), max_size=3, unique=True
)
environment = st.fixed_dictionaries(
    {
        "regions": regions,
        "variables": variables(),
        "policies": st.lists(policy, max_size=4),
        "domains": hosts,
    },
    optional={"runtime": runtime, "build": build},
)


SHARED = ("runtime", "build", "regions", "policies", "variables")


@st.composite
def both_environments(draw: st.DrawFn) -> dict[str, dict[str, Any]]:
    """Production and preview, with some sections (or variables) alike, as `defaults` needs."""
    production, preview = draw(environment), draw(environment)
    for section in SHARED:
        if draw(st.booleans()):
            if section in production:
                preview[section] = production[section]
            else:
                preview.pop(section, None)
    keys = {v["key"] for v in preview["variables"]}
    preview["variables"] += [
        v for v in production["variables"] if v["key"] not in keys and draw(st.booleans())
    ]
    preview["domains"] = [f"preview-{h}" for h in preview["domains"]]
    return {"production": production, "preview": preview}


def live_resource(name: str, live: dict[str, Any]) -> dict[str, Any]:
    """The environment's object as `listEnvironments` answers it (with `extra` members)."""
    resource = {"id": f"env_{name}0001", "slug": name, "kind": name, "description": ""}
    resource.update({k: live[k] for k in ("runtime", "build", "regions") if k in live})
    resource.update(live.get("extra", {}))
    return resource


def live_environment(name: str, live: dict[str, Any]) -> ExportedEnvironment:
    resource = live_resource(name, live)
    domains = [{"domain": h, "environmentId": resource["id"]} for h in live["domains"]]
    return exported_environment(
        resource, live["variables"], live["policies"], parse_domains(domains)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(both_environments(), st.booleans())
def test_exported_environments_load_and_diff_to_nothing(
    live: dict[str, dict[str, Any]], factor: bool
) -> None:
    envs = [live_environment(name, live[name]) for name in ("production", "preview")]
    app = exported_app(
        {"id": "app_web00001", "slug": "web", "name": "Web", "oci": {"image": "nginx:1"}}, *envs
    )
    project = exported_project({"id": "proj_shop0001", "slug": "shop", "name": "Shop"}, app)
    text_out = build_export([project], ExportOptions(factor_defaults=factor)).render()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "exported.yaml"
        path.write_text(text_out, encoding="utf-8")
        manifest = load_manifest([path])
    desired_by_name = {e.name: e for e in manifest.projects[0].apps[0].environments}
    for env in envs:
        wanted = live[env.slug]
        desired = desired_by_name.get(env.slug)
        if desired is None:  # nothing but defaults: nothing to manage
            assert not wanted["variables"] and not wanted["policies"] and not wanted["domains"]
            continue
        ref = Location("shop", "web", env.slug, env.live.id)
        assert plan_settings("shop", "web", desired, env.live, ref) is None
        if wanted["policies"] or desired.policies:
            assert plan_policies("shop", "web", desired, env.policies, ref) is None
        if wanted["variables"] or desired.variables:
            planned = plan_variables(
                "shop", "web", desired, env.variables, ref, prune=True, fingerprint_key=None
            )
            assert planned.changes == []
        hosts_out = [d.host for d in desired.domains] if desired.domains else []
        assert hosts_out == sorted(wanted["domains"])
