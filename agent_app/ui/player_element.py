"""The browser's own ``<video>``/``<audio>`` element as a small Streamlit component, for what ``st.video``
cannot do: start at an exact millisecond (``st.video`` keeps whole seconds) and say where the playing video is.

It reports its position when it crosses into another transcript segment (``marks_ms``) or is paused or
sought: one rerun per segment, not per frame. A seek applies only when ``seek_id`` changes, so the reruns its
own reports cause never pull the video back. A new address for the same asset (a renewed presigned URL) keeps
the place and the playing; a read refused (an expired URL) asks the page for a new address. The only data in
the fixed script are an address, numbers and the asset's name as an attribute (never HTML).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from agent_app.types import MediaAsset

_JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const tag = data.kind === "video" ? "video" : "audio";
  let media = parentElement.querySelector("video, audio");
  if (media && media.tagName.toLowerCase() === tag && media.dataset.asset === data.assetId
      && media.dataset.src !== data.src) {
    // The same asset at a renewed address (a presigned URL's lifetime): carry on where it was.
    const at = media.currentTime, playing = !media.paused;
    media.dataset.src = data.src;
    media.src = data.src;
    media.addEventListener("loadedmetadata", () => {
      media.currentTime = at;
      if (playing) { media.play().catch(() => {}); }
    }, { once: true });
  }
  if (!media || media.tagName.toLowerCase() !== tag || media.dataset.src !== data.src) {
    if (media) { media.remove(); }
    media = document.createElement(tag);
    media.controls = true;
    media.preload = "metadata";
    media.dataset.src = data.src;
    media.dataset.asset = data.assetId;
    media.dataset.seek = "";
    media.src = data.src;
    media.addEventListener("timeupdate", () => media.follow(false));
    media.addEventListener("pause", () => media.follow(true));
    media.addEventListener("seeked", () => media.follow(true));
    // A read refused (an expired address, say): the page is asked for a fresh one.
    media.addEventListener("error", () => setTriggerValue("failed", media.dataset.src));
    parentElement.appendChild(media);
  }
  window.agentAppMedia = media;  // the transcript's words seek it directly (agent_app.ui.transcript_element)
  media.setAttribute("aria-label", data.label);
  media.marks = data.marks || [];
  media.follow = (always) => {
    const ms = Math.round(media.currentTime * 1000);
    let low = 0, high = media.marks.length;  // how many marks are at or before ms
    while (low < high) {
      const mid = (low + high) >> 1;
      if (media.marks[mid] <= ms) { low = mid + 1; } else { high = mid; }
    }
    const moved = Math.abs(ms - (media.reported ?? -1e9)) >= 250;
    if ((always && moved) || (!always && !media.paused && low !== media.segment)) {
      media.segment = low;
      media.reported = ms;
      setTriggerValue("position", ms);
    }
  };
  if (media.dataset.seek !== String(data.seekId)) {
    media.dataset.seek = String(data.seekId);
    const target = data.startMs / 1000;
    media.reported = data.startMs;  // the page knows this position already: no report back for it
    if (media.readyState >= 1) { media.currentTime = target; }
    else { media.addEventListener("loadedmetadata", () => { media.currentTime = target; }, { once: true }); }
  }
}
"""

_CSS = """
video, audio { display: block; width: 100%; border-radius: 0.5rem; }
"""

_ELEMENT = st.components.v2.component("agent_app.media_player", js=_JS, css=_CSS)


def media_player(source: str, asset: MediaAsset, *, start_ms: int, seek_id: int, marks_ms: Sequence[int]) -> int | None:
    """Draw the player of ``asset`` streamed from ``source``; the position the browser reported in this run,
    if it did."""
    data: dict[str, Any] = {
        "src": source,
        "assetId": asset.id,
        "kind": asset.kind,
        "label": asset.name,
        "startMs": max(0, int(start_ms)),
        "seekId": seek_id,
        "marks": list(marks_ms),
    }
    result = _ELEMENT(key="player_media", data=data, on_position_change=lambda: None, on_failed_change=lambda: None)
    position = getattr(result, "position", None)
    return int(position) if isinstance(position, int | float) and position >= 0 else None
