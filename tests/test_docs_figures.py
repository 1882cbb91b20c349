"""The figures README.md and docs/ state about the app are the code's (a drift check).

The behaviour behind each limit is tested where it lives; this file pins the sentence that tells a reader
the number to the constant the code uses, so changing one without the other fails here. Figures a bench
prints are not pinned: the text names the bench instead."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.web.server.starlette.starlette_server_config import AUTH_COOKIE_MAX_AGE_SECONDS

from agent_app import context_budget, context_fit, orchestrator_options, prompt
from agent_app.media import sample_placement, truncation
from agent_app.media.backends import config as transcribe_config
from agent_app.media.backends import gemini_api, openai_api
from agent_app.media.downmix import CANCELLATION_RATIO
from agent_app.routes.chat import RETRY_AFTER_SECONDS
from agent_app.runs.events import SSE_NAMES
from agent_app.runs.manager import HEARTBEAT_SECONDS, LEASE_MS
from agent_app.settings import SETTING_NAMES, Settings
from agent_app.storage import ALLOWED_EXTENSIONS, media_import, s3_media_store
from agent_app.types import ContextReport
from agent_app.ui import chat_history, conversation_list, library_panel, live_turn, transcript_view

ROOT = Path(__file__).resolve().parent.parent
README = "README.md"
ARCHITECTURE = "docs/architecture.md"
MEDIA = "docs/media.md"
CONTEXT = "docs/context-window.md"
DEPLOY = "docs/deploy.md"
MIB = 1024 * 1024
_URL_BOUNDS = {type(bound).__name__: bound for bound in Settings.model_fields["media_url_seconds"].metadata}
_SETTING = re.compile(r"\b(?:LLM|AGENT|TRANSCRIBE|GOOGLE_GEMINI)_[A-Z0-9_]+\b")


def _text(name: str) -> str:
    """The document with its line breaks and runs of spaces as single spaces (sentences wrap anywhere)."""
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def _number(found: str) -> float:
    return float(found.replace(",", ""))


FIGURES: list[tuple[str, str, float]] = [
    # Media in object storage
    (README, r"presigned URL valid `AGENT_MEDIA_URL_SECONDS` \(default (\d+)\)", Settings().media_url_seconds),
    (DEPLOY, r"valid, (\d+) to \d+ seconds \(default \d+\)", _URL_BOUNDS["Ge"].ge),
    (DEPLOY, r"valid, \d+ to (\d+) seconds \(default \d+\)", _URL_BOUNDS["Le"].le),
    (DEPLOY, r"valid, \d+ to \d+ seconds \(default (\d+)\)", Settings().media_url_seconds),
    (DEPLOY, r"copied to the local disk in (\d+) MiB chunks", media_import.CHUNK_BYTES / MIB),
    (DEPLOY, r"a multipart upload of (\d+) MiB parts", s3_media_store.PART_BYTES / MIB),
    (DEPLOY, r"lifecycle rule `AbortIncompleteMultipartUpload` after (\d+) day", s3_media_store.STALE_UPLOAD_AGE.days),
    # The page
    (README, r"listed newest first with its duration and size, (\d+) at a time", library_panel.PAGE_SIZE),
    (README, r"Long transcripts show (\d+) segments at a time", transcript_view.SEGMENTS_PER_PAGE),
    (README, r"Long conversations show their last (\d+) messages", chat_history.PAGE_SIZE),
    (README, r"\*\*Conversations\*\* \(sidebar\): the (\d+) most recent", conversation_list.MAX_LISTED),
    # The model's context window
    (README, r"published window, else ([\d,]+) tokens", context_budget.DEFAULT_WINDOW_TOKENS),
    (CONTEXT, r"else \*\*([\d,]+) tokens\*\* for a model not in the table", context_budget.DEFAULT_WINDOW_TOKENS),
    (CONTEXT, r"else 1/(\d+) of the window", 1 / context_budget.OUTPUT_SHARE),
    (CONTEXT, r"of the window, at most ([\d,]+) tokens", context_budget.MAX_OUTPUT_RESERVE),
    (CONTEXT, r"Counting\*\* is offline: (\d+) UTF-8 bytes per token", context_budget.BYTES_PER_TOKEN),
    (CONTEXT, r"\(at most (\d+)× either way\)", context_budget.SCALE_LIMITS[1]),
    (CONTEXT, r"\(at most (\d+)× either way\)", 1 / context_budget.SCALE_LIMITS[0]),
    (CONTEXT, r"fitted again, to (\d+)% of the window", 100 * context_fit.RETRY_SHRINK),
    # Sign-in (docs/deploy.md)
    (DEPLOY, r"A signed URL lasts `AGENT_MEDIA_URL_SECONDS` \(default (\d+)\)", Settings().media_url_seconds),
    (DEPLOY, r"its cookie lasts (\d+) days", AUTH_COOKIE_MAX_AGE_SECONDS / 86_400),
    # The route
    (README, r"at most (\d+) assets are listed", prompt.MAX_LISTED_ASSETS),
    (README, r"`AGENT_MAX_CONCURRENT_CHATS` requests \(default (\d+)\)", Settings().max_concurrent_chats),
    (README, r"answers 503 with `Retry-After: (\d+)`", RETRY_AFTER_SECONDS),
    # Runs and the orchestrator
    (ARCHITECTURE, r"looks for news every ([\d.]+) s", live_turn.LIVE_REFRESH_SECONDS),
    (ARCHITECTURE, r"A run's lease, renewed every (\d+) s", HEARTBEAT_SECONDS),
    (ARCHITECTURE, r"two beats and a second, at\s+least (\d+) s", LEASE_MS / 1000),
    (ARCHITECTURE, r"cap at (\d+) rounds", orchestrator_options.MAX_ITERATIONS),
    (ARCHITECTURE, r"rounds and (\d+) calls a turn", orchestrator_options.MAX_CALLS_PER_ROUND),
    # Media
    (ARCHITECTURE, r"any media → (\d+) kHz mono float32", sample_placement.SAMPLE_RATE / 1000),
    (MEDIA, r"as (\d+) kHz mono float32", sample_placement.SAMPLE_RATE / 1000),
    (MEDIA, r"in chunks of at most (\d+) minutes", openai_api.CHUNK_SECONDS / 60),
    (MEDIA, r"in chunks of at most (\d+) minutes", gemini_api.CHUNK_SECONDS / 60),
    (MEDIA, r"keeps under (\d+) % of the loudest channel's power", 100 * CANCELLATION_RATIO),
    (MEDIA, r"\(tolerance ([\d.]+) s or", truncation.TRUNCATION_TOLERANCE_S),
    (MEDIA, r"\(tolerance [\d.]+ s or (\d+) %", 100 * truncation.TRUNCATION_TOLERANCE_SHARE),
]


@pytest.mark.parametrize(("document", "pattern", "value"), FIGURES, ids=[p for _, p, _ in FIGURES])
def test_each_documented_figure_is_the_one_the_code_uses(document: str, pattern: str, value: float) -> None:
    found = re.search(pattern, _text(document))
    assert found is not None, f"{document} no longer says {pattern!r}: reword this check with it"
    assert _number(found.group(1)) == pytest.approx(value), f"{document}: {found.group(0)!r}, code: {value}"


def test_the_readme_names_the_defaults_the_code_has() -> None:
    readme = _text(README)
    assert f"`AGENT_DATA_DIR` (`./{Settings().data_dir}` unless set" in readme
    assert f"`TRANSCRIBE_MODEL` (default `{transcribe_config.DEFAULT_OPENAI_MODEL}` when" in readme
    assert f"`AGENT_ENABLED_TOOLS` (default `{', '.join(Settings().enabled_tools)}`)" in readme
    assert f"`moonshine-voice=={_pinned('moonshine-voice')}`" in readme


def test_the_readme_names_every_setting_and_no_other() -> None:
    named = set(_SETTING.findall(_text(README)))
    assert named == set(SETTING_NAMES)
    for document in (ARCHITECTURE, MEDIA, CONTEXT, DEPLOY):
        assert set(_SETTING.findall(_text(document))) <= set(SETTING_NAMES), document


def _pinned(package: str) -> str:
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{package}=="):
            return line.split("==", 1)[1].split()[0]
    raise AssertionError(f"{package} is not pinned in requirements.txt")


def test_the_upload_formats_docs_media_lists_are_the_ones_accepted() -> None:
    found = re.search(r"uploads with the extensions ([a-z0-9/, ]+?) and ([a-z0-9]+);", _text(MEDIA))
    assert found is not None
    listed = {ext for part in found.group(1).split(", ") for ext in part.split("/")} | {found.group(2)}
    assert listed == set(ALLOWED_EXTENSIONS)


def test_the_readme_names_the_debian_packages_the_test_command_installs() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    [installed] = re.findall(r"^bash scripts/system-packages\.sh (.+)$", script, flags=re.MULTILINE)
    found = re.search(r"installs the Debian packages (.+?) when missing", _text(README))
    assert found is not None
    assert set(re.findall(r"`([a-z0-9.+-]+)`", found.group(1))) == set(installed.split())


def test_the_readme_route_shapes_are_the_ones_on_the_wire() -> None:
    readme = _text(README)
    fitted = re.search(r"how the history was fitted into the model's window \((.+?)\): send both back", readme)
    assert fitted is not None
    reported = {str(field.alias) for field in ContextReport.model_fields.values()}
    assert set(re.findall(r"`(\w+)`", fitted.group(1))) == reported
    route = readme[readme.index("| event | data | when |") : readme.index("A run on the server records")]
    assert set(re.findall(r"\| `(\w+)` \|", route)) == {"text", "toolCall", "usage", "done", "error"}
    tables = readme[readme.index("| event | data | when |") : readme.index("A request that fails before any text")]
    assert sorted(re.findall(r"\| `(\w+)` \|", tables)) == sorted(SSE_NAMES)  # each run event's name, once
