"""How accurate the offline backend is on synthesized speech: timing and words, per voice and condition.

Each case is two sentences spoken by espeak-ng with silence around them, transcribed by the local
backend (Moonshine tiny-en) exactly as the tool does (extraction, chunking, boundary tightening). Printed:

* per voice (eight of espeak's English voices): the word error rate, and how far each segment's start and
  end land from where the sentence's sound really starts and ends (ms, signed: negative = early);
* per condition, on the default voice: clipped (+26 dB, then cut at full scale), telephone band (8 kHz),
  quiet (peaking near −40 dBFS) — each against the clean default voice measured in the same run.

Run: ``.venv/bin/python -m bench.bench_speech_accuracy`` (about a minute; needs Debian's ``espeak-ng``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agent_app.media.backends.local_moonshine import LocalMoonshineBackend
from testsupport.decoded_audio import extract_audio
from testsupport.media_factory import SENTENCES, FloatArray, MediaFile, resample, spoken, word_error_rate

RATE = 16_000
TEXT = SENTENCES[:2]
VOICES = (
    "en-us",
    "en-gb",
    "en-gb-x-rp",
    "en-gb-x-gbclan",
    "en-gb-x-gbcwmd",
    "en-us-nyc",
    "en-029",
    "en-gb-scotland",
)
CONDITIONS: tuple[tuple[str, int, Callable[[FloatArray], FloatArray]], ...] = (
    ("clean", RATE, lambda samples: samples),
    ("clipped +26 dB", RATE, lambda samples: np.clip(samples * 20, -1, 1).astype(np.float32)),
    ("telephone 8 kHz", 8_000, lambda samples: resample(samples, RATE, 8_000)),
    ("quiet -40 dBFS", RATE, lambda samples: (samples * 0.01 / float(np.abs(samples).max())).astype(np.float32)),
)


def transcribe(samples: FloatArray, rate: int, folder: Path) -> tuple[str, list[tuple[int, int]]]:
    """The local backend's text and segment times for ``samples``, through a real WAV file."""
    path = folder / "speech.wav"
    MediaFile(samples[None], rate, codec="pcm_s16le").write(path)
    result = LocalMoonshineBackend().transcribe(extract_audio(path), None, lambda fraction: None)
    text = " ".join(segment.text for segment in result.segments)
    return text, [(segment.start_ms, segment.end_ms) for segment in result.segments]


def timing_errors(segments: list[tuple[int, int]], truth: list[tuple[int, int, str]]) -> list[int]:
    """Signed start and end errors (ms) of each segment against its sentence; empty when they do not pair."""
    if len(segments) != len(truth):
        return []
    errors: list[int] = []
    for (start, end), (onset, offset, _) in zip(segments, truth, strict=True):
        errors += [start - onset, end - offset]
    return errors


def main() -> None:
    reference = " ".join(TEXT)
    with tempfile.TemporaryDirectory() as folder:
        print(f"== Voices: {len(VOICES)} espeak-ng English voices, two sentences each")
        print(f"{'voice':<16} {'WER':>6} {'start/end error ms (min..max)':>32}")
        spread: list[int] = []
        for voice in VOICES:
            samples, truth = spoken(TEXT, RATE, voice=voice)
            text, segments = transcribe(samples, RATE, Path(folder))
            errors = timing_errors(segments, truth)
            spread += errors
            span = f"{min(errors):+d}..{max(errors):+d}" if errors else f"{len(segments)} segments for 2 sentences"
            print(f"{voice:<16} {word_error_rate(reference, text):>6.2f} {span:>32}")
        if spread:
            print(f"all voices: start/end errors within {min(spread):+d}..{max(spread):+d} ms")
        print("\n== Conditions on en-us (baseline: the clean recording, same run)")
        samples, _ = spoken(TEXT, RATE)
        baseline = None
        for name, rate, change in CONDITIONS:
            text, _ = transcribe(change(samples), rate, Path(folder))
            wer = word_error_rate(reference, text)
            baseline = wer if baseline is None else baseline
            print(f"{name:<16} WER {wer:.2f} (clean {baseline:.2f})")


if __name__ == "__main__":
    main()
