"""The orchestrator's :class:`~agent_app.types.ChatClient` for a server elsewhere: a POST to
``/api/agent/chat`` whose status tells the error's kind. (In process, the orchestrator sends through
:class:`~agent_app.chat_handler.ChatHandler` itself.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agent_app.errors import ChatError, ErrorKind
from agent_app.types import Cancellation, ChatRequest, ChatResponse, StopRequested

DEFAULT_HTTP_TIMEOUT_SECONDS = 300.0


def encode_request(request: ChatRequest) -> bytes:
    """The request as the route's wire JSON (camelCase, unset optionals left out)."""
    return request.model_dump_json(by_alias=True, exclude_none=True).encode()


def _error_text(body: Any, status: int) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return f"The agent API answered HTTP {status}"


def decode_response(status: int, body: Any) -> ChatResponse:
    """A 200 body as :class:`ChatResponse`; anything else as :class:`ChatError`."""
    if status != 200:
        raise ChatError(ErrorKind.for_status(status), _error_text(body, status), status=status)
    try:
        return ChatResponse.model_validate(body)
    except ValidationError:
        raise _unreadable(status) from None


def _unreadable(status: int) -> ChatError:
    return ChatError(ErrorKind.UNREACHABLE, "The agent API answered with an unreadable response", status=status)


class HttpChatClient:
    """POSTs to a running server's ``/api/agent/chat``; one pooled httpx client per instance."""

    def __init__(self, url: str, token: str | None = None, timeout: float = DEFAULT_HTTP_TIMEOUT_SECONDS) -> None:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.url = url
        # Imported here, not at the top: a page importing httpx while a route request imports the SDK (which
        # imports httpx) can meet it half initialised ("partially initialized module 'httpx'").
        import httpx

        self._httpx = httpx
        self._client = httpx.Client(headers=headers, timeout=timeout)

    def send(
        self,
        request: ChatRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        cancellation: Cancellation | None = None,
    ) -> ChatResponse:
        """The route's JSON answer, whole: ``on_text`` gets its text once; ``cancellation`` is looked at before
        sending (and :class:`StopRequested` raised)."""
        if cancellation is not None and cancellation.is_set():
            raise StopRequested
        answer = self._post(request)
        if on_text is not None and answer.content:
            on_text(answer.content)
        return answer

    def _post(self, request: ChatRequest) -> ChatResponse:
        try:
            response = self._client.post(self.url, content=encode_request(request))
        except self._httpx.TimeoutException:
            raise ChatError(ErrorKind.UNREACHABLE, "The agent API did not answer in time") from None
        except self._httpx.HTTPError as exc:
            raise ChatError(ErrorKind.UNREACHABLE, f"Could not reach the agent API ({type(exc).__name__})") from None
        try:
            body: Any = response.json()
        except ValueError:
            body = None
            if response.status_code == 200:
                raise _unreadable(200) from None
        return decode_response(response.status_code, body)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
