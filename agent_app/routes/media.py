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
The files are served to the clients the page serves (:func:`~agent_app.routes.access.page_refusal`:
this machine only, unless ``AGENT_ALLOW_REMOTE_PAGE`` is on); others get a 403 saying why.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from agent_app.routes.access import page_refusal
from agent_app.settings import load_settings
from agent_app.storage import Storage, StorageError, open_storage
from agent_app.types import MediaAsset

MEDIA_PATH = "/api/media"
_ASSET_ID = re.compile(r"[0-9a-f]{32}")
_mounted = False


async def media_endpoint(request: Request) -> Response:
    """The asset's file (``403`` for a client the page does not serve, ``404`` for an unknown or malformed id,
    or a file gone from disk)."""
    settings = load_settings()
    refusal = page_refusal(request.headers, request.client.host if request.client else None, settings)
    if refusal is not None:
        return JSONResponse({"error": f"Forbidden: {refusal}"}, status_code=403)
    asset_id = str(request.path_params.get("asset_id", ""))
    if not _ASSET_ID.fullmatch(asset_id):
        return JSONResponse({"error": "Not found"}, status_code=404)
    try:
        storage = open_storage(settings)
    except ValueError as exc:  # a mistyped setting: the message names it, never its value
        return JSONResponse({"error": str(exc)}, status_code=503)
    asset = storage.get_asset(asset_id)
    if asset is None:
        return JSONResponse({"error": "Not found"}, status_code=404)
    try:
        return _asset_response(storage, asset)
    except StorageError as exc:
        return JSONResponse({"error": f"Media unavailable: {exc}"}, status_code=503)


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


def media_url(storage: Storage, page_url: str | None, asset: MediaAsset) -> str | None:
    """The browser URL the player reads ``asset`` from, the store deciding: an object store's presigned URL, or
    this route's address (when it is mounted and the page's URL is known) for media on the local disk.
    Raises :class:`~agent_app.storage.StorageError` when the store cannot say."""
    route_url = urljoin(page_url, f"{MEDIA_PATH}/{asset.id}") if _mounted and page_url else None
    return storage.playback_url(asset.id, asset.mime_type, route_url)
