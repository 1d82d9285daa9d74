"""domains.* operations and the lazily evaluated verification state machine.

Status is derived from the emulator clock whenever the state is touched (`advance_domains`):
`pending` for one step after creation or `verifyDomain`, then `verifying`; `verified` as soon as
the DNS table (admin `PUT /_emulator/dns`) holds every record; `failed` when 24 hours of the
period pass first.
"""

from __future__ import annotations

from typing import Any

from reconciler.emulator.context import (
    LIST_FIELDS,
    REF,
    SEARCH,
    Call,
    Operation,
    by_seq,
    contains,
    data,
    listing,
)
from reconciler.emulator.errors import conflict, not_found, precondition
from reconciler.emulator.pagination import paginate
from reconciler.emulator.store import Obj, Store, public
from reconciler.emulator.validation import Obj as ObjSpec
from reconciler.emulator.validation import Str, host_name

VERIFICATION_PERIOD_MS = 24 * 60 * 60 * 1000
CNAME_TARGET = "cname.platform-emulator.test"
APEX_TARGET = "apex.platform-emulator.test"
OWNERSHIP_PREFIX = "_platform-verification."
# public suffixes of two labels, so that example.co.uk counts as an apex
TWO_LABEL_SUFFIXES = frozenset(
    [
        "co.uk",
        "org.uk",
        "me.uk",
        "ltd.uk",
        "plc.uk",
        "ac.uk",
        "gov.uk",
        "net.uk",
        "com.au",
        "net.au",
        "org.au",
        "edu.au",
        "co.nz",
        "org.nz",
        "co.jp",
        "ne.jp",
        "or.jp",
        "com.br",
        "net.br",
        "com.cn",
        "com.mx",
        "co.in",
        "co.za",
        "com.sg",
        "com.tr",
        "co.kr",
        "com.ar",
        "com.hk",
        "co.il",
    ]
)
ROUTING_TYPES = {"CNAME": {"CNAME"}, "ALIAS": {"ALIAS", "ANAME", "CNAME"}}

DOMAIN_NAME = Str(min=4, max=253, extra=host_name)
DOMAIN_REF = Str(min=4, max=253)


def is_apex(host: str) -> bool:
    labels = host.split(".")
    return len(labels) == 2 or (len(labels) == 3 and ".".join(labels[1:]) in TWO_LABEL_SUFFIXES)


def _records(host: str, token: str) -> list[Obj]:
    if is_apex(host):
        routing = {
            "type": "ALIAS",
            "name": host,
            "value": APEX_TARGET,
            "ttl": 60,
            "note": "Routes the apex to the platform (ALIAS, ANAME or flattened CNAME).",
        }
    else:
        routing = {
            "type": "CNAME",
            "name": host,
            "value": CNAME_TARGET,
            "ttl": 60,
            "note": "Routes the host name to the platform.",
        }
    ownership = {
        "type": "TXT",
        "name": OWNERSHIP_PREFIX + host,
        "value": f"platform-verification={token}",
        "ttl": 300,
        "note": "Proves ownership of the domain.",
    }
    return [routing, ownership]


def _normal(text: str) -> str:
    return text.strip().rstrip(".").lower()


def record_seen(store: Store, record: Obj) -> bool:
    types = ROUTING_TYPES.get(record["type"], {record["type"]})
    for entry in store.state["dns"]:
        if entry["type"].upper() not in types or _normal(entry["name"]) != record["name"]:
            continue
        if record["type"] == "TXT":
            if entry["value"].strip().strip('"') == record["value"]:
                return True
        elif _normal(entry["value"]) == record["value"]:
            return True
    return False


def render_domain(store: Store, domain: Obj) -> Obj:
    shown = public(domain)
    shown["dnsRecords"] = [
        {**record, "verified": record_seen(store, record)} for record in domain["dnsRecords"]
    ]
    return shown


def advance_domains(store: Store, now: int, step_ms: int) -> None:
    for domain in store.domains.values():
        status = domain["status"]
        if status not in ("pending", "verifying"):
            continue
        start = domain["_periodStart"]
        if status == "pending":
            if now - start < step_ms:
                continue
            _move(store, domain, "verifying", start + step_ms)
        missing = [r["name"] for r in domain["dnsRecords"] if not record_seen(store, r)]
        if not missing:
            _move(store, domain, "verified", now)
            domain.pop("verificationError", None)
        elif now - start >= VERIFICATION_PERIOD_MS:
            _move(store, domain, "failed", start + VERIFICATION_PERIOD_MS)
            domain["verificationError"] = (
                "The DNS records were not found within 24 hours; missing: " + ", ".join(missing)
            )[:512]


