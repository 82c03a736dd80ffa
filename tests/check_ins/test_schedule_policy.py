"""When a check-in is due (`check_ins.services.schedule_policy`): wall times in the check-in's zone, DST-correct,
quiet hours postponing. Pure functions: walked over whole years and every zone kind, no database."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from check_ins.services.schedule_policy import Schedule, due_times_through, next_due, wall_instant

BERLIN = ZoneInfo("Europe/Berlin")


def _walk(schedule: Schedule, start: datetime, count: int) -> list[datetime]:
    found, after = [], start
    for _ in range(count):
        after = next_due(schedule, after)
        found.append(after)
    return found


def test_dst_spring_forward_a_daily_0230_in_berlin_runs_once_at_the_first_valid_instant():
    schedule = Schedule(kind="daily", zone=BERLIN, at=time(2, 30))
    dues = _walk(schedule, datetime(2026, 3, 27, 12, tzinfo=UTC), 4)
    local = [d.astimezone(BERLIN) for d in dues]
    assert [d.date().isoformat() for d in local] == ["2026-03-28", "2026-03-29", "2026-03-30", "2026-03-31"]
    # 29 March: 02:00-03:00 does not exist; the first valid instant after the gap is 03:00 CEST.
    assert local[1].strftime("%H:%M %Z") == "03:00 CEST"
    assert [d.strftime("%H:%M") for d in local] == ["02:30", "03:00", "02:30", "02:30"]


def test_dst_fall_back_a_daily_0230_in_berlin_runs_once_at_the_first_occurrence():
    schedule = Schedule(kind="daily", zone=BERLIN, at=time(2, 30))
    dues = _walk(schedule, datetime(2026, 10, 23, 12, tzinfo=UTC), 4)
    local = [d.astimezone(BERLIN) for d in dues]
    assert [d.date().isoformat() for d in local] == ["2026-10-24", "2026-10-25", "2026-10-26", "2026-10-27"]
    assert local[1].strftime("%H:%M %Z") == "02:30 CEST"  # fold 0: the first 02:30, never the repeated one
    assert len(set(dues)) == 4


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"])
@pytest.mark.parametrize("at", [time(0, 0), time(1, 30), time(2, 0), time(2, 30), time(3, 0), time(23, 59)])
def test_a_daily_check_in_is_due_once_on_every_local_day_of_a_year(zone, at):
    schedule = Schedule(kind="daily", zone=ZoneInfo(zone), at=at)
    dues = _walk(schedule, datetime(2026, 1, 1, tzinfo=UTC), 365)
    days = [d.astimezone(ZoneInfo(zone)).date() for d in dues]
    assert days == sorted(set(days)), "no local day twice"
    assert all((b - a).days == 1 for a, b in zip(days, days[1:], strict=False)), "no local day skipped"
    for due in dues:
        shown = due.astimezone(ZoneInfo(zone)).time().replace(tzinfo=None)
        # The wall time, or (in a gap) the first valid instant after it.
        assert shown == at or shown > at


def test_weekdays_and_every_n_days():
    weekdays = Schedule(kind="weekdays", zone=BERLIN, at=time(9), days=(0, 4))
    dues = _walk(weekdays, datetime(2026, 12, 1, tzinfo=UTC), 4)
    assert [d.astimezone(BERLIN).strftime("%a %d") for d in dues] == ["Fri 04", "Mon 07", "Fri 11", "Mon 14"]
    every = Schedule(kind="every_n_days", zone=BERLIN, at=time(9), first=datetime(2026, 12, 2, 9), n=3)
    dues = _walk(every, datetime(2026, 11, 1, tzinfo=UTC), 3)
    assert [d.astimezone(BERLIN).strftime("%d %H:%M") for d in dues] == ["02 09:00", "05 09:00", "08 09:00"]


def test_once_is_due_once_then_never():
    once = Schedule(kind="once", zone=BERLIN, at=time(9), first=datetime(2026, 12, 5, 9))
    due = next_due(once, datetime(2026, 12, 1, tzinfo=UTC))
    assert due == datetime(2026, 12, 5, 8, tzinfo=UTC)
    assert next_due(once, due) is None


def test_quiet_hours_postpone_a_due_time_to_their_end_never_skip_it():
    schedule = Schedule(kind="daily", zone=BERLIN, at=time(23), quiet_start=time(22), quiet_end=time(7))
    dues = _walk(schedule, datetime(2026, 12, 1, 12, tzinfo=UTC), 3)
    assert [d.astimezone(BERLIN).strftime("%d %H:%M") for d in dues] == ["02 07:00", "03 07:00", "04 07:00"]
    outside = Schedule(kind="daily", zone=BERLIN, at=time(12), quiet_start=time(22), quiet_end=time(7))
    assert next_due(outside, datetime(2026, 12, 1, tzinfo=UTC)).astimezone(BERLIN).strftime("%H:%M") == "12:00"
    same_day = Schedule(kind="daily", zone=BERLIN, at=time(6), quiet_start=time(5), quiet_end=time(8))
    assert next_due(same_day, datetime(2026, 12, 1, tzinfo=UTC)).astimezone(BERLIN).strftime("%d %H:%M") == "01 08:00"


def test_wall_instant_in_a_gap_is_the_gaps_end():
    assert wall_instant(datetime(2026, 3, 29).date(), time(2, 30), BERLIN) == datetime(2026, 3, 29, 1, tzinfo=UTC)
    lord_howe = ZoneInfo("Australia/Lord_Howe")  # a half-hour change: 02:00 -> 02:30 on 4 October 2026
    gap_end = wall_instant(datetime(2026, 10, 4).date(), time(2, 10), lord_howe)
    assert gap_end.astimezone(lord_howe).strftime("%H:%M") == "02:30"


def test_missed_due_times_are_listed_through_now_newest_kept():
    schedule = Schedule(kind="daily", zone=BERLIN, at=time(9))
    start = datetime(2026, 12, 1, 8, tzinfo=UTC)
    dues = due_times_through(schedule, start, start + timedelta(days=3, hours=1), limit=10)
    assert len(dues) == 4 and dues[0] == start
    assert due_times_through(schedule, start, start + timedelta(days=100), limit=5)[-1] == start + timedelta(days=100)
