"""The page's rough edges (issue 21) in a real browser at a desktop and a phone size: the chat input wholly on
screen in a creator's first load; the sidebar closing on a phone after a conversation is picked, its toggle
labelled; the placeholder fitting its box; the open conversation not greyed; errors naming no internal id;
the Markdown export showing a question as text (rename, export and delete shown only when asked for); a
search redrawing the conversation list; deleting a project; the "set up a model" hint.

One server with a model and one without serve the whole module (each test opens its own project)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from agent_app.storage import SqliteStorage
from agent_app.types import ChatMessage
from fake_llm import FakeLLMServer
from tests.browser_support import IDLE, UI_TIMEOUT_MS, app_env, browser, open_page, screenshot, wait_for_transitions
from tests.creator_support import hour_transcript, seed_clip
from tests.storage_backends import stored_path
from testsupport.media_factory import tiny_wav
from testsupport.streamlit_server import StreamlitServer, run_streamlit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
__all__ = ["browser"]  # the fixture, imported for this module

SIZES = {"1440x900": (1440, 900), "390x844": (390, 844)}
LONG_QUESTION = (
    "Could you go through the whole harbour interview and tell me, minute by minute, where the keeper talks "
    "about the storm of 1987, which boats he names, and whether any of it contradicts what the fisherman "
    "said in the second take, so that I can decide which parts to keep for the opening sequence of the film?"
)
_viewports = pytest.mark.parametrize("viewport", list(SIZES.values()), ids=list(SIZES))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("edges") / "data"


@pytest.fixture(scope="module")
def server(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    with FakeLLMServer() as fake, run_streamlit(app_env(fake, data_dir), tmp_path_factory.mktemp("logs")) as running:
        yield running


@pytest.fixture(scope="module")
def no_model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    data_dir = tmp_path_factory.mktemp("no-model") / "data"
    with run_streamlit({"AGENT_DATA_DIR": str(data_dir)}, tmp_path_factory.mktemp("logs")) as running:
        yield running


def project_with_chats(data_dir: Path, name: str, titles: list[str]) -> tuple[str, dict[str, str]]:
    """A project holding one answered conversation per title: (project id, title -> conversation id)."""
    storage = SqliteStorage(data_dir)
    try:
        project = storage.create_project(name)
        ids = {}
        for title in titles:
            chat = storage.create_conversation(project.id, title)
            storage.append_message(chat.id, ChatMessage(role="user", content=f"# {title}\nline two $5"))
            storage.append_message(chat.id, ChatMessage(role="assistant", content=f"Answer in {title}"))
            ids[title] = chat.id
        return project.id, ids
    finally:
        storage.close()


def open_sidebar(page: Page) -> None:
    """On a phone the sidebar starts closed: open it by its labelled toggle."""
    toggle = page.get_by_test_id("stExpandSidebarButton")
    if toggle.count():  # it says what it opens, not only an arrow
        page.wait_for_function(
            """() => getComputedStyle(document.querySelector('[data-testid="stExpandSidebarButton"]'), '::after')
                .content === '"Projects & chats"'"""
        )
        toggle.click()
    expect(page.get_by_test_id("stSidebar")).to_have_attribute("data-collapsed", "false", timeout=UI_TIMEOUT_MS)
    # Slid fully in (a click during the slide can miss), and the page idle: no run that could redraw it.
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stSidebar\"]').getBoundingClientRect().left >= 0"
    )
    page.wait_for_selector(IDLE, timeout=UI_TIMEOUT_MS)


def settle(page: Page) -> None:
    """Wait until no run draws the page and no transition moves it (see :func:`wait_for_transitions`)."""
    page.wait_for_selector(IDLE, timeout=UI_TIMEOUT_MS)
    wait_for_transitions(page)


def wholly_on_screen(page: Page, test_id: str, viewport: tuple[int, int], shot: str) -> None:
    box = page.get_by_test_id(test_id)
    expect(box).to_be_visible(timeout=UI_TIMEOUT_MS)
    bounds = box.bounding_box()
    path = screenshot(page, shot)
    assert bounds is not None, path
    assert bounds["y"] >= 0 and bounds["y"] + bounds["height"] <= viewport[1], (bounds, path)
    assert bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= viewport[0], (bounds, path)


def placeholder_fits(page: Page) -> None:
    """The placeholder's text, in the box's own font, is no wider than the box's text area."""
    area = page.get_by_test_id("stChatInputTextArea")
    widths = area.evaluate(
        """el => {
          const style = getComputedStyle(el);
          const context = document.createElement('canvas').getContext('2d');
          context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
          const inner = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
          return [context.measureText(el.placeholder).width, inner];
        }"""
    )
    assert widths[0] <= widths[1], widths