def _move(store: Store, domain: Obj, status: str, at: int) -> None:
    domain["status"] = status
    domain["updatedAt"] = max(at, domain["createdAt"])
    store.dirty = True


def create_domain(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    project, app, env = call.env_target(body, "create_domain")
    host = _normal(body["domain"])
    existing = next((d for d in call.store.domains.values() if d["domain"] == host), None)
    if existing is not None:
        where = (
            "this environment" if existing["environmentId"] == env["id"] else "another environment"
        )
        raise conflict("domain", f"{host} is already used by {where} of the workspace")
    domain_id = call.store.new_id("dom_")
    token = call.store.new_id("")
    domain = {
        "id": domain_id,
        "domain": host,
        "projectId": project["id"],
        "appId": app["id"],
        "environmentId": env["id"],
        "status": "pending",
        "dnsRecords": _records(host, token),
        "createdAt": call.now,
        "_appId": app["id"],
        "_periodStart": call.now,
        "_seq": call.store.next_seq(),
    }
    call.store.domains[domain_id] = domain
    call.touch()
    shown = render_domain(call.store, domain)
    return data({"domainId": domain_id, "dnsRecords": shown["dnsRecords"]})


def _resolve(call: Call, body: dict[str, Any], action: str) -> Obj:
    call.precheck("environment", action)
    domain = call.store.domain(body["domain"])
    call.require("environment", action, domain["environmentId"])
    return domain


def get_domain(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return data(render_domain(call.store, _resolve(call, body, "read_domain")))


def verify_domain(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    domain = _resolve(call, body, "verify_domain")
    if domain["status"] == "verified":
        raise precondition(f"{domain['domain']} is already verified", "domain")
    domain["status"] = "pending"
    domain["_periodStart"] = call.now
    domain["updatedAt"] = call.now
    domain.pop("verificationError", None)
    call.touch()
    return data({}, 202)


def delete_domain(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    domain = _resolve(call, body, "delete_domain")
    del call.store.domains[domain["id"]]
    call.touch()
    return data({})


def list_domains(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.require("environment", "read_domain")
    store = call.store
    projects = apps = envs = None
    if "project" in body:
        projects = {store.project(body["project"])["id"]}
    if "app" in body:
        apps = {
            a["id"]
            for a in store.apps.values()
            if body["app"] in (a["id"], a["slug"])
            and (projects is None or a["_projectId"] in projects)
        }
        if not apps:
            raise not_found("app", body["app"])
    if "environment" in body:
        envs = {
            e["id"]
            for e in store.environments.values()
            if body["environment"] in (e["id"], e["slug"])
            and (projects is None or e["_projectId"] in projects)
            and (apps is None or e["_appId"] in apps)
        }
        if not envs:
            raise not_found("environment", body["environment"])
    search = body.get("search")
    items = [
        d
        for d in store.domains.values()
        if (projects is None or d["projectId"] in projects)
        and (apps is None or d["appId"] in apps)
        and (envs is None or d["environmentId"] in envs)
        and contains(search, d["domain"], d["id"])
    ]
    filters = {
        "project": sorted(projects or []),
        "app": sorted(apps or []),
        "environment": sorted(envs or []),
        "search": search or "",
    }
    page, pagination = paginate("domains.listDomains", body, filters, items, by_seq)
    return listing([render_domain(store, d) for d in page], pagination)


_TARGET = {"project": REF, "app": REF, "environment": REF}
_BY_DOMAIN = ObjSpec(fields={"domain": DOMAIN_REF}, required=("domain",))

OPERATIONS = {
    "domains.createDomain": Operation(
        create_domain,
        ObjSpec(
            fields={**_TARGET, "domain": DOMAIN_NAME},
            required=("project", "app", "environment", "domain"),
        ),
        True,
    ),
    "domains.getDomain": Operation(get_domain, _BY_DOMAIN, False),
    "domains.listDomains": Operation(
        list_domains, ObjSpec(fields={**_TARGET, **LIST_FIELDS, "search": SEARCH}), False
    ),
    "domains.verifyDomain": Operation(verify_domain, _BY_DOMAIN, True),
    "domains.deleteDomain": Operation(delete_domain, _BY_DOMAIN, True),
}
