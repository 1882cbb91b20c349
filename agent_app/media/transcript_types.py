"""The transcript as data: what backends produce, the cache stores, the tool returns and the panel shows.

Times are integer milliseconds on the media's own timeline (so a segment at 61 000 ms is at 1:01 in the
player even when only a range was transcribed). camelCase on the wire like every other shared model.
"""

from __future__ import annotations

from pydantic import Field

from agent_app.types import WireModel


class TranscriptWord(WireModel):
    """One spoken word and where it is: what a cut on a word or playback following the speech needs."""

    start_ms: int = Field(ge=0)
    end_ms: int = Field(ge=0)
    text: str


class TranscriptSegment(WireModel):
    """One timed stretch of speech: a sentence or phrase, as the backend delimits it, with its words when
    the backend times them (empty otherwise, and in transcripts cached before words were kept)."""

    start_ms: int = Field(ge=0)
    end_ms: int = Field(ge=0)
    text: str
    words: list[TranscriptWord] = Field(default_factory=list)
    speaker: str | None = None
    """The speaker's label (``S1``, ``S2``…) once speakers were identified for the asset."""
    original_text: str | None = None
    """What the machine heard, when the user corrected ``text``."""


class SpeakerTurn(WireModel):
    """A stretch of the media one speaker talks in, as diarization found it."""

    start_ms: int = Field(ge=0)
    end_ms: int = Field(ge=0)
    speaker: str


class Transcript(WireModel):
    """A full transcript of (a range of) one media file, with how it was made."""

    duration_ms: int
    """The whole media's duration, not the range's."""
    language: str | None = None
    segments: list[TranscriptSegment] = Field(default_factory=list)
    backend: str
    model: str
    start_ms: int = 0
    end_ms: int | None = None
    """The transcribed range; ``end_ms`` ``None`` means to the end."""
    notes: list[str] = Field(default_factory=list)
    """What the reader should know about its completeness (damaged or missing stretches of audio)."""
    speaker_names: dict[str, str] = Field(default_factory=dict)
    """The names the user gave speaker labels (``S1`` → ``Ana``); a label without one is shown as it is."""

    def speaker_name(self, label: str | None) -> str | None:
        """How the speaker ``label`` is shown: the user's name for it, else the label."""
        return None if label is None else self.speaker_names.get(label, label)

    @property
    def is_full(self) -> bool:
        """Whether this covers the whole media (what the page shows and exports)."""
        return self.start_ms == 0 and self.end_ms is None


def clamp_segments(segments: list[TranscriptSegment], start_ms: int, end_ms: int) -> list[TranscriptSegment]:
    """Segments forced inside ``[start_ms, end_ms]``, in time order (starts never decreasing), blank
    text dropped: backends (remote ones especially) occasionally report times past the end."""
    result: list[TranscriptSegment] = []
    previous_start = start_ms
    for segment in sorted(segments, key=lambda s: (s.start_ms, s.end_ms)):
        text = " ".join(segment.text.split())
        if not text:
            continue
        begin = min(max(segment.start_ms, previous_start), end_ms)
        finish = min(max(segment.end_ms, begin), end_ms)
        words = clamp_words(segment.words, begin, finish)
        result.append(segment.model_copy(update={"start_ms": begin, "end_ms": finish, "text": text, "words": words}))
        previous_start = begin
    return result


def clamp_words(words: list[TranscriptWord], start_ms: int, end_ms: int) -> list[TranscriptWord]:
    """Words forced inside their segment ``[start_ms, end_ms]`` and in order (each starting no earlier
    than the one before), blank ones dropped."""
    result: list[TranscriptWord] = []
    previous_start = start_ms
    for word in words:
        text = word.text.strip()
        if not text:
            continue
        begin = min(max(word.start_ms, previous_start), end_ms)
        finish = min(max(word.end_ms, begin), end_ms)
        result.append(TranscriptWord(start_ms=begin, end_ms=finish, text=text))
        previous_start = begin
    return result


def label_speakers(segments: list[TranscriptSegment], turns: list[SpeakerTurn]) -> list[TranscriptSegment]:
    """Each segment labelled with the speaker of the turns it overlaps most (``turns`` in time order);
    a segment no turn overlaps keeps no label."""
    labelled = []
    first = 0
    for segment in segments:
        while first < len(turns) and turns[first].end_ms <= segment.start_ms:
            first += 1
        overlap: dict[str, int] = {}
        index = first
        while index < len(turns) and turns[index].start_ms < max(segment.end_ms, segment.start_ms + 1):
            turn = turns[index]
            shared = min(turn.end_ms, segment.end_ms) - max(turn.start_ms, segment.start_ms)
            overlap[turn.speaker] = overlap.get(turn.speaker, 0) + max(shared, 1)
            index += 1
        speaker = max(overlap, key=lambda label: overlap[label]) if overlap else None
        labelled.append(segment.model_copy(update={"speaker": speaker}))
    return labelled
