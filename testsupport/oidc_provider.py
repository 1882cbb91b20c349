"""A real OpenID Connect provider for the sign-in tests: ``oidc-provider-mock`` (discovery, authorization form,
token endpoint with signed ID tokens, end-session) served by werkzeug on a free 127.0.0.1 port in a thread of
the test process, stopped when the block ends. Any client id and secret are accepted; a user signs in by typing
their subject into the provider's form, and their claims are set beforehand with :meth:`OidcProvider.add_user`."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote

import httpx
import oidc_provider_mock
import werkzeug.serving


@dataclass(frozen=True)
class OidcProvider:
    url: str

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    def add_user(self, subject: str, claims: dict[str, object]) -> None:
        response = httpx.put(f"{self.url}/users/{quote(subject, safe='')}", json=claims, timeout=10)
        response.raise_for_status()


@contextmanager
def running_oidc_provider() -> Iterator[OidcProvider]:
    """The provider on 127.0.0.1 (its issuer is the address it is reached at), nonces required."""
    previous = os.environ.get("AUTHLIB_INSECURE_TRANSPORT")
    os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # the provider's own Authlib: plain HTTP on loopback
    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(require_nonce=True), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield OidcProvider(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        if previous is None:
            os.environ.pop("AUTHLIB_INSECURE_TRANSPORT", None)
        else:
            os.environ["AUTHLIB_INSECURE_TRANSPORT"] = previous
