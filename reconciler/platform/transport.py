"""The client's HTTP transport: httpx's own, built once for the one origin the client talks to.

`PlatformClient` hands each request straight to this transport (httpx's documented transport
API) rather than through `httpx.AsyncClient`. A client of one origin, with the same headers on
every request, needs none of AsyncClient's per-request work: merging URLs and headers, a cookie
jar, auth flows, redirects, choosing a transport per URL. That work was a fifth of the client's
CPU per call (`tests/perf/bench_client.py`). What AsyncClient decided from the environment, this
module decides once, the same way:

- the proxy the environment names for the origin (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, and
  `NO_PROXY` to bypass it, as curl and requests read them), with the standard library's
  `urllib.request`, which httpx reads them with too;
- TLS verified against the system's or `SSL_CERT_FILE` / `SSL_CERT_DIR`'s certificates
  (`trust_env`, httpx's default).
"""

from __future__ import annotations

import urllib.request
from urllib.parse import urlsplit

import httpx

from reconciler.errors import UsageError

PROXY_VARIABLES = "HTTPS_PROXY, HTTP_PROXY, ALL_PROXY"


def origin_transport(base_url: str, parallelism: int) -> httpx.AsyncHTTPTransport:
    """httpx's transport to `base_url`'s origin: `parallelism` connections at most, all kept."""
    limits = httpx.Limits(max_connections=parallelism, max_keepalive_connections=parallelism)
    proxy = environment_proxy(base_url)
    try:
        return httpx.AsyncHTTPTransport(limits=limits, proxy=proxy, trust_env=True)
    except (ValueError, ImportError):  # a scheme httpx does not speak, or SOCKS without socksio
        assert proxy is not None  # nothing else of the transport depends on the environment
        scheme = urlsplit(proxy).scheme  # not the URL: it may hold a password
        raise UsageError(
            f"cannot use the proxy the environment names for {base_url}: httpx cannot "
            f"connect through a {scheme}:// proxy here",
            hint=f"set {PROXY_VARIABLES} to an http:// or https:// proxy, "
            "or add the host to NO_PROXY",
        ) from None


def environment_proxy(base_url: str) -> str | None:
    """The URL of the proxy the environment names for `base_url`, or None (none set, or
    `NO_PROXY` names the host)."""
    url = httpx.URL(base_url)
    proxies = urllib.request.getproxies()
    address = proxies.get(url.scheme) or proxies.get("all")
    if not address:
        return None
    # `proxy_bypass` reads NO_PROXY (and on macOS and Windows the system's exceptions);
    # requests decides with it too
    if urllib.request.proxy_bypass(f"{url.host}:{url.port}" if url.port else url.host):
        return None
    return address if "://" in address else f"http://{address}"
