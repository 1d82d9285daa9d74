"""domains.* operations and the lazily evaluated verification state machine.

Status is derived from the emulator clock whenever the state is touched (`advance_domains`):
`pending` for one step after creation or `verifyDomain`, then `verifying`; `verified` as soon as
the DNS table (admin `PUT /_emulator/dns`) holds every record; `failed` when 24 hours of the
period pass first.
"""

from __future__ import annotations

import heapq
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
from reconciler.emulator.validation import Problems, Str, host_name

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

# DnsRecord.name of the spec: "full record name, 1 to 253 characters"
RECORD_NAME_MAX = 253


def _creatable_host(value: str, path: str, problems: Problems) -> None:
    """A host name every record of which keeps DnsRecord's bounds: the ownership record's name
    prefixes the host, so a longer host would get a record no DNS table (the emulator's included)
    can hold, and could never be verified."""
    before = len(problems)
    host_name(value, path, problems)
    if len(problems) > before:
        return
    host = _normal(value)
    for record in _records(host, token=""):  # record names do not depend on the token
        added = len(record["name"]) - len(host)
        if len(record["name"]) > RECORD_NAME_MAX:
            problems.append(
                (
                    path,
                    f"is too long: the {record['type']} record name "
                    f"{record['name'][:added]}<domain> would be {len(record['name'])} "
                    f"characters, over the {RECORD_NAME_MAX} allowed; the domain can be at most "
                    f"{RECORD_NAME_MAX - added} characters",
                )
            )


DOMAIN_NAME = Str(min=4, max=253, extra=_creatable_host)
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
    values = dns_index(store)
    for entry_type in ROUTING_TYPES.get(record["type"], {record["type"]}):
        if record["value"] in values.get((entry_type, record["name"]), ()):
            return True
    return False


def dns_index(store: Store) -> dict[tuple[str, str], set[str]]:
    """The DNS table as (upper-case type, normalised name) -> normalised values, rebuilt only when
    the table is replaced (admin `PUT /_emulator/dns`, reset, load), never edited in place."""
    table = store.state["dns"]
    if store.dns_cache is None or store.dns_cache[0] is not table:
        index: dict[tuple[str, str], set[str]] = {}
        for entry in table:
            kind = entry["type"].upper()
            value = entry["value"].strip().strip('"') if kind == "TXT" else _normal(entry["value"])
            index.setdefault((kind, _normal(entry["name"])), set()).add(value)
        store.dns_cache = (table, index)
        store.domain_deadlines = None  # a new table can verify any unsettled domain
    return store.dns_cache[1]


def render_domain(store: Store, domain: Obj) -> Obj:
    shown = public(domain)
    shown["dnsRecords"] = [
        {**record, "verified": record_seen(store, record)} for record in domain["dnsRecords"]
    ]
    return shown


def advance_domains(store: Store, now: int, step_ms: int) -> None:
    """Move domains along. Only the domains whose deadline the clock reached are looked at
    (the store keeps the deadlines in a heap), except after a load, a reset or a DNS change,
    which can move any domain: then every one is."""
    dns_index(store)
    if store.domain_deadlines is None:
        store.domain_deadlines = []
        store.domain_due.clear()
        for domain in store.domains.values():
            _schedule(store, domain["id"], _advance_domain(store, domain, now, step_ms))
        return
    deadlines = store.domain_deadlines
    while deadlines and deadlines[0][0] <= now:
        deadline, domain_id = heapq.heappop(deadlines)
        if store.domain_due.get(domain_id) == deadline:  # else superseded, or deleted
            del store.domain_due[domain_id]
            domain = store.domains[domain_id]
            _schedule(store, domain_id, _advance_domain(store, domain, now, step_ms))


def _schedule(store: Store, domain_id: str, deadline: int | None) -> None:
    """Look at the domain again at `deadline` (None: only on a DNS change), and not before."""
    if deadline is None:
        store.domain_due.pop(domain_id, None)
    elif store.domain_deadlines is not None and store.domain_due.get(domain_id) != deadline:
        store.domain_due[domain_id] = deadline
        heapq.heappush(store.domain_deadlines, (deadline, domain_id))


