"""One page of the transcript as a small Streamlit component: each segment's time, speaker and words, so the
browser can do what a rerun per word could not: mark the word being spoken as the media plays, and seek
(and play) from any word or time the user clicks, at once.

The player (:mod:`agent_app.ui.player_element`) publishes its media element as ``window.agentAppMedia``;
a click moves it directly and the player reports the new position to the server as for any seek. Without
that player (``st.video``, AppTest) the click goes to the server as ``seek``. A segment's Correct button
comes back as ``edit``. Text only ever reaches the page as ``textContent``, never as HTML.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from agent_app.media.transcript_types import Transcript
from agent_app.ui.formatting import format_duration
from agent_app.ui.transcript_view import word_hits

_JS = """
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector(".transcript");
  if (!root) {
    root = document.createElement("div");
    root.className = "transcript";
    parentElement.appendChild(root);
  }
  const media = () => window.agentAppMedia && window.agentAppMedia.isConnected ? window.agentAppMedia : null;
  const seek = (ms) => {
    const player = media();
    if (player && data.inPage) {
      player.currentTime = ms / 1000;
      const playing = player.play();
      if (playing) { playing.catch(() => {}); }
    } else {
      setTriggerValue("seek", ms);
    }
  };
  const drawn = JSON.stringify([data.rows, data.scroll]);
  if (root.dataset.drawn !== drawn) {
    root.dataset.drawn = drawn;
    root.replaceChildren();
    root.classList.toggle("scrolls", data.scroll);
    const words = [];
    for (const row of data.rows) {
      const line = document.createElement("div");
      line.className = "segment";
      line.dataset.index = row.index;
      line.dataset.start = row.start;
      line.dataset.end = row.end;
      const time = document.createElement("button");
      time.type = "button";
      time.className = "time";
      time.textContent = row.time;
      time.title = "Play from here";
      time.addEventListener("click", () => seek(row.start));
      line.appendChild(time);
      const text = document.createElement("p");
      text.className = "text";
      if (row.speaker) {
        const who = document.createElement("span");
        who.className = "speaker";
        who.textContent = row.speaker;
        text.appendChild(who);
      }
      row.words.forEach(([start, end, said, hit], n) => {
        if (n > 0 || row.speaker) { text.appendChild(document.createTextNode(" ")); }
        const word = document.createElement("span");
        word.className = hit ? "word hit" : "word";
        word.textContent = said;
        word.dataset.start = start;
        word.addEventListener("click", () => seek(start));
        if (end > start) { words.push([start, end, word]); }
        text.appendChild(word);
      });
      if (row.edited) {
        const mark = document.createElement("span");
        mark.className = "edited";
        mark.textContent = " (corrected)";
        text.appendChild(mark);
      }
      line.appendChild(text);
      if (data.editable) {
        const edit = document.createElement("button");
        edit.type = "button";
        edit.className = "edit";
        edit.textContent = "✎";
        edit.title = "Correct this segment";
        edit.setAttribute("aria-label", `Correct the segment at ${row.time}`);
        edit.addEventListener("click", () => setTriggerValue("edit", row.index));
        line.appendChild(edit);
      }
      root.appendChild(line);
    }
    root.words = words;  // [start, end, element], in time order
    root.spoken = null;
    root.shownCurrent = null;
  }
  const markSegment = (index) => {
    if (root.shownCurrent === index) { return; }
    root.shownCurrent = index;
    for (const line of root.children) {
      const current = Number(line.dataset.index) === index;
      line.classList.toggle("current", current);
      if (current) { line.setAttribute("aria-current", "true"); } else { line.removeAttribute("aria-current"); }
    }
  };
  const follow = () => {
    const player = media();
    if (!player) { return; }
    const ms = player.currentTime * 1000;
    let low = 0, high = root.words.length;  // the last word starting at or before ms
    while (low < high) {
      const mid = (low + high) >> 1;
      if (root.words[mid][0] <= ms) { low = mid + 1; } else { high = mid; }
    }
    const found = low > 0 && ms < root.words[low - 1][1] ? root.words[low - 1][2] : null;
    if (found !== root.spoken) {
      if (root.spoken) { root.spoken.classList.remove("spoken"); }
      if (found) { found.classList.add("spoken"); }
      root.spoken = found;
    }
    let index = null;
    for (const line of root.children) {
      if (Number(line.dataset.start) <= ms && ms < Math.max(Number(line.dataset.end), Number(line.dataset.start) + 1)) {
        index = Number(line.dataset.index);
      }
    }
    if (index !== null || !player.paused) { markSegment(index); }
  };
  markSegment(data.current);
  if (!root.following) {
    root.following = true;
    const tick = () => {
      if (!root.isConnected) { root.following = false; return; }
      follow();
      window.setTimeout(() => window.requestAnimationFrame(tick), 50);
    };
    tick();
  }
  follow();
}
"""

_CSS = """
.transcript { font: inherit; color: inherit; }
.transcript.scrolls { max-height: 420px; overflow-y: auto; }
.segment { display: flex; align-items: flex-start; gap: 0.5rem; padding: 0.2rem 0; }
.segment .text { flex: 1; margin: 0; line-height: 1.6; overflow-wrap: anywhere; }
.segment.current .text { font-weight: 600; }
.time, .edit {
  flex: none; font: inherit; cursor: pointer; border-radius: 0.5rem; padding: 0.1rem 0.6rem;
  border: 1px solid rgba(128, 128, 128, 0.4); background: transparent; color: inherit;
}
.segment.current .time { background: #ff4b4b; border-color: #ff4b4b; color: white; }
.edit { opacity: 0.6; padding: 0.1rem 0.45rem; }
.edit:hover, .edit:focus { opacity: 1; }
.word { cursor: pointer; border-radius: 0.25rem; }
.word:hover { text-decoration: underline; }
.word.hit { background: rgba(255, 165, 0, 0.35); }
.word.spoken { background: rgba(28, 131, 225, 0.3); outline: 1px solid rgba(28, 131, 225, 0.6); }
.speaker { font-weight: 600; margin-right: 0.2rem; }
.speaker::after { content: ":"; }
.edited { opacity: 0.6; font-size: 0.85em; }
"""

_ELEMENT = st.components.v2.component("agent_app.transcript_page", js=_JS, css=_CSS)


def page_rows(transcript: Transcript, indexes: Sequence[int], words: Sequence[str]) -> list[dict[str, Any]]:
    """The component's rows for the segments at ``indexes``: a segment with timed words sends each
    ``[start, end, text, hit]``; one without sends its words at the segment's start (a click still seeks,
    nothing is marked as spoken)."""
    rows = []
    for index in indexes:
        segment = transcript.segments[index]
        if segment.words:
            timed = [(w.start_ms, w.end_ms, w.text) for w in segment.words]
        else:
            timed = [(segment.start_ms, segment.start_ms, said) for said in segment.text.split()]
        hits = word_hits([said for _, _, said in timed], words)
        rows.append(
            {
                "index": index,
                "time": format_duration(segment.start_ms),
                "start": segment.start_ms,
                "end": segment.end_ms,
                "speaker": transcript.speaker_name(segment.speaker),
                "edited": segment.original_text is not None,
                "words": [[start, end, said, hit] for (start, end, said), hit in zip(timed, hits, strict=True)],
            }
        )
    return rows


def _trigger(component_key: str, name: str) -> Any:
    state = st.session_state.get(component_key)
    value = getattr(state, name, None)
    if value is None and isinstance(state, dict):
        value = state.get(name)
    return value


@dataclass(frozen=True)
class PageActions:
    """What a click on the page does: ``seek`` to a millisecond (when ``in_page`` is false: the route's
    player is not on the page, so the browser cannot move it itself) and ``edit`` a segment by its index."""

    seek: Callable[[int], None]
    edit: Callable[[int], None]
    in_page: bool = False


def transcript_page(key: str, rows: list[dict[str, Any]], current: int | None, actions: PageActions) -> None:
    """Draw one page of ``rows`` (see :func:`page_rows`), ``current`` the segment at the playhead."""
    component_key = f"{key}_page_words"

    def seek() -> None:
        value = _trigger(component_key, "seek")
        if isinstance(value, int | float) and value >= 0:
            actions.seek(int(value))

    def edit() -> None:
        value = _trigger(component_key, "edit")
        if isinstance(value, int):
            actions.edit(value)

    data = {"rows": rows, "current": current, "inPage": actions.in_page, "editable": True, "scroll": len(rows) > 8}
    _ELEMENT(key=component_key, data=data, on_seek_change=seek, on_edit_change=edit)
