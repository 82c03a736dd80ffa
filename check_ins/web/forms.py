"""The check-in form of the pages (Settings → Check-ins, and a proposal card's Edit), translated both ways:
form fields → the check-ins API's shapes (`fields_from_form`; the services check them), and a check-in or
a proposal → the form's initial values (`form_values`). Plus a schedule in words for the list and the cards.

Form fields: `title`, `brief`, `schedule_kind`, `at_time` (HH:MM: daily, weekdays), `at_datetime`
(YYYY-MM-DDTHH:MM: once, and every_n_days' first run), `days` (repeated), `n`, `target` (`new_chat` or
`conversation`) with `conversation_id`, `time_zone`, `quiet_start` and `quiet_end` (both empty: none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from django.http import QueryDict

from check_ins.models import CheckIn, ScheduleKind, TargetKind
from check_ins.services.schedule_policy import WEEKDAYS

DATE_TIME_KINDS = (ScheduleKind.ONCE, ScheduleKind.EVERY_N_DAYS)
DAY_NAMES = {"mon": "Monday", "tue": "Tuesday", "wed": "Wednesday", "thu": "Thursday", "fri": "Friday",
             "sat": "Saturday", "sun": "Sunday"}


def _number(value: str) -> object:
    value = value.strip()
    return int(value) if value.isdigit() else value


def schedule_from_form(data: QueryDict) -> dict:
    kind = data.get("schedule_kind", "")
    at = data.get("at_datetime" if kind in DATE_TIME_KINDS else "at_time", "").strip()
    schedule: dict = {"kind": kind, "at": at}
    if kind == ScheduleKind.WEEKDAYS:
        schedule["days"] = data.getlist("days")
    if kind == ScheduleKind.EVERY_N_DAYS:
        schedule["n"] = _number(data.get("n", ""))
    return schedule


def target_from_form(data: QueryDict) -> dict:
    if data.get("target") == TargetKind.CONVERSATION:
        return {"kind": TargetKind.CONVERSATION, "conversation_id": data.get("conversation_id", "")}
    return {"kind": data.get("target", "")}


def fields_from_form(data: QueryDict, *, names: tuple[str, ...]) -> dict:
    """The API fields among `names` that the form carries, in the API's shapes (checked by the services)."""
    fields: dict = {}
    for name in ("title", "brief", "time_zone"):
        if name in names and name in data:
            fields[name] = data[name]
    if "schedule" in names and "schedule_kind" in data:
        fields["schedule"] = schedule_from_form(data)
    if "target" in names and "target" in data:
        fields["target"] = target_from_form(data)
    if "quiet_hours" in names and ("quiet_start" in data or "quiet_end" in data):
        start, end = data.get("quiet_start", "").strip(), data.get("quiet_end", "").strip()
        fields["quiet_hours"] = {"start": start, "end": end} if start or end else None
    return fields


@dataclass
class FormValues:
    """What the form shows: a check-in's, a proposal's or a new one's values (or what the owner typed)."""

    title: str = ""
    brief: str = ""
    schedule_kind: str = ScheduleKind.DAILY
    at_time: str = "09:00"
    at_datetime: str = ""
    days: list[str] = field(default_factory=list)
    n: object = 2
    target: str = TargetKind.NEW_CHAT
    conversation_id: str = ""
    time_zone: str = "UTC"
    quiet_start: str = ""
    quiet_end: str = ""


def values_from_schedule(values: FormValues, schedule: dict) -> None:
    values.schedule_kind = schedule.get("kind", ScheduleKind.DAILY)
    at = str(schedule.get("at", ""))
    if values.schedule_kind in DATE_TIME_KINDS:
        values.at_datetime, values.at_time = at, at[11:16] or values.at_time
    else:
        values.at_time = at
    values.days = list(schedule.get("days") or [])
    values.n = schedule.get("n") or values.n


def check_in_values(check_in: CheckIn) -> FormValues:
    values = FormValues(
        title=check_in.title, brief=check_in.brief, target=check_in.target_kind,
        conversation_id=str(check_in.conversation_id or ""), time_zone=check_in.time_zone,
        quiet_start=check_in.quiet_start.strftime("%H:%M") if check_in.quiet_start else "",
        quiet_end=check_in.quiet_end.strftime("%H:%M") if check_in.quiet_end else "",
    )
    values_from_schedule(values, check_in_schedule(check_in))
    return values


def posted_values(data: QueryDict, base: FormValues) -> FormValues:
    """The form as the owner sent it (shown again with the error, so nothing typed is lost)."""
    values = FormValues(**vars(base))
    for name in ("title", "brief", "schedule_kind", "at_time", "at_datetime", "n", "target", "conversation_id",
                 "time_zone", "quiet_start", "quiet_end"):
        if name in data:
            setattr(values, name, data[name])
    if "schedule_kind" in data:
        values.days = data.getlist("days")
    return values


def check_in_schedule(check_in: CheckIn) -> dict:
    """A check-in's schedule in the API's shape."""
    schedule: dict = {"kind": check_in.schedule_kind, "at": check_in.schedule_at}
    if check_in.schedule_days:
        schedule["days"] = list(check_in.schedule_days)
    if check_in.schedule_n is not None:
        schedule["n"] = check_in.schedule_n
    return schedule


def local_words(instant: datetime | None, zone_name: str) -> str:
    """An instant as the owner reads it in a zone: "Fri 5 Dec 2026, 09:00" ("" for none)."""
    if instant is None:
        return ""
    local = instant.astimezone(ZoneInfo(zone_name))
    return f"{local:%a %-d %b %Y}, {local:%H:%M}"


def _day_and_time(at: str) -> str:
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return at
    return f"{moment:%a %-d %b %Y} at {moment:%H:%M}"


def schedule_words(schedule: dict) -> str:
    """"Daily at 09:00", "Mondays and Thursdays at 18:30", "Every 3 days at 08:00, from Fri 5 Dec 2026", …"""
    kind, at = schedule.get("kind"), str(schedule.get("at", ""))
    if kind == ScheduleKind.ONCE:
        return f"Once, {_day_and_time(at)}"
    if kind == ScheduleKind.DAILY:
        return f"Daily at {at}"
    if kind == ScheduleKind.WEEKDAYS:
        days = [f"{DAY_NAMES.get(day, day)}s" for day in WEEKDAYS if day in (schedule.get("days") or [])]
        listed = ", ".join(days[:-1]) + f" and {days[-1]}" if len(days) > 1 else "".join(days)
        return f"{listed} at {at}"
    if kind == ScheduleKind.EVERY_N_DAYS:
        n = schedule.get("n")
        every = "Every day" if n == 1 else f"Every {n} days"
        return f"{every} at {at[11:16]}, from {_day_and_time(at).split(' at ')[0]}"
    return at