@_viewports
def test_the_chat_input_is_wholly_on_screen_with_an_asset_its_transcript_and_a_long_past_question(
    browser: Browser, server: StreamlitServer, data_dir: Path, tmp_path: Path, viewport: tuple[int, int]
) -> None:
    project_id, _ = seed_clip(data_dir, tmp_path, hour_transcript())
    storage = SqliteStorage(data_dir)
    chat = storage.create_conversation(project_id)
    storage.append_message(chat.id, ChatMessage(role="user", content=LONG_QUESTION))
    storage.append_message(chat.id, ChatMessage(role="assistant", content="He names three boats. " * 30))
    storage.close()
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={chat.id}", viewport)
    expect(page.get_by_text("900 segments", exact=False)).to_be_visible(timeout=UI_TIMEOUT_MS)
    page.wait_for_function("() => document.fonts.status === 'loaded'")
    wholly_on_screen(page, "stChatInput", viewport, f"edges-input-{viewport[0]}x{viewport[1]}.png")
    assert page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
    page.close()


@_viewports
def test_picking_a_conversation_redraws_the_chat_and_on_a_phone_closes_the_sidebar(
    browser: Browser, server: StreamlitServer, data_dir: Path, viewport: tuple[int, int]
) -> None:
    project_id, ids = project_with_chats(data_dir, f"Pick {viewport[0]}", ["Storm", "Boats"])
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={ids['Storm']}", viewport)
    expect(page.get_by_text("Answer in Storm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    placeholder_fits(page)
    open_sidebar(page)
    sidebar = page.get_by_test_id("stSidebar")
    opened = sidebar.get_by_role("button", name="Storm —")
    expect(opened).to_be_enabled()  # the open one is framed, not greyed out
    assert opened.evaluate("el => getComputedStyle(el).opacity") == "1"
    sidebar.get_by_role("button", name="Boats —").click()
    expect(page.get_by_text("Answer in Boats")).to_be_visible(timeout=UI_TIMEOUT_MS)
    phone = viewport[0] < 768
    expect(sidebar).to_have_attribute("data-collapsed", "true" if phone else "false", timeout=UI_TIMEOUT_MS)
    expect(page).to_have_url(f"{server.base_url}/?project={project_id}&chat={ids['Boats']}", timeout=UI_TIMEOUT_MS)
    wholly_on_screen(page, "stChatInput", viewport, f"edges-picked-{viewport[0]}x{viewport[1]}.png")
    page.close()


@_viewports
def test_an_error_names_no_internal_id(
    browser: Browser, server: StreamlitServer, data_dir: Path, viewport: tuple[int, int]
) -> None:
    """A listed conversation deleted by another process, then picked here: told in words, no id."""
    project_id, ids = project_with_chats(data_dir, f"Gone {viewport[0]}", ["Storm", "Boats"])
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={ids['Storm']}", viewport)
    expect(page.get_by_text("Answer in Storm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    open_sidebar(page)
    storage = SqliteStorage(data_dir)
    storage.delete_conversation(ids["Boats"])
    storage.close()
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="Boats —").click()
    expect(sidebar.get_by_text("This conversation no longer exists")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text("Answer in Storm")).to_be_visible()  # the open one stays open
    body = page.inner_text("body")
    assert all(internal not in body for internal in (ids["Boats"], ids["Storm"], project_id))
    page.close()


@_viewports
def test_the_markdown_export_shows_a_question_as_text(
    browser: Browser, server: StreamlitServer, data_dir: Path, viewport: tuple[int, int]
) -> None:
    project_id, ids = project_with_chats(data_dir, f"Export {viewport[0]}", ["Storm"])
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={ids['Storm']}", viewport)
    expect(page.get_by_text("Answer in Storm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    open_sidebar(page)
    sidebar = page.get_by_test_id("stSidebar")
    manage = sidebar.get_by_role("button", name="Rename, export or delete this chat")
    expect(sidebar.get_by_role("button", name="Markdown")).to_have_count(0)  # drawn only once asked for
    manage.click()
    with page.expect_download(timeout=UI_TIMEOUT_MS) as download:
        sidebar.get_by_role("button", name="Markdown").click()
    text = Path(download.value.path()).read_text()
    assert "```" not in text
    assert "\\# Storm  \nline two \\$5\n" in text  # as typed, as text: no heading, no code block
    sidebar.get_by_label("Rename this conversation to").fill("Storm of 1987")
    settle(page)
    sidebar.get_by_role("button", name="Rename conversation").click()
    expect(sidebar.get_by_role("button", name="Storm of 1987 —")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(
        sidebar.get_by_role("button", name="Delete this chat", exact=True)
    ).to_be_visible()  # still shown after a rename
    screenshot(page, f"edges-manage-chat-{viewport[0]}x{viewport[1]}.png")
    settle(page)
    manage.click()
    expect(sidebar.get_by_role("button", name="Delete this chat", exact=True)).to_have_count(0, timeout=UI_TIMEOUT_MS)
    page.close()


@_viewports
def test_a_search_redraws_the_conversation_list_and_the_box_keeps_its_words(
    browser: Browser, server: StreamlitServer, data_dir: Path, viewport: tuple[int, int]
) -> None:
    project_id, ids = project_with_chats(data_dir, f"Search {viewport[0]}", ["Storm", "Boats"])
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={ids['Storm']}", viewport)
    expect(page.get_by_text("Answer in Storm")).to_be_visible(timeout=UI_TIMEOUT_MS)
    open_sidebar(page)
    sidebar = page.get_by_test_id("stSidebar")
    box = sidebar.get_by_placeholder("Words from a conversation")
    for words, found, gone in (("boats", "Boats —", "Storm —"), ("storm", "Storm —", "Boats —")):
        box.fill(words)
        box.press("Enter")
        expect(sidebar.get_by_role("button", name=gone)).to_have_count(0, timeout=UI_TIMEOUT_MS)
        expect(sidebar.get_by_role("button", name=found)).to_be_visible()
        expect(sidebar.get_by_text("1 conversation with those words")).to_be_visible()
        expect(box).to_have_value(words)
    page.close()


@_viewports
def test_a_project_is_deleted_after_a_question_with_its_media_and_conversations(
    browser: Browser, server: StreamlitServer, data_dir: Path, viewport: tuple[int, int]
) -> None:
    wreck = f"Wreck {viewport[0]}"  # no other project of the module has a chat of this name
    project_id, ids = project_with_chats(data_dir, f"Doomed {viewport[0]}", [wreck])
    storage = SqliteStorage(data_dir)
    asset = storage.import_asset(project_id, "take.wav", io.BytesIO(tiny_wav(viewport[0])))
    media_file = stored_path(storage, asset.id)
    page = open_page(browser, f"{server.base_url}/?project={project_id}&chat={ids[wreck]}", viewport)
    expect(page.get_by_text(f"Answer in {wreck}")).to_be_visible(timeout=UI_TIMEOUT_MS)
    open_sidebar(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("New, rename or delete project").click()
    settle(page)
    sidebar.get_by_role("button", name="Delete this project").click()
    expect(
        sidebar.get_by_text(f"Delete “Doomed {viewport[0]}” with its 1 media file and 1 conversation?")
    ).to_be_visible(timeout=UI_TIMEOUT_MS)
    settle(page)
    sidebar.get_by_role("button", name="Yes, delete the project").click()
    # Another project opens (the first one left, with its latest chat): nothing of the deleted one stays.
    expect(page).not_to_have_url(re.compile(project_id), timeout=UI_TIMEOUT_MS)
    expect(page.get_by_text(f"Answer in {wreck}")).to_have_count(0, timeout=UI_TIMEOUT_MS)
    expect(sidebar.get_by_role("combobox", name="Project")).not_to_contain_text(f"Doomed {viewport[0]}")
    assert storage.get_project(project_id) is None and storage.get_conversation(ids[wreck]) is None
    assert media_file is not None and not media_file.exists()
    storage.close()
    page.close()


@_viewports
def test_the_set_up_a_model_hint_leads_to_the_assistant_settings(
    browser: Browser, no_model_server: StreamlitServer, viewport: tuple[int, int]
) -> None:
    page = open_page(browser, no_model_server.base_url, viewport)
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_have_attribute("placeholder", "Set up a model to chat", timeout=UI_TIMEOUT_MS)
    placeholder_fits(page)
    page.get_by_role("button", name="Where to set up a model").click()
    settings = page.get_by_test_id("stSidebar").get_by_text("LLM_PROVIDER", exact=False)
    expect(settings).to_be_in_viewport(timeout=UI_TIMEOUT_MS)
    screenshot(page, f"edges-model-hint-{viewport[0]}x{viewport[1]}.png")
    page.close()
