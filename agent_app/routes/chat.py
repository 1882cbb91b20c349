"""``POST /api/agent/chat``: the HTTP edge of :class:`~agent_app.chat_handler.ChatHandler`.

Here, and only here, a request is bytes: access check, bounded body read, JSON parsing; then the same
typed handler a run's orchestrator sends through, and its :class:`~agent_app.errors.ChatError` kind turned
into a status.
The route never answers 500:

=====  ==========================================================================================
200    ``{content, toolCalls?, providerMetadata?}``
400    body is not JSON (``NaN``/``Infinity`` are not), not ``{messages, context?}``, or a history no
       provider accepts; the message names the fields, ``details`` lists them
401    ``AGENT_API_TOKEN`` is set and the request lacks ``Authorization: Bearer <token>``; with sign-in on,
       the request lacks a live personal API token
403    no token is configured and the caller is not a direct loopback client, or is a browser page of
       another site (with sign-in on: an ``Origin`` that is not the app's; see :mod:`agent_app.routes.access`)
413    body larger than ``AGENT_MAX_BODY_BYTES``
502    missing/invalid LLM or tool configuration (naming the setting), ``Unknown LLM provider: <name>``,
       or ``{"error": "LLM provider error"}`` for any provider failure (cause logged, secrets removed)
503    ``AGENT_MAX_CONCURRENT_CHATS`` requests are already waiting for the model: ``Retry-After: 1``, at once
=====  ==========================================================================================

The 200 body also carries ``usage`` (``{inputTokens, outputTokens}``) when the provider counted tokens. With
``Accept: text/event-stream`` the answer streams as Server-Sent Events (:mod:`agent_app.routes.chat_events`).

No request holds a thread while the model answers: the handler is awaited on the server's own event loop
(the SDKs' async clients), so the server's shared worker pool stays free for the page, its static files and
the media.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive

from agent_app.chat_handler import ChatHandler
from agent_app.errors import ChatError, ErrorKind, provider_failure
from agent_app.providers.base import describe_failure
from agent_app.request_validation import parse_chat_request
from agent_app.routes.access import authorize, authorize_signed_in
from agent_app.routes.chat_events import client_left, event_stream, wants_event_stream
from agent_app.routes.disconnect import watch_disconnect
from agent_app.settings import Settings, SettingsError, load_settings
from agent_app.sign_in.api_tokens import token_owner
from agent_app.storage import StorageError, open_storage
from agent_app.types import ChatRequest, ChatResponse

ROUTE_PATH = "/api/agent/chat"
RETRY_AFTER_SECONDS = 1

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ApiResult:
    """A response of the route: HTTP status, JSON body, extra headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_error(cls, error: ChatError) -> ApiResult:
        headers = {"WWW-Authenticate": "Bearer"} if error.kind is ErrorKind.UNAUTHORIZED else {}
        return cls(error.status or 502, error.wire_body(), headers)


def max_body_bytes(settings: Settings) -> int:
    """``AGENT_MAX_BODY_BYTES``; a :class:`ChatError` naming the setting when its value is unusable."""
    try:
        settings.require("AGENT_MAX_BODY_BYTES")
    except SettingsError as exc:
        raise ChatError(ErrorKind.INVALID_CONFIGURATION, str(exc)) from None
    return settings.max_body_bytes


def _too_large(limit: int) -> ChatError:
    return ChatError(ErrorKind.REQUEST_TOO_LARGE, f"Request body too large: the limit is {limit} bytes")


def _parse_body(body: bytes, settings: Settings) -> ChatRequest:
    limit = max_body_bytes(settings)
    if len(body) > limit:
        raise _too_large(limit)
    return parse_chat_request(body)


def _response(result: ApiResult) -> JSONResponse:
    return JSONResponse(result.body, status_code=result.status, headers=result.headers or None)


def _error_response(error: ChatError) -> Response:
    return _response(ApiResult.of_error(error))


class ChatSlots:
    """How many chat requests wait for the model at once. Counted on the server's event loop only, so no
    lock; the limit (``AGENT_MAX_CONCURRENT_CHATS``) comes with each request's settings."""

    def __init__(self) -> None:
        self.in_use = 0

    def take(self, settings: Settings) -> bool:
        try:
            settings.require("AGENT_MAX_CONCURRENT_CHATS")
        except SettingsError as exc:
            raise ChatError(ErrorKind.INVALID_CONFIGURATION, str(exc)) from None
        if self.in_use >= settings.max_concurrent_chats:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        self.in_use -= 1


SLOTS = ChatSlots()


def _busy() -> JSONResponse:
    return JSONResponse(
        {"error": "The server is busy with other chat requests: retry in a moment"},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refusing early when ``Content-Length`` or the bytes actually streamed pass ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise _too_large(limit)
        except ValueError:
            raise ChatError(ErrorKind.INVALID_REQUEST, "Invalid request: Content-Length is not a number") from None
    body = bytearray()
    try:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > limit:
                raise _too_large(limit)
    except ClientDisconnect:
        raise ChatError(
            ErrorKind.INVALID_REQUEST, "Invalid request: the body could not be read (client disconnected)"
        ) from None
    return bytes(body)


async def _json_answer(chat_request: ChatRequest, settings: Settings, receive: Receive) -> ChatResponse:
    """The handler's answer, its slot released as soon as the provider request is over; a client that leaves
    first cancels the request (:mod:`agent_app.routes.disconnect`)."""
    task = asyncio.create_task(ChatHandler(settings).answer(chat_request))
    task.add_done_callback(lambda _: SLOTS.release())
    watcher = watch_disconnect(receive, task)
    try:
        await asyncio.wait([task])
    finally:
        watcher.cancel()
        task.cancel()  # the endpoint itself was cancelled (the server stopping): the request goes with it
    if task.cancelled():
        raise client_left()
    return task.result()


async def _denied(request: Request, settings: Settings) -> ChatError | None:
    """Why the caller may not use the route (:mod:`agent_app.routes.access`), or ``None``. With sign-in on, the
    token's hash is looked up in storage off the event loop."""
    if not settings.sign_in_on:
        return authorize(request.headers, request.client.host if request.client else None, settings)
    try:
        accounts = open_storage(settings).accounts()
    except (StorageError, ValueError) as exc:
        return ChatError(ErrorKind.INVALID_CONFIGURATION, f"The database cannot be used: {exc}")
    headers = dict(request.headers.items())
    return await run_in_threadpool(authorize_signed_in, headers, settings, partial(token_owner, accounts))


async def chat_endpoint(request: Request) -> Response:
    """``POST /api/agent/chat`` over HTTP: access check, bounded body read, parsing, a free slot (else 503 at
    once), then the typed handler awaited on the server's event loop, answered as JSON or as events."""
    try:
        settings = load_settings()  # once per request
        denied = await _denied(request, settings)
        if denied is not None:
            raise denied
        chat_request = _parse_body(await _read_body(request, max_body_bytes(settings)), settings)
        if not SLOTS.take(settings):
            return _busy()
        if wants_event_stream(request.headers):
            return await event_stream(chat_request, settings, request.receive, _error_response, SLOTS.release)
        return _response(ApiResult(200, (await _json_answer(chat_request, settings, request.receive)).to_wire()))
    except ChatError as exc:
        return _response(ApiResult.of_error(exc))
    except Exception as exc:  # noqa: BLE001 - the last guard: a JSON error, never a traceback
        logger.error("agent route failed: %s", describe_failure(exc))
        return _response(ApiResult.of_error(provider_failure(ErrorKind.PROVIDER_FAILED)))


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
