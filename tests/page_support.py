"""Helpers for the page tests: an AppTest of the real page script against the fake LLM server,
and readers that turn the element tree into plain strings to assert on."""

from __future__ import annotations

import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from fake_llm import FakeLLMServer
from tests.history_html import ActionButton, Card, buttons_in, cards_in, classed_texts

ROOT = Path(__file__).resolve().parent.parent
PAGE_SCRIPT = ROOT / "agent_app" / "ui" / "page_script.py"
LLM_SETTINGS = ("LLM_PROVIDER", "LLM_MODEL", "LLM_API_KEY", "LLM_BASE_URL")
RUN_TIMEOUT = 60.0
SETTLE_TIMEOUT = 60.0
STOP_KEY = "chat_stop"

_MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: str) -> str:
    """What a reader sees of Markdown source: backslash escapes of punctuation show as the character."""
    return _MARKDOWN_ESCAPE.sub(r"\1", markdown)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLMServer) -> Path:
    """A test's data folder, the app pointed at it and at the fake LLM server (import it to use it)."""
    directory = tmp_path / "data"
    configure_env(monkeypatch, directory, fake_llm)
    return directory


def configure_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path, fake_llm: FakeLLMServer | None) -> None:
    """Point the app at ``data_dir`` and, when given, at the fake server (no retries: failures are
    meant to show at once)."""
    monkeypatch.setenv("AGENT_DATA_DIR", str(data_dir))
    for name in LLM_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    if fake_llm is not None:
        monkeypatch.setenv("LLM_PROVIDER", "openai-compatible")
        monkeypatch.setenv("LLM_BASE_URL", fake_llm.openai_base_url)
        monkeypatch.setenv("LLM_MODEL", "fake-model")
        monkeypatch.setenv("LLM_API_KEY", "test-key-not-secret")
        monkeypatch.setenv("LLM_MAX_RETRIES", "0")


def new_page(query_params: dict[str, str] | None = None) -> AppTest:
    """A fresh browser session of the page (optionally opened at a URL's query parameters), run once."""
    at = AppTest.from_file(str(PAGE_SCRIPT), default_timeout=RUN_TIMEOUT)
    if query_params:
        at.query_params.update(query_params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def run_going(at: AppTest) -> bool:
    """Whether the page shows a run in progress (its Stop button)."""
    return any(button.key == STOP_KEY for button in at.main.button)


def settle(at: AppTest) -> AppTest:
    """Rerun the page until the run it shows is over, as the chat's refreshing fragment does in a browser."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while run_going(at):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.05)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def send(at: AppTest, text: str) -> AppTest:
    """Type ``text`` into the chat input, submit it, and wait for the run it starts to end."""
    at.chat_input(key="chat_prompt").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return settle(at)


def click(at: AppTest, key: str) -> AppTest:
    """Click the button ``key`` and wait for a run it starts (Retry) to end."""
    at.button(key=key).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return settle(at)


HISTORY_COMPONENT = "agent_app.chat_history"


class _BubbleText(HTMLParser):
    """A bubble's HTML read as a person reads it: its role, its text paragraphs (tool cards and action buttons
    left out) and its cards' one-line labels."""

    def __init__(self) -> None:
        super().__init__()
        self.role: str | None = None
        self.paragraphs: list[str] = []
        self.labels: list[str] = []
        self._stack: list[str] = []
        self._where: list[str] = []  # "text", "card", "summary", "actions", "" for each open tag

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        if "bubble" in classes and self.role is None:
            self.role = values.get("data-role")
        if tag == "details":
            place = "card"
        elif tag == "summary":
            place = "summary"
            self.labels.append("")
        elif "actions" in classes:
            place = "actions"
        elif "text" in classes and "card" not in self._where:
            place = "text"
            self.paragraphs.append("")
        else:
            place = ""
        if tag in ("br", "hr", "img", "input"):
            return
        self._where.append(place)

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("br", "hr", "img", "input") and self._where:
            self._where.pop()

    def handle_data(self, data: str) -> None:
        if "summary" in self._where:
            self.labels[-1] += data
        elif "text" in self._where and "card" not in self._where and "actions" not in self._where:
            self.paragraphs[-1] += data


