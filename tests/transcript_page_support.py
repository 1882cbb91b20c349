"""The transcript page component in AppTest: its data as the browser gets it, and a click sent back as the
browser sends one (the component's trigger message on the wire), so the page's own handling of it runs."""

from __future__ import annotations

import json
from typing import Any

from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest


def _page_elements(app: AppTest) -> list[Any]:
    elements = [e for e in app.main.get("bidi_component") if "rows" in (json.loads(e.proto.json) or {})]
    assert len(elements) <= 1, "one transcript page at a time"
    return elements


def page_words(app: AppTest) -> dict[str, Any]:
    """The data of the transcript's page (its rows of timed words, the segment at the playhead)."""
    elements = _page_elements(app)
    return json.loads(elements[0].proto.json) if elements else {"rows": [], "current": None}


def page_indexes(app: AppTest) -> list[int]:
    """The indexes of the segments on the page drawn."""
    return [row["index"] for row in page_words(app)["rows"]]


def click_on_page(app: AppTest, event: str, value: int) -> AppTest:
    """Rerun ``app`` as after a click on the page: ``seek`` to a millisecond or ``edit`` a segment."""
    (element,) = _page_elements(app)
    states = app._tree.get_widget_states()
    trigger = WidgetState(id=_make_trigger_id(element.proto.id, "events"))
    trigger.json_trigger_value = json.dumps([{"event": event, "value": value}])
    states.widgets.append(trigger)
    return app._run(states)