def _advance_domain(store: Store, domain: Obj, now: int, step_ms: int) -> int | None:
    """Advance one domain; answer when it must be looked at again (None: only on a DNS change)."""
    status = domain["status"]
    if status not in ("pending", "verifying"):
        return None
    start: int = domain["_periodStart"]
    if status == "pending":
        if now - start < step_ms:
            return start + step_ms
        _move(store, domain, "verifying", start + step_ms)
    missing = [r["name"] for r in domain["dnsRecords"] if not record_seen(store, r)]
    if not missing:
        _move(store, domain, "verified", now)
        domain.pop("verificationError", None)
        return None
    if now - start >= VERIFICATION_PERIOD_MS:
        _move(store, domain, "failed", start + VERIFICATION_PERIOD_MS)
        domain["verificationError"] = (
            "The DNS records were not found within 24 hours; missing: " + ", ".join(missing)
        )[:512]
        return None
    return start + VERIFICATION_PERIOD_MS


def _move(store: Store, domain: Obj, status: str, at: int) -> None:
    domain["status"] = status
    domain["updatedAt"] = max(at, domain["createdAt"])
    store.dirty = True


def create_domain(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    project, app, env = call.env_target(body, "create_domain")
    host = _normal(body["domain"])
    existing = call.store.find_domain(host)
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
    call.store.add_domain(domain)
    # a domain (re)starting its period: nothing can happen to it before its first step ends
    _schedule(call.store, domain_id, call.now + call.step_ms)
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
    _schedule(call.store, domain["id"], call.now + call.step_ms)
    call.touch()
    return data({}, 202)


def delete_domain(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    domain = _resolve(call, body, "delete_domain")
    call.store.delete_domain(domain["id"])
    call.touch()
    return data({})


def list_domains(call: Call, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    call.require("environment", "read_domain")
    store = call.store
    projects = apps = envs = None
    if "project" in body:
        projects = {store.project(body["project"])["id"]}
    if "app" in body:
        apps = {a["id"] for a in _apps_named(store, body["app"], projects)}
        if not apps:
            raise not_found("app", body["app"])
    if "environment" in body:
        envs = {
            e["id"]
            for e in _environments_of(store, projects, apps)
            if body["environment"] in (e["id"], e["slug"])
        }
        if not envs:
            raise not_found("environment", body["environment"])
    search = body.get("search")
    items = [
        d
        for d in _candidates(store, projects, apps, envs)
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


def _candidates(
    store: Store, projects: set[str] | None, apps: set[str] | None, envs: set[str] | None
) -> list[Obj]:
    """The domains of the narrowest filter given, from the store's indexes (each still checked
    against every filter)."""
    if envs is not None:
        return [d for env_id in envs for d in store.domains_of("environmentId", env_id)]
    if apps is not None:
        return [d for app_id in apps for d in store.domains_of("appId", app_id)]
    if projects is not None:
        return [d for project_id in projects for d in store.domains_of("projectId", project_id)]
    return list(store.domains.values())


def _apps_named(store: Store, ref: str, projects: set[str] | None) -> list[Obj]:
    """Apps with this ID or slug, in the given projects (None: in every project)."""
    found = [store.apps[ref]] if ref in store.apps else []
    if projects is None:
        found += store.apps_with_slug(ref)
    else:
        found += [a for p in projects if (a := store.app_with_slug(p, ref)) is not None]
    return [a for a in found if projects is None or a["_projectId"] in projects]


def _environments_of(store: Store, projects: set[str] | None, apps: set[str] | None) -> list[Obj]:
    if apps is not None:
        return [e for app_id in apps for e in store.app_environments(app_id)]
    if projects is not None:
        return [
            e
            for project_id in projects
            for app in store.project_apps(project_id)
            for e in store.app_environments(app["id"])
        ]
    return list(store.environments.values())


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
