"""How fast and how lean ``transcribe_video`` is with the offline backend, on synthesized speech.

Measured in one run, each against a baseline from the same run:

* the offline engines on the same 60 s of speech, each in a fresh process (model loaded and warmed up
  first): faster-whisper tiny.en (the default for English) against Moonshine tiny-en (the baseline), the
  multilingual base, and the default with the language detected (base's detection, then tiny.en): word
  error rate, CPU seconds per audio second (target for tiny.en: at most 1.1 x Moonshine's) and peak
  memory; ``--engines`` runs only this part;
* real-time factor of the local backend on 60 s and 5 min of speech: transcription time / audio duration
  (target ≤ 0.05); plus the word error rate on the 60 s clip, so speed is never bought with accuracy;
* audio extraction (PyAV demux + decode + resample to 16 kHz mono) per minute of media, and against the
  media's duration;
* peak memory (``VmHWM``, which counts native memory that ``tracemalloc`` cannot see) of a fresh
  process transcribing the 5 min video through the tool, against a fresh process that only loads the model
  and transcribes one second (target < 600 MB);
* a 10-minute video through the tool in a fresh process: wall time (real-time factor, everything
  included: import probe, hashing, decoding, transcription) and peak memory against the 5-minute run, so
  "memory stays flat as media gets longer" is a measured ratio (target ≈ 1.0);
* a cached repeat of the tool (content-hash memo + SQLite lookup), against the uncached first run
  (target < 50 ms).

Run: ``.venv/bin/python -m bench.bench_transcription [--engines]``. The sections after the first measure
the Moonshine backend, as they did before faster-whisper became the default.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from agent_app.media.backends.base import TranscribeSettings, TranscriptionBackend
from agent_app.media.backends.local_moonshine import LocalMoonshineBackend
from agent_app.media.backends.local_whisper import LocalWhisperBackend
from agent_app.media.transcript_types import TranscriptSegment
from agent_app.storage import ProjectMediaLibrary, SqliteStorage
from agent_app.types import AgentContext, MediaAsset, ToolEnvironment
from plugins.transcribe_video import TranscribeVideoArgs, transcribe_video
from testsupport.decoded_audio import extract_audio
from testsupport.media_factory import Video, mp4, speak, speech_track, word_error_rate

REPO = Path(__file__).resolve().parent.parent
SENTENCES = [
    "The quick brown fox runs across the green field.",
    "Please remember to bring the blue book to the meeting tomorrow.",
    "Our new camera makes every picture look sharp and bright.",
    "The weather was cold, so we stayed inside and talked about music.",
    "Thank you for watching, and see you in the next video.",
    "Today we are going to cut the long interview into three short clips.",
    "First, open the project and find the scene with the red car.",
    "Then move the playhead to the moment the speaker starts to laugh.",
    "The light in the afternoon was soft and warm over the small town.",
    "If the sound is too quiet, raise the volume before you export.",
    "We planted tomatoes, beans and a row of sunflowers in the garden.",
    "The train left the station at seven and arrived just after noon.",
]


GAP_S = 0.7
"""Pause between sentences (``speech_track``'s default)."""


def _speech_sentences(seconds: float) -> list[str]:
    """Sentences (cycled) adding up to about ``seconds`` of speech with the pauses between them."""
    spoken_s = {}
    for sentence in SENTENCES:
        samples, rate = speak(sentence)
        spoken_s[sentence] = len(samples) / rate + GAP_S
    chosen: list[str] = []
    total = 1.0  # lead and tail silence
    while total + spoken_s[SENTENCES[len(chosen) % len(SENTENCES)]] / 2 < seconds:
        sentence = SENTENCES[len(chosen) % len(SENTENCES)]
        chosen.append(sentence)
        total += spoken_s[sentence]
    return chosen or SENTENCES[:1]


def make_speech_video(path: Path, seconds: float) -> tuple[Path, str]:
    sentences = _speech_sentences(seconds)
    audio, _ = speech_track(sentences)
    replace(mp4(audio), video=Video(fps=25, size=(320, 180))).write(path)
    return path, " ".join(sentences)


def _tool_env(data_dir: Path, media: Path) -> tuple[ToolEnvironment, MediaAsset]:
    storage = SqliteStorage(data_dir)
    project = storage.create_project("bench")
    with media.open("rb") as handle:
        asset = storage.import_asset(project.id, media.name, handle)
    env = ToolEnvironment(
        context=AgentContext(project_id=project.id, media_assets=[asset]),
        media=ProjectMediaLibrary(storage, project.id),
        data_dir=data_dir,
    )
    return env, asset


@dataclass(frozen=True)
class _Run:
    audio_s: float
    extract_s: float
    transcribe_s: float
    cpu_s: float
    segments: list[TranscriptSegment]


def _measure(backend: LocalMoonshineBackend, media: Path) -> _Run:
    """Extraction then transcription of ``media``, timed apart (wall clock, and CPU time of this process)."""
    started = time.perf_counter()
    clip = extract_audio(media)
    extracted, cpu = time.perf_counter(), time.process_time()
    result = backend.transcribe(clip, None, lambda fraction: None)
    return _Run(
        audio_s=clip.duration_ms / 1000,
        extract_s=extracted - started,
        transcribe_s=time.perf_counter() - extracted,
        cpu_s=time.process_time() - cpu,
        segments=result.segments,
    )


def _peak_rss_mb() -> float:
    """This process's peak resident memory. Linux's ``VmHWM`` belongs to the program image, so it starts
    afresh at ``exec``; ``ru_maxrss`` survives it and would report the forking parent's size whenever the
    parent was bigger (it made the 10-minute run look like +130 MB)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


ENGINES: dict[str, tuple[Callable[[], TranscriptionBackend], str | None]] = {
    "moonshine tiny-en": (LocalMoonshineBackend, None),
    "whisper tiny.en": (lambda: LocalWhisperBackend(TranscribeSettings("local", model="tiny.en")), "en"),
    "whisper base": (lambda: LocalWhisperBackend(TranscribeSettings("local", model="base")), "en"),
    "default, detected": (lambda: LocalWhisperBackend(TranscribeSettings("local")), None),
}
"""Engine label → (backend, language given). The default detects with base, then transcribes with tiny.en."""


def _engine_child(label: str, media: Path) -> dict[str, float | str]:
    """One engine on ``media`` in this (fresh) process: warmed up on 2 s (the default on 2 s of its own, so
    both of its models are loaded), then timed on all of it."""
    make, language = ENGINES[label]
    backend = make()
    backend.transcribe(extract_audio(media, 0, 2000), language, lambda fraction: None)
    clip = extract_audio(media)
    cpu = time.process_time()
    result = backend.transcribe(clip, language, lambda fraction: None)
    cpu_s = time.process_time() - cpu
    text = " ".join(segment.text for segment in result.segments)
    return {"cpu_per_s": cpu_s / (clip.duration_ms / 1000), "text": text, "peak_mb": _peak_rss_mb()}


def compare_engines(short: Path, short_text: str) -> None:
    print("\n== Offline engines on the same 60 s of speech, each in a fresh process (baseline: Moonshine tiny-en)")
    print(f"(this machine's 1-min load average now: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    baseline = 0.0
    for label in ENGINES:
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_transcription", "--child", f"engine:{label}", str(short), "-"],
            cwd=REPO, capture_output=True, text=True, check=True, timeout=1800,
        )  # fmt: skip
        report = json.loads(done.stdout.strip().splitlines()[-1])
        cpu_per_s = float(report["cpu_per_s"])
        baseline = baseline or cpu_per_s
        print(
            f"{label:>18}: WER {word_error_rate(short_text, str(report['text'])):.3f} | CPU {cpu_per_s:.4f} s per "
            f"audio s -> {cpu_per_s / baseline:.2f} x Moonshine's | peak RSS {float(report['peak_mb']):7.1f} MB"
        )
    print("(target: whisper tiny.en at most 1.10 x Moonshine's CPU, WER no worse)")


def child(mode: str, media: Path, data_dir: Path) -> None:
    """Run in a fresh process: ``tool`` transcribes ``media`` through the tool; ``baseline`` only loads
    the model and transcribes its first second; ``engine:LABEL`` measures one of :data:`ENGINES`. Prints
    the peak RSS in MB (and the engine's figures)."""
    if mode.startswith("engine:"):
        print(json.dumps(_engine_child(mode.removeprefix("engine:"), media)))
        return
    result_chars = 0
    if mode == "tool":
        env, _ = _tool_env(data_dir, media)
        result_chars = len(json.dumps(transcribe_video(TranscribeVideoArgs(), env)))
    else:
        clip = extract_audio(media, 0, 1000)
        LocalMoonshineBackend().transcribe(clip, None, lambda fraction: None)
    print(json.dumps({"peak_mb": _peak_rss_mb(), "result_chars": result_chars}))


def _child_peak(mode: str, media: Path, data_dir: Path) -> float:
    return _child_run(mode, media, data_dir)[0]


def _child_run(mode: str, media: Path, data_dir: Path) -> tuple[float, float, int]:
    """Peak RSS (MB), wall time (s) and the tool result's JSON size of a fresh process doing ``mode``."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_transcription", "--child", mode, str(media), str(data_dir)],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return float(report["peak_mb"]), time.perf_counter() - started, int(report["result_chars"])


def main(engines_only: bool) -> None:
    backend = LocalMoonshineBackend()
    with tempfile.TemporaryDirectory(prefix="bench-transcription-") as tmp:
        work = Path(tmp)
        print("Generating speech videos (espeak-ng + PyAV)...", flush=True)
        short, short_text = make_speech_video(work / "speech-60s.mp4", 60)
        compare_engines(short, short_text)
        if engines_only:
            return
        long, _ = make_speech_video(work / "speech-5min.mp4", 300)

        # Warm-up: model load and first-call costs are not part of a steady-state real-time factor.
        backend.transcribe(extract_audio(short, 0, 2000), None, lambda fraction: None)

        print("\n== Local backend (Moonshine tiny-en), baseline: the audio's own duration")
        print(f"(2 runs each, best shown; this machine's 1-min load average now: {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} cores - other work on the machine inflates every time below)")  # fmt: skip
        for label, media in (("60 s", short), ("5 min", long)):
            runs = [_measure(backend, media) for _ in range(2)]
            best = min(runs, key=lambda run: run.transcribe_s)
            audio_s = best.audio_s
            print(
                f"{label:>6}: audio {audio_s:6.1f} s | transcribe {best.transcribe_s:6.2f} s wall -> real-time factor "
                f"{best.transcribe_s / audio_s:.4f} (target <= 0.05), CPU time {best.cpu_s / audio_s:.4f} x duration"
                f" | {len(best.segments)} segments"
            )
            extract_s = min(run.extract_s for run in runs)
            print(
                f"{'':>6}  extraction {extract_s:6.2f} s -> {extract_s / (audio_s / 60):.3f} s per minute of media, "
                f"{extract_s / audio_s:.4f} x duration | file {media.stat().st_size / 1e6:.1f} MB"
            )
            if media is short:
                text = " ".join(s.text for s in best.segments)
                print(f"{'':>6}  word error rate {word_error_rate(short_text, text):.3f} (test threshold 0.15)")

        print("\n== Tool, cached repeat (baseline: the uncached first run of the same call)")
        env, _ = _tool_env(work / "data-cache", short)
        started = time.perf_counter()
        first = transcribe_video(TranscribeVideoArgs(), env)
        uncached_s = time.perf_counter() - started
        repeats = []
        for _ in range(5):
            started = time.perf_counter()
            again = transcribe_video(TranscribeVideoArgs(), env)
            repeats.append(time.perf_counter() - started)
        assert again["cached"] and not first["cached"]
        fastest, worst = min(repeats), max(repeats)
        print(
            f"uncached {uncached_s * 1000:8.1f} ms | cached repeat best {fastest * 1000:.1f} ms, worst "
            f"{worst * 1000:.1f} ms (target < 50 ms) -> {worst / uncached_s:.4f} x uncached"
        )

        print("\n== Peak memory of a fresh process (VmHWM; baseline: model loaded + 1 s transcribed)")
        baseline_mb = _child_peak("baseline", long, work / "data-baseline")
        tool_mb, tool_s, _ = _child_run("tool", long, work / "data-peak")
        print(
            f"baseline {baseline_mb:7.1f} MB | 5 min through the tool {tool_mb:7.1f} MB (target < 600 MB) -> "
            f"{tool_mb / baseline_mb:.2f} x baseline, +{tool_mb - baseline_mb:.1f} MB for 5 min"
        )
        del short, long
        print("\n== 10 minutes through the tool in a fresh process (baseline: the 5-minute run above)")
        ten, _ = make_speech_video(work / "speech-10min.mp4", 600)
        ten_mb, ten_s, ten_chars = _child_run("tool", ten, work / "data-ten")
        print(
            f"10 min: peak {ten_mb:7.1f} MB -> {ten_mb / tool_mb:.2f} x the 5-minute peak (flat: ~1.0) | wall "
            f"{ten_s:6.1f} s incl. process start and model load -> {ten_s / 600:.4f} x duration, "
            f"{ten_s / tool_s:.2f} x the 5-minute run | result for the model {ten_chars} characters of JSON"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "MEDIA", "DATA_DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--engines", action="store_true", help="only compare the offline engines")
    arguments = parser.parse_args()
    if arguments.child:
        mode, media_path, data_path = arguments.child
        child(mode, Path(media_path), Path(data_path))
    else:
        main(arguments.engines)
