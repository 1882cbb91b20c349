"""The transcript's words in a real browser (Debian's chromium) at a desktop and a phone size: the word
being spoken is marked while the video plays, a click on a word seeks there and plays, a search marks whole
words, a segment is corrected on the page and the speakers renamed, and both reach the downloads.

One app server and one seeded clip for the module (a transcript with word times and speaker turns put in the
cache: no transcription runs); each size edits its own segment and speaker, so the two never collide.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from playwright.sync_api import Browser, Page, expect

from agent_app.media.speaker_turns import put_speaker_turns
from agent_app.media.transcript_cache import TranscriptCache
from agent_app.media.transcript_types import SpeakerTurn, Transcript, TranscriptSegment, TranscriptWord
from agent_app.storage import SqliteStorage
from fake_llm import FakeLLMServer
from tests.browser_support import UI_TIMEOUT_MS, app_env, browser, open_expander, open_page, screenshot
from tests.creator_support import seed_clip
from testsupport.media_factory import silent_mp4
from testsupport.streamlit_server import run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the fixture, imported for this module

DESKTOP = (1440, 900)
PHONE = (390, 844)
LINES = [
    "Welcome back to the garden show",
    "We grow tomatoes and basil here",
    "The tomato plants like the sun",
    "Water them early in the morning",
    "Next week we plant the potatoes",
    "Thanks for watching and goodbye",
]
WORD_MS = 400
SEGMENT_MS = 2_000
EDITS = {DESKTOP: (1, "We grow ripe tomatoes here", "S2", "Ana"), PHONE: (0, "Welcome back to our garden", "S1", "Ben")}
"""Per size: the segment corrected, its new text, the speaker renamed and the name."""


def worded_transcript() -> Transcript:
    """Six two-second segments of back-to-back 400 ms words, two speakers taking turns."""
    segments = []
    for index, line in enumerate(LINES):
        start = index * SEGMENT_MS
        words = [
            TranscriptWord(start_ms=start + n * WORD_MS, end_ms=start + (n + 1) * WORD_MS, text=said)
            for n, said in enumerate(line.split())
        ]
        segments.append(TranscriptSegment(start_ms=start, end_ms=words[-1].end_ms, text=line, words=words))
    return Transcript(duration_ms=12_000, language="en", segments=segments, backend="local", model="test")


def word_at(seconds: float) -> str:
    """The seeded word spoken at ``seconds``."""
    ms = seconds * 1000
    segment = worded_transcript().segments[int(ms // SEGMENT_MS)]
    return next(w.text for w in segment.words if w.start_ms <= ms < w.end_ms)


class Served(NamedTuple):
    """The page's address with the clip's project open, and with the empty project open."""

    clip: str
    uploads: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, fake_llm_session: FakeLLMServer) -> Iterator[Served]:
    """The app, with the clip's project and an empty one."""
    work = tmp_path_factory.mktemp("words")
    data_dir = work / "data"
    project_id, _ = seed_clip(data_dir, work, worded_transcript())
    cache = TranscriptCache(data_dir)
    path = next((data_dir / "media").glob("*.mp4"))
    turns = [
        SpeakerTurn(start_ms=i * SEGMENT_MS, end_ms=(i + 1) * SEGMENT_MS, speaker=f"S{i % 2 + 1}") for i in range(6)
    ]
    put_speaker_turns(cache, cache.content_hash(path), turns)
    storage = SqliteStorage(data_dir)
    uploads = storage.create_project("Uploads").id
    storage.close()
    with run_streamlit(app_env(fake_llm_session, data_dir), work) as server:
        yield Served(f"{server.base_url}/?project={project_id}", f"{server.base_url}/?project={uploads}")


def _open(browser: Browser, served: Served, viewport: tuple[int, int]) -> Page:
    page = open_page(browser, served.clip, viewport)
    expect(page.locator(".segment")).to_have_count(len(LINES), timeout=UI_TIMEOUT_MS)
    page.wait_for_function("el => el.readyState >= 1", arg=page.locator("video").element_handle())
    return page


