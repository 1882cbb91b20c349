"""``POST /api/agent/chat``: validate the body, build the system prompt, call the configured adapter.

One pure handler, :func:`handle_chat_body` (bytes in, :class:`ApiResult` out), serves both the Starlette
endpoint that ``app.py`` mounts and the page's in-process client, so validation and status mapping are
the same wherever a request comes from. The handler never raises and never answers 500:

=====  ==========================================================================================
200    ``{content, toolCalls?, providerMetadata?}``
400    body is not JSON (``NaN``/``Infinity`` are not), not ``{messages, context?}``, or a history no
       provider accepts (:func:`conversation_problems`); the message names the fields
401    ``AGENT_API_TOKEN`` is set and the request lacks ``Authorization: Bearer <token>`` (HTTP only)
403    no token is configured and the caller is not a direct loopback client, or is a browser page of
       another site (``Origin``, ``Sec-Fetch-Site``, a non-loopback ``Host``) (HTTP only)
413    body larger than ``AGENT_MAX_BODY_BYTES`` (not checked for the page's in-process client)
502    missing/invalid LLM or tool configuration (naming the setting), ``Unknown LLM provider: <name>``,
       or ``{"error": "LLM provider error"}`` for any provider failure (cause logged, secrets removed)
=====  ==========================================================================================
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_app.llm_config import LLMConfig, LLMConfigurationError, load_llm_config
from agent_app.plugins import ToolConfigurationError, enabled_tool_registry
from agent_app.prompt import build_system_prompt
from agent_app.providers import get_adapter
from agent_app.providers.base import ProviderChatParams, ProviderError, describe_failure
from agent_app.settings import read_int, read_str
from agent_app.types import ChatMessage, ChatRequest, ToolSchema

ROUTE_PATH = "/api/agent/chat"
DEFAULT_MAX_BODY_BYTES = 2_000_000
PROVIDER_ERROR = "LLM provider error"
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApiResult:
    """A response of the route: HTTP status, JSON body, extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def _known_secrets() -> list[str]:
    """The secrets a log line must never contain, whatever failed."""
    return [value for value in (read_str("LLM_API_KEY"), read_str("AGENT_API_TOKEN")) if value]


def _error(status: int, message: str, **extra: Any) -> ApiResult:
    return ApiResult(status, {"error": message, **extra})


# --- access -----------------------------------------------------------------------------------


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


def _is_loopback_name(host: str) -> bool:
    """Whether a ``Host`` header's name is this machine: ``localhost``, a loopback address, or the
    machine's own host name (Debian maps it to 127.0.1.1). A DNS-rebinding page has a name of its own."""
    name = host.strip().lower().rstrip(".")
    return name in ("localhost", socket.gethostname().lower()) or name.endswith(".localhost") or is_loopback(name)


def _cross_site(lowered: Mapping[str, str]) -> str | None:
    """Why a request that reached us from loopback still did not come from a local client of ours, or
    ``None``.

    Loopback alone is not enough: any web page open in the owner's browser can POST here (a form or a
    ``fetch`` with a ``text/plain`` body needs no CORS preflight), and a DNS-rebinding page does it under
    a name of its own that resolves to 127.0.0.1. Browsers announce both: an ``Origin`` that is not this
    server, ``Sec-Fetch-Site: cross-site``, or a ``Host`` that is not a loopback name. Non-browser clients
    (httpx, curl, the page's own client) send none of these or matching ones.
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


def authorize(headers: Mapping[str, str], client_host: str | None) -> ApiResult | None:
    """``None`` when the HTTP caller may use the route, else the 401/403 to answer.

    The route spends the owner's API key: with ``AGENT_API_TOKEN`` set a matching bearer token is
    required (compared in constant time); without it only direct loopback clients are served, and a
    request carrying forwarding headers came through a proxy, so it is not a loopback client.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    token = read_str("AGENT_API_TOKEN")
    if token:
        scheme, _, given = lowered.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
            return None
        return ApiResult(
            401,
            {"error": "Unauthorized: send Authorization: Bearer <AGENT_API_TOKEN>"},
            {"WWW-Authenticate": "Bearer"},
        )
    if not is_loopback(client_host) or any(name in lowered for name in FORWARDING_HEADERS):
        return _error(403, "Forbidden: without AGENT_API_TOKEN only loopback clients may use this route")
    reason = _cross_site(lowered)
    if reason is not None:
        return _error(403, f"Forbidden: a cross-site request ({reason}); set AGENT_API_TOKEN for other clients")
    return None