def history_elements(at: AppTest) -> list[dict[str, object]]:
    """The history element's bubbles in drawing order (the history, then the unsaved question, the live turn and
    a cut answer, each an element of its own), as ``{"key", "html", "copy"}``."""
    found = []
    for element in at.main.get("bidi_component"):
        proto = element.proto
        if proto.component_name == HISTORY_COMPONENT:
            found += json.loads(proto.json)["bubbles"]
    return found


def _read(bubble: dict[str, object]) -> _BubbleText:
    reader = _BubbleText()
    reader.feed(str(bubble["html"]))
    return reader


def message_elements(at: AppTest) -> list[dict[str, object]]:
    """The bubbles of :func:`history_elements` that are messages (a role's bubble), not the cut marker or the
    conversation's footer line."""
    return [bubble for bubble in history_elements(at) if _read(bubble).role is not None]


def bubbles(at: AppTest) -> list[tuple[str, str]]:
    """Each chat bubble as ``(role, its text paragraphs joined)``, the tool cards' insides left out."""
    result = []
    for bubble in history_elements(at):
        reader = _read(bubble)
        if reader.role is not None:
            result.append((reader.role, "\n".join(p.strip("\n") for p in reader.paragraphs)))
    return result


def card_labels(at: AppTest) -> list[str]:
    """The one-line labels of the tool cards in the bubbles, as shown."""
    return [" ".join(label.split()) for bubble in history_elements(at) for label in _read(bubble).labels]


def history_action(at: AppTest, kind: str, target: str) -> AppTest:
    """Click a history button (``edit``, ``regenerate``, ``more_cards`` on the message ``target``) as the
    element's script does: one trigger value on the event widget of the element that draws the button (the
    history's first element for a button this draw does not offer), then the next run."""
    elements = [e for e in at.main.get("bidi_component") if e.proto.component_name == HISTORY_COMPONENT]
    drawing = (
        e
        for e in elements
        if any(
            button.kind == kind and button.target == target
            for bubble in json.loads(e.proto.json)["bubbles"]
            for button in buttons_in(str(bubble["html"]))
        )
    )
    element = next(drawing, elements[0])  # a button this draw does not offer (a stale tab's, a forged one): the first
    states = at._tree.get_widget_states()
    payload = [{"event": "action", "value": {"kind": kind, "target": target}}]
    states.widgets.append(
        WidgetState(id=_make_trigger_id(element.proto.id, "events"), json_trigger_value=json.dumps(payload))
    )
    at._run(states)
    assert not at.exception, [e.value for e in at.exception]
    return settle(at)


def action_buttons(at: AppTest, kind: str) -> list[ActionButton]:
    """The history's ``kind`` buttons (``copy``, ``edit``, ``regenerate``, ``more_cards``), in drawing order."""
    return [
        button for bubble in history_elements(at) for button in buttons_in(str(bubble["html"])) if button.kind == kind
    ]


def action_targets(at: AppTest, kind: str) -> list[tuple[str, bool]]:
    """The history's ``kind`` buttons as ``(target, enabled)``."""
    return [(button.target, button.enabled) for button in action_buttons(at, kind)]


def cards(at: AppTest) -> list[Card]:
    """The tool cards in the bubbles, in drawing order, as drawn (see :class:`~tests.history_html.Card`)."""
    return [card for bubble in history_elements(at) for card in cards_in(str(bubble["html"]))]


def statuses(at: AppTest) -> list[str]:
    """The status lines of the live turn (``Asking the assistant…``, ``Stopping…``), as shown."""
    return [text for bubble in history_elements(at) for text in classed_texts(str(bubble["html"]), "status")]


def texts(elements: object) -> list[str]:
    """``.value`` of each element of an element list, as shown (Markdown escapes removed)."""
    return [shown(str(element.value)) for element in elements]  # type: ignore[attr-defined]
