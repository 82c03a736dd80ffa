"""Audio usage (issue 43): transcriptions and speech the provider made, totalled per day and per month
beside the text usage (`operations.usage`), and what they may have cost.

What is counted: every `AudioUsage` row (`conversations.services.voice.usage` writes one per request
the provider answered; a segment replayed from its stored blob, a kept voice preview and the offline
demo write none, because nothing was billed).

What each call reports (the installed `openai` SDK's types):

- a transcription by a gpt-4o transcribe model reports tokens (`usage.type == "tokens"`: input tokens,
  split into audio and text tokens, and output tokens); whisper-1 reports seconds
  (`usage.type == "duration"`); the recording's own length is kept either way;
- speech (`audio.speech.create`) answers audio bytes and reports nothing: the characters sent and the
  seconds of audio made are recorded instead.

Cost, in USD, from the price table in settings (decision 0004: no defaults; an unset price means no
estimate), call by call:

    transcription in tokens:  audio tokens × audio-input price + text tokens × text-input price
                              + output tokens × output price          (per million tokens; input tokens
                              with no split count as audio; text-input unset: the audio-input price)
    transcription otherwise:  minutes × per-minute price (also a token call when token prices are unset)
    speech:                   minutes made × per-minute price, else characters × per-million-character price

A period's estimate is the sum of its calls; it is None ("—") when any call in it has no price (then
`unpriced_calls` says how many), never a partial sum that looks whole. Decimal arithmetic, rounded
half-up to a millionth of a dollar.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings

from elion.models import AudioCall, AudioUsage

MILLION = Decimal(1_000_000)
MINUTE = Decimal(60)
COST_STEP = Decimal("0.000001")
READ_CHUNK = 2_000

# The settings of the audio price table, by the name the API answers them under.
PRICE_SETTINGS = {
    "transcribe_audio_input_per_mtok": "ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK",
    "transcribe_text_input_per_mtok": "ELION_PRICE_TRANSCRIBE_TEXT_INPUT_PER_MTOK",
    "transcribe_output_per_mtok": "ELION_PRICE_TRANSCRIBE_OUTPUT_PER_MTOK",
    "transcribe_per_minute": "ELION_PRICE_TRANSCRIBE_PER_MINUTE",
    "speech_per_minute": "ELION_PRICE_SPEECH_PER_MINUTE",
    "speech_per_mchar": "ELION_PRICE_SPEECH_PER_MCHAR",
}
FIGURES = (
    "transcription_seconds", "transcription_input_tokens", "transcription_output_tokens",
    "speech_characters", "speech_seconds",
)
_COLUMNS = ("created_at", "kind", "seconds", "input_tokens", "input_audio_tokens", "input_text_tokens",
            "output_tokens", "characters")


@dataclass(frozen=True)
class AudioPrices:
    """USD: per million tokens, per minute of audio, per million characters; None where unset."""

    values: dict[str, Decimal | None]

    def __getitem__(self, name: str) -> Decimal | None:
        return self.values[name]

    def as_dict(self) -> dict[str, str | None]:
        return {name: None if value is None else format(value, "f") for name, value in self.values.items()}


def configured_audio_prices() -> AudioPrices:
    values = {name: _decimal(getattr(settings, setting, None)) for name, setting in PRICE_SETTINGS.items()}
    if values["transcribe_text_input_per_mtok"] is None:
        values["transcribe_text_input_per_mtok"] = values["transcribe_audio_input_per_mtok"]
    return AudioPrices(values)


def _decimal(value: object) -> Decimal | None:
    return None if value is None else Decimal(str(value))


@dataclass(frozen=True)
class AudioCallRow:
    kind: str
    seconds: float | None
    input_tokens: int | None
    input_audio_tokens: int | None
    input_text_tokens: int | None
    output_tokens: int | None
    characters: int | None


def _per_minute(seconds: float | None, price: Decimal | None) -> Decimal | None:
    if seconds is None or price is None:
        return None
    return Decimal(str(seconds)) / MINUTE * price


def call_cost(call: AudioCallRow, prices: AudioPrices) -> Decimal | None:
    """USD for one call at these prices (module docstring), unrounded; None when it cannot be priced."""
    if call.kind == AudioCall.SPEECH:
        by_minute = _per_minute(call.seconds, prices["speech_per_minute"])
        if by_minute is not None:
            return by_minute
        if call.characters is None or prices["speech_per_mchar"] is None:
            return None
        return call.characters * prices["speech_per_mchar"] / MILLION
    audio_price, output_price = prices["transcribe_audio_input_per_mtok"], prices["transcribe_output_per_mtok"]
    if call.input_tokens is not None and audio_price is not None and output_price is not None:
        text_tokens = min(call.input_text_tokens or 0, call.input_tokens)
        audio_tokens = call.input_tokens - text_tokens  # no split: every input token is audio
        text_price = prices["transcribe_text_input_per_mtok"] or audio_price
        return (audio_tokens * audio_price + text_tokens * text_price + (call.output_tokens or 0) * output_price) / MILLION
    return _per_minute(call.seconds, prices["transcribe_per_minute"])


def _plus(total: float | int | None, value: float | int | None) -> float | int | None:
    if value is None:
        return total
    return value if total is None else total + value


@dataclass
class AudioTotals:
    """One period's audio: `period` is an ISO date (a day) or `YYYY-MM` (a month)."""

    period: str
    transcriptions: int = 0
    speech_requests: int = 0
    figures: dict[str, float | int | None] = field(default_factory=lambda: dict.fromkeys(FIGURES))
    cost: Decimal = Decimal(0)
    unpriced_calls: int = 0

    def add(self, call: AudioCallRow, cost: Decimal | None) -> None:
        if call.kind == AudioCall.SPEECH:
            self.speech_requests += 1
            self._add("speech_characters", call.characters)
            self._add("speech_seconds", call.seconds)
        else:
            self.transcriptions += 1
            self._add("transcription_seconds", call.seconds)
            self._add("transcription_input_tokens", call.input_tokens)
            self._add("transcription_output_tokens", call.output_tokens)
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost += cost

    def _add(self, name: str, value: float | int | None) -> None:
        self.figures[name] = _plus(self.figures[name], value)

    def estimated_cost(self) -> Decimal | None:
        if self.unpriced_calls:
            return None
        return self.cost.quantize(COST_STEP, rounding=ROUND_HALF_UP)

    def as_row(self, name: str) -> dict:
        cost = self.estimated_cost()
        figures = {key: round(value, 3) if isinstance(value, float) else value for key, value in self.figures.items()}
        return {
            name: self.period, "transcriptions": self.transcriptions, "speech_requests": self.speech_requests,
            **figures, "unpriced_calls": self.unpriced_calls,
            "estimated_cost_usd": None if cost is None else str(cost),
        }