# --- validation -------------------------------------------------------------------------------


def max_body_bytes() -> int:
    """``AGENT_MAX_BODY_BYTES`` (default 2 MB); raises ``ValueError`` naming the setting when unparsable."""
    return read_int("AGENT_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)


def _field_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


MAX_DETAILS = 50
"""Problems listed in a 400's ``details``: a 2 MB body of 100k bad messages must not earn a 10 MB answer."""


def _validation_failure(problems: list[tuple[str, str]]) -> ApiResult:
    summary = "; ".join(f"{name}: {message}" for name, message in problems[:10])
    if len(problems) > 10:
        summary += f"; and {len(problems) - 10} more"
    return _error(
        400,
        f"Invalid request: {summary}",
        details=[{"field": name, "message": message} for name, message in problems[:MAX_DETAILS]],
    )


def conversation_problems(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """What makes ``messages`` a history no provider accepts, as ``(field, message)`` pairs.

    OpenAI and Gemini both reject a tool result that answers no call of the assistant turn right before
    it, and an assistant turn whose calls are not all answered before the conversation goes on. Such a
    history is the client's mistake, so it gets a 400 naming the message instead of a provider's 400
    reported as a 502. The orchestrator never sends one: it answers every call, even of a cut-off run.
    A blank user message is refused too: it asks nothing, and Gemini rejects an empty text part.
    """
    problems: list[tuple[str, str]] = []
    open_calls: dict[str, str] = {}  # id -> field of the call, for the turn being answered
    for index, message in enumerate(messages):
        if message.role == "user" and not message.content.strip():
            problems.append((f"messages[{index}].content", "a user message must not be empty"))
        if message.role == "tool":
            if message.tool_result is None:
                problems.append((f"messages[{index}].toolResult", "required for a message with role 'tool'"))
            elif open_calls.pop(message.tool_result.tool_call_id, None) is None:
                problems.append(
                    (
                        f"messages[{index}].toolResult.toolCallId",
                        "answers no unanswered tool call of the assistant message before it",
                    )
                )
            continue
        problems.extend((name, "has no tool result before the next message") for name in open_calls.values())
        open_calls = {}
        for position, call in enumerate(message.tool_calls or []):
            name = f"messages[{index}].toolCalls[{position}].id"
            if message.role != "assistant":
                problems.append((f"messages[{index}].toolCalls", "only assistant messages may carry tool calls"))
                break
            if call.id in open_calls:
                problems.append((name, "repeats the id of another call of the same message"))
            open_calls[call.id] = name
    problems.extend((name, "has no tool result") for name in open_calls.values())
    return problems


def parse_chat_request(body: bytes) -> ChatRequest | ApiResult:
    """The validated request, or the 400 naming what is wrong (JSON syntax, shape, types, a history no
    provider would accept).

    ``NaN`` and ``Infinity`` are refused (they are not JSON; Python would send them on to the provider as
    invalid JSON); duplicate keys keep the last value, as in every JSON parser we talk to.
    """
    try:
        data = from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        return _validation_failure([("body", f"Invalid JSON: {exc}")])
    try:
        request = ChatRequest.model_validate(data)
    except ValidationError as exc:
        return _validation_failure([(_field_path(tuple(e["loc"])), e["msg"]) for e in exc.errors()])
    problems: list[tuple[str, str]] = []
    if not request.messages:
        problems.append(("messages", "must contain at least one message"))
    problems.extend(conversation_problems(request.messages))
    return _validation_failure(problems) if problems else request


# --- the handler ------------------------------------------------------------------------------


def current_tool_schemas() -> list[ToolSchema]:
    """The enabled tools' internal schemas (the registry is built once per tool configuration)."""
    return enabled_tool_registry().to_tool_schemas()


def _provider_failure(config: LLMConfig, exc: BaseException) -> ApiResult:
    cause = str(exc) if isinstance(exc, ProviderError) else describe_failure(exc, [config.api_key, *_known_secrets()])
    logger.warning("%s (provider %s, model %s): %s", PROVIDER_ERROR, config.provider, config.model, cause)
    return _error(502, PROVIDER_ERROR)


def handle_chat_request(request: ChatRequest, tool_schemas: Sequence[ToolSchema] | None = None) -> ApiResult:
    """Configuration → adapter → system prompt + tool schemas → provider call → 200 or 502.

    ``tool_schemas`` defaults to the enabled tools' (the page passes its own registry's, the same set).
    Never raises: whatever escapes the steps below is logged and answered 502.
    """
    try:
        return _handle(request, tool_schemas)
    except Exception as exc:  # noqa: BLE001 - the handler's contract: a JSON status, never an exception
        logger.error("agent route failed: %s", describe_failure(exc, _known_secrets()))
        return _error(502, PROVIDER_ERROR)


def _handle(request: ChatRequest, tool_schemas: Sequence[ToolSchema] | None) -> ApiResult:
    try:
        config = load_llm_config()
        adapter = get_adapter(config)
    except LLMConfigurationError as exc:
        return _error(502, str(exc))
    except Exception as exc:  # noqa: BLE001 - an SDK that cannot build its client is a provider failure
        logger.warning("%s: cannot create the adapter: %s", PROVIDER_ERROR, describe_failure(exc, _known_secrets()))
        return _error(502, PROVIDER_ERROR)
    try:
        schemas = list(tool_schemas) if tool_schemas is not None else current_tool_schemas()
    except (ToolConfigurationError, ValueError) as exc:
        return _error(502, f"Tool configuration error: {exc}")
    params = ProviderChatParams(
        messages=request.messages,
        system_prompt=build_system_prompt(request.context, schemas),
        tool_schemas=schemas,
    )
    try:
        response = adapter.chat(params)
    except Exception as exc:  # noqa: BLE001 - ProviderError and anything unforeseen: never a 500
        return _provider_failure(config, exc)
    return ApiResult(200, response.to_chat_response().to_wire())


def handle_chat_body(
    body: bytes, tool_schemas: Sequence[ToolSchema] | None = None, *, limit_size: bool = True
) -> ApiResult:
    """The whole route for a request body: size limit, validation, then :func:`handle_chat_request`.

    ``limit_size=False`` is for the page's in-process client: ``AGENT_MAX_BODY_BYTES`` protects the server
    from what arrives over the network, while the page's own history legitimately grows past it (a few long
    transcripts), and refusing it would end that conversation for good.
    """
    if limit_size:
        try:
            limit = max_body_bytes()
        except ValueError as exc:
            return _error(502, str(exc))
        if len(body) > limit:
            return _error(413, f"Request body too large: the limit is {limit} bytes")
    parsed = parse_chat_request(body)
    if isinstance(parsed, ApiResult):
        return parsed
    return handle_chat_request(parsed, tool_schemas)


# --- the Starlette endpoint -------------------------------------------------------------------


def _response(result: ApiResult) -> JSONResponse:
    return JSONResponse(result.body, status_code=result.status, headers=result.headers or None)


async def _read_body(request: Request, limit: int) -> bytes | ApiResult:
    """The body, refusing early when ``Content-Length`` or the bytes actually streamed pass ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                return _error(413, f"Request body too large: the limit is {limit} bytes")
        except ValueError:
            return _error(400, "Invalid request: Content-Length is not a number")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limit:
                return _error(413, f"Request body too large: the limit is {limit} bytes")
    except ClientDisconnect:
        return _error(400, "Invalid request: the body could not be read (client disconnected)")
    return bytes(body)


async def chat_endpoint(request: Request) -> JSONResponse:
    """``POST /api/agent/chat`` over HTTP: access check, bounded body read, then the shared handler in a
    worker thread (the SDK calls block)."""
    try:
        denied = authorize(request.headers, request.client.host if request.client else None)
        if denied is not None:
            return _response(denied)
        try:
            limit = max_body_bytes()
        except ValueError as exc:
            return _response(_error(502, str(exc)))
        body = await _read_body(request, limit)
        if isinstance(body, ApiResult):
            return _response(body)
        return _response(await run_in_threadpool(handle_chat_body, body))
    except Exception as exc:  # noqa: BLE001 - the last guard: a JSON error, never a traceback
        logger.error("agent route failed: %s", describe_failure(exc, _known_secrets()))
        return _response(_error(502, PROVIDER_ERROR))


async def method_not_allowed_endpoint(request: Request) -> JSONResponse:
    """Any other method on the route: a JSON ``405`` with ``Allow: POST``, like every other error of the
    route (Starlette's own 405 is plain text)."""
    return JSONResponse(
        {"error": f"Method {request.method} not allowed: use POST"}, status_code=405, headers={"Allow": "POST"}
    )


def chat_routes() -> list[Route]:
    """The route for ``st.App(..., routes=[...])``: ``POST`` served, every other method a JSON 405."""
    return [
        Route(ROUTE_PATH, chat_endpoint, methods=["POST"]),
        Route(ROUTE_PATH, method_not_allowed_endpoint, methods=["GET", "PUT", "PATCH", "DELETE"]),
    ]