def _play_until(page: Page, seconds: float) -> float:
    """Play (muted) until the video passes ``seconds``, then pause; where it stopped."""
    video = page.locator("video").element_handle()
    page.evaluate("el => { el.muted = true; return el.play(); }", video)
    page.wait_for_function(f"el => el.currentTime >= {seconds}", arg=video, timeout=UI_TIMEOUT_MS)
    return float(page.evaluate("el => { el.pause(); return el.currentTime; }", video))


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_the_spoken_word_is_marked_and_a_click_on_a_word_seeks_and_plays(
    browser: Browser, served: Served, viewport: tuple[int, int]
) -> None:
    page = _open(browser, served, viewport)
    video = page.locator("video").element_handle()
    page.evaluate("el => { el.currentTime = 0.5; }", video)
    for target in (2.5, 5.3):  # the mark follows the playing video from word to word
        stopped = _play_until(page, target)
        expect(page.locator(".word.spoken")).to_have_text(word_at(stopped), timeout=UI_TIMEOUT_MS)
        expect(page.locator(".segment.current")).to_have_count(1)
    screenshot(page, f"transcript-words-{viewport[0]}x{viewport[1]}.png")

    # A word's text seeks there, and the video plays from it.
    page.locator(".segment").nth(4).locator(".word", has_text="week").click()
    start = (4 * SEGMENT_MS + WORD_MS) / 1000
    page.wait_for_function(f"el => !el.paused && el.currentTime >= {start}", arg=video)
    stopped = float(page.evaluate("el => { el.pause(); return el.currentTime; }", video))
    assert start <= stopped < start + 1.6, stopped  # from the word on (1.6 s: a loaded machine's slack)
    expect(page.locator(".segment").nth(4)).to_have_attribute("aria-current", "true", timeout=UI_TIMEOUT_MS)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_search_marks_whole_words_and_corrections_and_speaker_names_reach_the_downloads(
    browser: Browser, served: Served, viewport: tuple[int, int], tmp_path: Path
) -> None:
    index, corrected, label, name = EDITS[viewport]
    page = _open(browser, served, viewport)
    search = page.get_by_placeholder("Words said in the clip")
    search.fill("tomato")
    search.press("Enter")
    expect(page.get_by_text("2 segments match")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.locator(".word.hit")).to_have_text(["tomatoes", "tomato"])  # whole words, not "tomato"+"es"
    search.fill("")
    search.press("Enter")
    expect(page.locator(".segment")).to_have_count(len(LINES), timeout=UI_TIMEOUT_MS)

    page.get_by_role("button", name=f"Correct the segment at 0:0{index * 2}").click()
    box = page.get_by_role("textbox", name=f"Correct the segment at 0:0{index * 2}")
    expect(box).to_have_value(LINES[index], timeout=UI_TIMEOUT_MS)
    box.fill(corrected)
    page.get_by_role("button", name="Save correction").click()
    row = page.locator(".segment").nth(index)
    expect(row.locator(".text")).to_contain_text(corrected, timeout=UI_TIMEOUT_MS)
    expect(row.locator(".edited")).to_have_count(1)

    open_expander(page, "2 speakers · rename them")
    field = page.get_by_label(f"Name of {label}")
    field.fill(name)
    field.press("Enter")
    speaking = [row for row in range(len(LINES)) if f"S{row % 2 + 1}" == label]
    for row_index in speaking:
        expect(page.locator(".segment").nth(row_index).locator(".speaker")).to_have_text(name, timeout=UI_TIMEOUT_MS)
    screenshot(page, f"transcript-edits-{viewport[0]}x{viewport[1]}.png")

    with page.expect_download() as download:
        page.get_by_role("button", name="WebVTT").click()
    saved = tmp_path / "captions.vtt"
    download.value.save_as(saved)
    captions = saved.read_text(encoding="utf-8")
    assert f"<v {name}>{corrected}" in captions and LINES[index] not in captions


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_a_video_without_sound_is_told_at_upload_it_cannot_be_transcribed(
    browser: Browser, served: Served, viewport: tuple[int, int], tmp_path: Path
) -> None:
    page = open_page(browser, served.uploads, viewport)
    if viewport == PHONE:
        page.get_by_test_id("stExpandSidebarButton").click()
    name = f"screen-{viewport[0]}.mp4"
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
        str(silent_mp4(tmp_path / name, duration_ms=viewport[0] * 2))  # not the other size's file: no duplicate
    )
    notice = page.get_by_text(f"“{name}” has no sound: it plays, but cannot be transcribed.")
    expect(notice).to_be_visible(timeout=UI_TIMEOUT_MS)
    screenshot(page, f"upload-no-sound-{viewport[0]}x{viewport[1]}.png")
