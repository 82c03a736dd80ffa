"""Provider-reported usage, totalled per day and per month, and what it may have cost.

What is counted: every assistant reply whose `metadata.usage` the provider
filled in (`conversations.sending.run` stores it, summed over the reply's tool
rounds), in every conversation — trashed ones and those in hidden folders
too, because this is what the provider billed, not what continuity may read.
A conversation deleted forever takes its replies, and so its figures, with it.

Nulls: a figure a reply did not report adds nothing; a period in which no
reply reported a figure shows it as None ("—"), never as 0.

Days and months are calendar periods in the server's `TIME_ZONE`.

Cost, in USD, from the price table in settings (`ELION_PRICE_*_PER_MTOK`, per
million tokens). The provider counts cached input inside `input_tokens` and
reasoning inside `output_tokens`, so:

    cost = (input − cached) × input price + cached × cached-input price + output × output price

Reasoning tokens are shown but never priced a second time. Without an input
and an output price there is no estimate (None); without a cached-input price
cached tokens cost the input price (the provider's undiscounted rate).
Decimal arithmetic throughout, rounded half-up to a millionth of a dollar.

Imports models and `elion.base.errors` only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.utils import timezone

from elion.base.errors import InvalidInput
from operations.audio_usage import AudioReport, audio_usage_report
from transcript.models import Message, Role

# The figures of `metadata.usage`, as `conversations.sending.run` stores them.
USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")

DAYS_DEFAULT, DAYS_MAX = 31, 366
MONTHS_DEFAULT, MONTHS_MAX = 12, 120
MILLION = Decimal(1_000_000)
COST_STEP = Decimal("0.000001")
READ_CHUNK = 2_000


@dataclass(frozen=True)
class Prices:
    """USD per million tokens."""

    input_per_mtok: Decimal
    cached_input_per_mtok: Decimal
    output_per_mtok: Decimal

    def as_dict(self) -> dict:
        return {
            "input_per_mtok": _plain(self.input_per_mtok),
            "cached_input_per_mtok": _plain(self.cached_input_per_mtok),
            "output_per_mtok": _plain(self.output_per_mtok),
        }


def _plain(value: Decimal) -> str:
    """A decimal as digits and a point, never in exponent form (`1E+1` is "10")."""
    return format(value, "f")


def configured_prices() -> Prices | None:
    """The price table from settings, or None when the input or output price is unset."""
    input_price = settings.ELION_PRICE_INPUT_PER_MTOK
    output_price = settings.ELION_PRICE_OUTPUT_PER_MTOK
    if input_price is None or output_price is None:
        return None
    cached = settings.ELION_PRICE_CACHED_INPUT_PER_MTOK
    return Prices(
        input_per_mtok=Decimal(input_price),
        cached_input_per_mtok=Decimal(input_price if cached is None else cached),
        output_per_mtok=Decimal(output_price),
    )


def reported_usage(usage: object) -> dict[str, int | None] | None:
    """A stored `metadata.usage` read as the four figures (None where not a count), or None if absent."""
    if not isinstance(usage, dict):
        return None
    return {key: _count(usage.get(key)) for key in USAGE_KEYS}


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _plus(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return value if total is None else total + value


@dataclass
class UsageTotals:
    """One period's sums: `period` is an ISO date (a day) or `YYYY-MM` (a month)."""

    period: str
    replies: int = 0
    figures: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS))

    def add(self, usage: dict[str, int | None]) -> None:
        self.replies += 1
        for key in USAGE_KEYS:
            self.figures[key] = _plus(self.figures[key], usage[key])

    @property
    def input_tokens(self) -> int | None:
        return self.figures["input_tokens"]

    @property
    def cached_input_tokens(self) -> int | None:
        return self.figures["cached_input_tokens"]

    @property
    def output_tokens(self) -> int | None:
        return self.figures["output_tokens"]

    @property
    def reasoning_tokens(self) -> int | None:
        return self.figures["reasoning_tokens"]


