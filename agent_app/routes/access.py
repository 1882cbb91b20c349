"""Who may use ``POST /api/agent/chat``: a bearer token when one is configured, else direct local clients.

The route spends the owner's API key. With ``AGENT_API_TOKEN`` set, a matching bearer token is required
(compared in constant time). Without it only a *direct* loopback client is served: not a request that a
proxy forwarded (:func:`is_proxied`), and not a web page of another site open in the owner's browser
(:func:`cross_site_reason`).
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from agent_app.errors import ChatError, ErrorKind
from agent_app.settings import Settings

PROXY_HEADER_ENDINGS = ("-ip", "clientip")
"""A header name ending so (``X-Real-IP``, ``CF-Connecting-IP``, ``True-Client-IP``, ``X-Client-IP``,
``Fastly-Client-IP``, ``X-Cluster-Client-IP``, ``X-Azure-ClientIP``...) names the client a proxy or CDN
saw: no client of ours sends one."""


@functools.lru_cache(maxsize=1024)
def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``, and ``::ffff:127.0.0.1``, which is
    how a dual-stack socket reports an IPv4 loopback client); names and ``None`` are not. Kept per text: every
    request asks it twice (its client and its ``Host``), and parsing an address costs more than the rest of
    the check."""
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def is_proxy_header(name: str) -> bool:
    """Whether ``name`` is a header a proxy adds to say "this came from elsewhere": ``Via``, any name containing
    ``forwarded`` (``Forwarded``, every ``X-Forwarded-*``, ``X-Original-Forwarded-For``), or any name ending
    in ``-ip`` or ``clientip`` (:data:`PROXY_HEADER_ENDINGS`)."""
    lowered = name.strip().lower()
    return lowered == "via" or "forwarded" in lowered or lowered.endswith(PROXY_HEADER_ENDINGS)


def is_proxied(headers: Mapping[str, str]) -> bool:
    """Whether the request came through a proxy: it carries a header :func:`is_proxy_header` recognizes.
    Loopback is then the proxy's address, not the client's."""
    return any(is_proxy_header(name) for name in headers)


def _is_loopback_name(host: str) -> bool:
    """Whether a ``Host`` header's name is this machine: ``localhost``, a loopback address, or the
    machine's own host name (Debian maps it to 127.0.1.1). A DNS-rebinding page has a name of its own."""
    name = host.strip().lower().rstrip(".")
    return name in ("localhost", socket.gethostname().lower()) or name.endswith(".localhost") or is_loopback(name)


def cross_site_reason(lowered: Mapping[str, str]) -> str | None:
    """Why a request that reached us from loopback still did not come from a local client of ours, or
    ``None``.

    Loopback alone is not enough: any web page open in the owner's browser can POST here (a form or a
    ``fetch`` with a ``text/plain`` body needs no CORS preflight), and a DNS-rebinding page does it under
    a name of its own that resolves to 127.0.0.1. Browsers announce both: an ``Origin`` that is not this
    server, ``Sec-Fetch-Site: cross-site``, or a ``Host`` that is not a loopback name. Non-browser clients
    (httpx, curl) send none of these or matching ones.
    """
    host = lowered.get("host", "")
    try:
        hostname = urlsplit(f"//{host}").hostname if host else None
        origin = lowered.get("origin")
        origin_netloc = urlsplit(origin.strip()).netloc.lower() if origin is not None else None
    except ValueError:  # "[::1" and the like: no browser of ours sends that
        return "the Host or Origin header cannot be read"
    if hostname is not None and not _is_loopback_name(hostname):
        return "the Host header is not a loopback name"
    fetch_site = lowered.get("sec-fetch-site", "").strip().lower()
    if fetch_site and fetch_site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site}"
    if origin_netloc is not None and (origin_netloc != host.strip().lower() or not host):
        return "the Origin is not this server"
    return None


def authorize(headers: Mapping[str, str], client_host: str | None, settings: Settings) -> ChatError | None:
    """``None`` when the HTTP caller may use the route, else the 401 (``unauthorized``) or 403
    (``forbidden``) to answer."""
    lowered = {name.lower(): value for name, value in headers.items()}
    token = settings.api_token
    if token:
        scheme, _, given = lowered.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return None
        return ChatError(ErrorKind.UNAUTHORIZED, "Unauthorized: send Authorization: Bearer <AGENT_API_TOKEN>")
    if not is_loopback(client_host) or is_proxied(lowered):
        return ChatError(
            ErrorKind.FORBIDDEN, "Forbidden: without AGENT_API_TOKEN only loopback clients may use this route"
        )
    reason = cross_site_reason(lowered)
    if reason is not None:
        return ChatError(
            ErrorKind.FORBIDDEN, f"Forbidden: a cross-site request ({reason}); set AGENT_API_TOKEN for other clients"
        )
    return None
