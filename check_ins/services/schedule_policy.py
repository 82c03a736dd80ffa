"""When a check-in is due: pure functions of plain data (no database), DST-correct.

Every schedule is wall time in the check-in's IANA time zone. The next due
instant after an instant `after` is found by walking the zone's local dates from
the one `after` falls on and taking the first candidate strictly after `after`:

* A wall time that does not exist that day (spring forward: 02:30 in
  Europe/Berlin on the last Sunday of March) runs at the first valid instant
  after the gap (03:00 CEST), once.
* A wall time that happens twice (fall back: 02:30 on the last Sunday of
  October) runs at its first occurrence (fold 0), once: the next candidate is
  the next day's, never the repeated hour.
* Quiet hours (wall times, both ends in the zone; start after end spans
  midnight): a due instant inside them is postponed to their end
  (`quiet_postponed`), never skipped. A postponed due time is the run's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# A schedule walks at most this many local dates looking for a due day (weekdays: 7; every_n_days: N ≤ 365).
_MAX_DAYS = 400


@dataclass(frozen=True)
class Schedule:
    """A check-in's schedule as plain data (`schedule_of` reads one from a row).

    `at` is a wall time; `first` the wall date-time of a once, or the first run of every_n_days.
    """

    kind: str  # once | daily | weekdays | every_n_days
    zone: ZoneInfo
    at: time
    first: datetime | None = None  # naive wall date-time
    days: tuple[int, ...] = ()  # weekdays, Monday = 0
    n: int | None = None
    quiet_start: time | None = None
    quiet_end: time | None = None


def wall_instant(day: date, at: time, zone: ZoneInfo) -> datetime:
    """The instant (UTC) a wall clock in `zone` shows `at` on `day`: the first occurrence when it shows it
    twice (fall back), the first valid instant after the gap when it never does (spring forward)."""
    wall = datetime.combine(day, at)
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall:
        return first
    # In a gap: fold=1 reads the wall time with the offset after the change, which lands before the gap;
    # the gap's end is the first instant whose wall time is not earlier than `wall` (found to the second).
    low = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    high = first
    low, high = min(low, high), max(low, high)
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).replace(tzinfo=None) >= wall:
            high = middle
        else:
            low = middle
    return high.replace(microsecond=0)


def _day_is_due(schedule: Schedule, day: date) -> bool:
    if schedule.kind == "daily":
        return True
    if schedule.kind == "weekdays":
        return day.weekday() in schedule.days
    if schedule.kind == "every_n_days":
        offset = (day - schedule.first.date()).days
        return offset >= 0 and offset % schedule.n == 0
    raise ValueError(f"unknown schedule kind {schedule.kind!r}")


def scheduled_after(schedule: Schedule, after: datetime) -> datetime | None:
    """The first scheduled instant (UTC, quiet hours not applied) strictly after `after` (aware); None when
    the schedule has none left (a once that is past)."""
    if schedule.kind == "once":
        due = wall_instant(schedule.first.date(), schedule.first.time(), schedule.zone)
        return due if due > after else None
    day = after.astimezone(schedule.zone).date() - timedelta(days=1)  # the day before: a gap can move it
    for _ in range(_MAX_DAYS):
        if _day_is_due(schedule, day):
            due = wall_instant(day, schedule.at, schedule.zone)
            if due > after:
                return due
        day += timedelta(days=1)
    return None


def _in_quiet(wall: time, start: time, end: time) -> bool:
    if start < end:
        return start <= wall < end
    return wall >= start or wall < end  # spans midnight (start == end: none)


def quiet_postponed(schedule: Schedule, due: datetime) -> datetime:
    """`due`, or the end of the quiet hours it falls in (the first instant the wall clock shows their end)."""
    start, end = schedule.quiet_start, schedule.quiet_end
    if start is None or end is None or start == end:
        return due
    local = due.astimezone(schedule.zone)
    if not _in_quiet(local.time().replace(tzinfo=None), start, end):
        return due
    end_day = local.date() if local.time().replace(tzinfo=None) < end else local.date() + timedelta(days=1)
    return wall_instant(end_day, end, schedule.zone)


def next_due(schedule: Schedule, after: datetime) -> datetime | None:
    """The next due instant strictly after `after`: the next scheduled one, postponed out of quiet hours.

    A scheduled instant at or before `after` whose postponement lands after it is due too (a run at 23:00
    postponed to 07:00: asked at 01:00, it is the 07:00 due), so the search starts a day early.
    """
    candidate = scheduled_after(schedule, after - timedelta(days=1))
    for _ in range(_MAX_DAYS):
        if candidate is None:
            return None
        due = quiet_postponed(schedule, candidate)
        if due > after:
            return due
        candidate = scheduled_after(schedule, candidate)
    return None


def due_times_through(schedule: Schedule, start: datetime, now: datetime, *, limit: int) -> list[datetime]:
    """The due instants from `start` (itself due) through `now`, oldest first, at most `limit` of them
    (the newest kept): what a server down since before `start` missed."""
    found = [start]
    due = start
    while True:
        due = next_due(schedule, due)
        if due is None or due > now:
            break
        found.append(due)
        if len(found) > limit:
            found.pop(0)
    return found