def estimated_cost(totals: UsageTotals, prices: Prices | None) -> Decimal | None:
    """USD for these totals at these prices (module docstring), or None without prices or counts."""
    if prices is None or (totals.input_tokens is None and totals.output_tokens is None):
        return None
    input_tokens = totals.input_tokens or 0
    cached = min(totals.cached_input_tokens or 0, input_tokens)
    output_tokens = totals.output_tokens or 0
    cost = (
        (input_tokens - cached) * prices.input_per_mtok
        + cached * prices.cached_input_per_mtok
        + output_tokens * prices.output_per_mtok
    ) / MILLION
    return cost.quantize(COST_STEP, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class UsageReport:
    days: list[UsageTotals]
    months: list[UsageTotals]
    prices: Prices | None
    time_zone: str
    audio: AudioReport | None = None  # transcription and speech (`operations.audio_usage`)

    def cost(self, totals: UsageTotals) -> Decimal | None:
        return estimated_cost(totals, self.prices)

    def as_dict(self) -> dict:
        return {
            "days": [self._row("date", totals) for totals in self.days],
            "months": [self._row("month", totals) for totals in self.months],
            "prices": self.prices.as_dict() if self.prices else None,
            "currency": "USD",
            "time_zone": self.time_zone,
            "audio": self.audio.as_dict() if self.audio else None,
        }

    def _row(self, name: str, totals: UsageTotals) -> dict:
        cost = self.cost(totals)
        return {
            name: totals.period,
            "replies": totals.replies,
            **totals.figures,
            "estimated_cost_usd": None if cost is None else str(cost),
        }


def period_count(raw: str | None, *, name: str, default: int, maximum: int) -> int:
    """`?days=` / `?months=`: a whole number from 1 to `maximum`; anything else is 400 `invalid_<name>`."""
    if raw is None or raw == "":
        return default
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= maximum:
        raise InvalidInput(f"{name} must be a whole number from 1 to {maximum}.", code=f"invalid_{name}")
    return int(text)


def _first_of_month_back(day: dt.date, months: int) -> dt.date:
    """The first day of the month `months - 1` months before `day`'s month."""
    index = day.year * 12 + day.month - 1 - (months - 1)
    return dt.date(index // 12, index % 12 + 1, 1)


def _usage_rows(since: dt.datetime, until: dt.datetime) -> Iterator[tuple[dt.datetime, object]]:
    """(created_at, metadata.usage) of every assistant reply with usage in [since, until), in chunks."""
    return (
        Message.objects.filter(
            role=Role.ASSISTANT, created_at__gte=since, created_at__lt=until, metadata__has_key="usage"
        )
        .values_list("created_at", "metadata__usage")
        .iterator(chunk_size=READ_CHUNK)
    )


def usage_report(
    *, days: int = DAYS_DEFAULT, months: int = MONTHS_DEFAULT, now: dt.datetime | None = None
) -> UsageReport:
    """Totals for the last `days` calendar days and the last `months` calendar months before `now`
    (default: now; today and this month included), newest first; periods without a reply with
    usage are left out. One query, read in chunks, however many replies there are; and one for the
    audio calls (`operations.audio_usage`)."""
    zone = timezone.get_default_timezone()
    today = (now or timezone.now()).astimezone(zone).date()
    first_day = today - dt.timedelta(days=days - 1)
    first_month = _first_of_month_back(today, months)
    since = dt.datetime.combine(min(first_day, first_month), dt.time.min, tzinfo=zone)
    until = dt.datetime.combine(today + dt.timedelta(days=1), dt.time.min, tzinfo=zone)
    by_day: dict[dt.date, UsageTotals] = {}
    by_month: dict[tuple[int, int], UsageTotals] = {}
    for created_at, stored in _usage_rows(since, until):
        usage = reported_usage(stored)
        if usage is None:
            continue
        local = created_at.astimezone(zone).date()
        if local >= first_day:
            by_day.setdefault(local, UsageTotals(period=local.isoformat())).add(usage)
        if local >= first_month:
            month = (local.year, local.month)
            by_month.setdefault(month, UsageTotals(period=f"{local.year:04d}-{local.month:02d}")).add(usage)
    return UsageReport(
        days=_newest_first(by_day),
        months=_newest_first(by_month),
        prices=configured_prices(),
        time_zone=str(zone),
        audio=audio_usage_report(since=since, until=until, first_day=first_day, first_month=first_month, zone=zone,
                                 newest_first=_newest_first),
    )


def _newest_first(periods: dict) -> list[UsageTotals]:
    return [periods[key] for key in sorted(periods, reverse=True)]


def latest_reported_usage(messages: Iterable[Message]) -> tuple[Message, dict[str, int | None]] | None:
    """The newest assistant reply among `messages` (in branch order) that carries usage, with its figures."""
    for message in reversed(list(messages)):
        if message.role != Role.ASSISTANT or not isinstance(message.metadata, dict):
            continue
        usage = reported_usage(message.metadata.get("usage"))
        if usage is not None:
            return message, usage
    return None