@dataclass(frozen=True)
class AudioReport:
    days: list[AudioTotals]
    months: list[AudioTotals]
    prices: AudioPrices

    def as_dict(self) -> dict:
        return {
            "days": [totals.as_row("date") for totals in self.days],
            "months": [totals.as_row("month") for totals in self.months],
            "prices": self.prices.as_dict(),
        }


def audio_usage_report(
    *, since: dt.datetime, until: dt.datetime, first_day: dt.date, first_month: dt.date, zone: dt.tzinfo,
    newest_first: Callable[[dict], list],
) -> AudioReport:
    """The audio calls in [since, until) per day (from `first_day`) and per month (from `first_month`),
    newest first; periods without a call are left out. One query, read in chunks."""
    prices = configured_audio_prices()
    by_day: dict[dt.date, AudioTotals] = {}
    by_month: dict[tuple[int, int], AudioTotals] = {}
    rows = (
        AudioUsage.objects.filter(created_at__gte=since, created_at__lt=until)
        .values_list(*_COLUMNS)
        .iterator(chunk_size=READ_CHUNK)
    )
    for created_at, *values in rows:
        call = AudioCallRow(*values)
        cost = call_cost(call, prices)
        local = created_at.astimezone(zone).date()
        if local >= first_day:
            by_day.setdefault(local, AudioTotals(period=local.isoformat())).add(call, cost)
        if local >= first_month:
            month = (local.year, local.month)
            by_month.setdefault(month, AudioTotals(period=f"{local.year:04d}-{local.month:02d}")).add(call, cost)
    return AudioReport(days=newest_first(by_day), months=newest_first(by_month), prices=prices)
