"""``GET /api/media/{asset_id}``: the project's media files, streamed from disk with HTTP range support.

Why a route: ``st.video(path)`` reads the whole file into Streamlit's in-memory media store on every
rerun of every session, which for an hour of video means hundreds of megabytes read per click. When
``app.py`` mounts :data:`MEDIA_ROUTES`, the player points the browser here instead; the file is
streamed (Starlette's ``FileResponse`` answers ``Range`` requests, so seeking works) and a rerun
costs nothing. Without the route (AppTest, a bare ``streamlit run agent_app/ui/page_script.py``) the
player falls back to ``st.video(path)``.

Only an asset id reaches this endpoint; the path on disk comes from storage, never from the URL. Media in an
object store (``AGENT_MEDIA_STORE``) is not streamed through this server: the player gets the store's
presigned URL, and this route redirects there.
With sign-in on, a request is served only with the URL's own valid, unexpired signature, made for a sign-in
that has not ended (:mod:`agent_app.sign_in.media_links`: the page signs the URLs of the signed-in owner's
assets), whoever asks and without a session; anything else is a 403. Without sign-in the files are served to
the clients the page serves (:func:`~agent_app.routes.access.page_refusal`: this machine only, unless
``AGENT_ALLOW_REMOTE_PAGE`` is on); others get a 403 saying why.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from agent_app.routes.access import page_refusal
from agent_app.settings import Settings, load_settings
from agent_app.sign_in.media_links import MediaSigner, MediaSigning
from agent_app.storage import Storage, StorageError, open_storage
from agent_app.types import MediaAsset

MEDIA_PATH = "/api/media"
_ASSET_ID = re.compile(r"[0-9a-f]{32}")
_mounted = False


async def media_endpoint(request: Request) -> Response:
    """The asset's file (``403`` for a missing, wrong or expired signature or an ended sign-in with sign-in on,
    or a client the page does not serve without; ``404`` for an unknown or malformed id, or a file gone)."""
    settings = load_settings()
    asset_id = str(request.path_params.get("asset_id", ""))
    try:
        storage = open_storage(settings)
        refusal = await run_in_threadpool(_refusal, request, asset_id, settings, storage)
    except ValueError as exc:  # a mistyped setting: the message names it, never its value
        return JSONResponse({"error": str(exc)}, status_code=503)
    except StorageError as exc:
        return JSONResponse({"error": f"The database cannot be used: {exc}"}, status_code=503)
    if refusal is not None:
        return JSONResponse({"error": f"Forbidden: {refusal}"}, status_code=403)
    asset = storage.get_asset(asset_id) if _ASSET_ID.fullmatch(asset_id) else None
    if asset is None:
        return JSONResponse({"error": "Not found"}, status_code=404)
    try:
        return _asset_response(storage, asset)
    except StorageError as exc:
        return JSONResponse({"error": f"Media unavailable: {exc}"}, status_code=503)


def _refusal(request: Request, asset_id: str, settings: Settings, storage: Storage) -> str | None:
    """Why this request gets no media (with sign-in on: no valid signature, or the sign-in ended)."""
    if settings.sign_in_on:
        signer = MediaSigner.for_settings(settings)
        sign_in_id = signer.valid(asset_id, request.query_params) if signer is not None else None
        if sign_in_id is None:
            return "this media URL is not signed, its signature is wrong, or it has expired: reload the page"
        if not storage.accounts().sign_in_live(sign_in_id):
            return "the sign-in this media URL was made for has ended: sign in again"
        return None
    return page_refusal(request.headers, request.client.host if request.client else None, settings)


def _asset_response(storage: Storage, asset: MediaAsset) -> Response:
    """The local file streamed, or a redirect to the object store's presigned URL (it serves Range itself)."""
    elsewhere = storage.playback_url(asset.id, asset.mime_type, None)
    if elsewhere is not None:
        return RedirectResponse(elsewhere, status_code=307, headers={"Cache-Control": "no-store"})
    with storage.media_file(asset.id) as path:  # the local disk's own file: it outlives the block
        pass
    if path is None:
        return JSONResponse({"error": "Not found"}, status_code=404)
    return FileResponse(
        path,
        media_type=asset.mime_type or "application/octet-stream",
        headers={"Cache-Control": "private, max-age=3600"},
    )


def media_routes() -> list[Route]:
    """The routes for ``st.App(..., routes=[...])``; calling this tells the page they are mounted."""
    global _mounted  # noqa: PLW0603 - one process-wide fact: app.py mounted the route
    _mounted = True
    return [Route(MEDIA_PATH + "/{asset_id}", media_endpoint, methods=["GET", "HEAD"])]


def media_url(
    storage: Storage, page_url: str | None, asset: MediaAsset, signing: MediaSigning | None = None
) -> str | None:
    """The browser URL the player reads ``asset`` from, the store deciding: an object store's presigned URL, or
    this route's address (when it is mounted and the page's URL is known) for media on the local disk, signed
    for the session's sign-in when ``signing`` is given (sign-in on). Raises
    :class:`~agent_app.storage.StorageError` when the store cannot say."""
    route_url = urljoin(page_url, f"{MEDIA_PATH}/{asset.id}") if _mounted and page_url else None
    if route_url is not None and signing is not None:
        query, _ = signing.signer.query(asset.id, signing.sign_in_id)
        route_url = f"{route_url}?{query}"
    return storage.playback_url(asset.id, asset.mime_type, route_url)
