"""Who may use ``POST /api/agent/chat``, the page and its media: the one decision, "is this a direct local
client of ours", made here for all three.

The route spends the owner's API key. With ``AGENT_API_TOKEN`` set, a matching bearer token is required
(compared in constant time). Without it only a *direct* loopback client is served: not a request that a
proxy forwarded (:func:`is_proxied`), and not a web page of another site open in the owner's browser
(:func:`cross_site_reason`). Without sign-in the page lists every conversation, sends questions on the
owner's key and hands out media URLs: it and ``GET /api/media/...`` serve only direct local clients too,
unless the operator sets ``AGENT_ALLOW_REMOTE_PAGE`` (:func:`page_refusal`). With sign-in on, the route
wants a personal API token and no other site's page (:func:`authorize_signed_in`), wherever the caller is.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from agent_app.errors import ChatError, ErrorKind
from agent_app.settings import Settings
from agent_app.storage.models import Owner

PROXY_HEADER_ENDINGS = ("-ip", "clientip")
"""A header name ending so (``X-Real-IP``, ``CF-Connecting-IP``, ``True-Client-IP``, ``X-Client-IP``,
``Fastly-Client-IP``, ``X-Cluster-Client-IP``, ``X-Azure-ClientIP``...) names the client a proxy or CDN
saw: no client of ours sends one."""


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``, and ``::ffff:127.0.0.1``, which is
    how a dual-stack socket reports an IPv4 loopback client); names and ``None`` are not."""
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


def is_direct_loopback(lowered: Mapping[str, str], client_host: str | None) -> bool:
    """Whether the TCP peer is this machine and no proxy forwarded the request (``lowered``: header names in
    lower case)."""
    return is_loopback(client_host) and not is_proxied(lowered)


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
    if not is_direct_loopback(lowered, client_host):
        return ChatError(
            ErrorKind.FORBIDDEN, "Forbidden: without AGENT_API_TOKEN only loopback clients may use this route"
        )
    reason = cross_site_reason(lowered)
    if reason is not None:
        return ChatError(
            ErrorKind.FORBIDDEN, f"Forbidden: a cross-site request ({reason}); set AGENT_API_TOKEN for other clients"
        )
    return None


def foreign_origin_reason(lowered: Mapping[str, str], app_origin: str) -> str | None:
    """Why a request with sign-in on came from another site's page, or ``None``: its ``Origin`` is not the
    app's public one (``[auth] redirect_uri``'s), or the browser says ``Sec-Fetch-Site`` is not same-origin.
    Non-browser clients send neither."""
    origin = lowered.get("origin")
    if origin is not None and origin.strip().rstrip("/").lower() != app_origin.rstrip("/").lower():
        return "the Origin is not this app"
    fetch_site = lowered.get("sec-fetch-site", "").strip().lower()
    if fetch_site and fetch_site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site}"
    return None


def authorize_signed_in(
    headers: Mapping[str, str], settings: Settings, token_owner: Callable[[str], Owner | None]
) -> ChatError | None:
    """With sign-in on: ``None`` when the request comes from no other site and carries a live personal API
    token (``token_owner`` says whose, from its hash), else the 403 or 401 to answer. Loopback is no exception,
    and ``AGENT_API_TOKEN`` is not used."""
    lowered = {name.lower(): value for name, value in headers.items()}
    if settings.sign_in is None:
        return ChatError(ErrorKind.INVALID_CONFIGURATION, "; ".join(settings.problems_with("[auth]")))
    reason = foreign_origin_reason(lowered, settings.sign_in.origin)
    if reason is not None:
        return ChatError(ErrorKind.FORBIDDEN, f"Forbidden: a cross-site request ({reason})")
    scheme, _, given = lowered.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and given.strip() and token_owner(given.strip()) is not None:
        return None
    return ChatError(
        ErrorKind.UNAUTHORIZED, "Unauthorized: send Authorization: Bearer <a personal API token made on the page>"
    )


REMOTE_PAGE_REFUSAL = (
    "This workspace only serves the machine it runs on: it has no sign-in yet, and anyone who opens it sees"
    " every conversation and media file and asks questions on the owner's API key. To serve other machines,"
    " the operator sets AGENT_ALLOW_REMOTE_PAGE = true (in .streamlit/secrets.toml or the environment) and"
    ' restarts the app; see "Serving other machines" in the README.'
)


def page_refusal(headers: Mapping[str, str], client_host: str | None, settings: Settings) -> str | None:
    """Why the page and its media will not serve this client (a text saying how to allow it), or ``None``.

    Only a direct local client of ours is served (as the route without a token), unless
    ``AGENT_ALLOW_REMOTE_PAGE`` is on (the page then warns that it is open) or sign-in is (then the page
    serves only signed-in people their own work, wherever they are)."""
    if settings.allow_remote_page or settings.sign_in_on:
        return None
    lowered = {name.lower(): value for name, value in headers.items()}
    if not is_direct_loopback(lowered, client_host):
        return REMOTE_PAGE_REFUSAL
    reason = cross_site_reason(lowered)
    return None if reason is None else f"{REMOTE_PAGE_REFUSAL} (This request came from another site: {reason}.)"
