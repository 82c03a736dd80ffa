"""A check-in's fields from outside (an API body, a proposal's edits), checked: InvalidInput with a code
and a sentence for anything wrong, so no input reaches the database or the schedule arithmetic malformed.

Shapes (docs/check_ins.md, docs/pending/issue-44-core.md):

* `schedule`: `{"kind": "once", "at": "YYYY-MM-DDTHH:MM"}`, `{"kind": "daily", "at": "HH:MM"}`,
  `{"kind": "weekdays", "at": "HH:MM", "days": ["mon", …]}`,
  `{"kind": "every_n_days", "at": "YYYY-MM-DDTHH:MM" (the first run), "n": 1…365}`; wall times in the
  check-in's `time_zone`.
* `target`: `{"kind": "new_chat"}` or `{"kind": "conversation", "conversation_id": uuid}`.
* `quiet_hours`: `{"start": "HH:MM", "end": "HH:MM"}` or null.
"""

from __future__ import annotations

from datetime import datetime, time

from check_ins.models import ScheduleKind, TargetKind
from check_ins.services.schedule_policy import WEEKDAYS
from elion.base.errors import InvalidInput

TITLE_MAX = 200
BRIEF_MAX = 4000
N_MAX = 365


def _text(value: object, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{name} cannot be empty.", code=f"invalid_{name}")
    value = value.strip()
    if len(value) > limit:
        raise InvalidInput(f"{name} can be at most {limit:,} characters.", code=f"invalid_{name}")
    return value


def title_clean(value: object) -> str:
    return _text(value, "title", TITLE_MAX)


def brief_clean(value: object) -> str:
    return _text(value, "brief", BRIEF_MAX)


def _wall_time(value: object, what: str, code: str) -> time:
    if isinstance(value, str) and len(value) == 5 and value[2] == ":":
        try:
            return time.fromisoformat(value)
        except ValueError:
            pass
    raise InvalidInput(f"{what} must be a wall time HH:MM (00:00 to 23:59).", code=code)


def _wall_datetime(value: object, what: str) -> datetime:
    if isinstance(value, str) and len(value) == 16 and value[10] == "T":
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    raise InvalidInput(f"{what} must be a wall date and time YYYY-MM-DDTHH:MM.", code="invalid_schedule")


def schedule_clean(value: object) -> dict:
    """The schedule's columns (`schedule_kind`, `schedule_at`, `schedule_days`, `schedule_n`)."""
    if not isinstance(value, dict):
        raise InvalidInput("schedule must be an object with a kind and an at.", code="invalid_schedule")
    kind = value.get("kind")
    if kind not in ScheduleKind.values:
        raise InvalidInput(f"schedule.kind must be one of {', '.join(ScheduleKind.values)}.", code="invalid_schedule")
    unknown = set(value) - {"kind", "at", "days", "n"}
    if unknown:
        raise InvalidInput(f"Unknown schedule fields: {', '.join(sorted(map(str, unknown)))}.", code="invalid_schedule")
    at = value.get("at")
    columns: dict = {"schedule_kind": kind, "schedule_days": [], "schedule_n": None}
    if kind in (ScheduleKind.ONCE, ScheduleKind.EVERY_N_DAYS):
        columns["schedule_at"] = _wall_datetime(at, "schedule.at").isoformat(timespec="minutes")
    else:
        columns["schedule_at"] = _wall_time(at, "schedule.at", "invalid_schedule").isoformat(timespec="minutes")
    if kind == ScheduleKind.WEEKDAYS:
        days = value.get("days")
        if not isinstance(days, list) or not days or not all(isinstance(d, str) and d in WEEKDAYS for d in days):
            raise InvalidInput(
                f"schedule.days must list one or more of {', '.join(WEEKDAYS)}.", code="invalid_schedule"
            )
        columns["schedule_days"] = [d for d in WEEKDAYS if d in days]
    elif "days" in value:
        raise InvalidInput("schedule.days belongs to a weekdays schedule only.", code="invalid_schedule")
    if kind == ScheduleKind.EVERY_N_DAYS:
        n = value.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= N_MAX:
            raise InvalidInput(f"schedule.n must be a whole number from 1 to {N_MAX}.", code="invalid_schedule")
        columns["schedule_n"] = n
    elif "n" in value:
        raise InvalidInput("schedule.n belongs to an every_n_days schedule only.", code="invalid_schedule")
    return columns


def target_clean(value: object) -> tuple[str, str | None]:
    """(target kind, the conversation id as given or None); the conversation itself is the service's."""
    if not isinstance(value, dict) or value.get("kind") not in TargetKind.values:
        raise InvalidInput(
            f"target must be an object whose kind is one of {', '.join(TargetKind.values)}.", code="invalid_target"
        )
    unknown = set(value) - {"kind", "conversation_id"}
    if unknown:
        raise InvalidInput(f"Unknown target fields: {', '.join(sorted(map(str, unknown)))}.", code="invalid_target")
    if value["kind"] == TargetKind.NEW_CHAT:
        if value.get("conversation_id") is not None:
            raise InvalidInput("A new_chat target names no conversation.", code="invalid_target")
        return TargetKind.NEW_CHAT, None
    conversation_id = value.get("conversation_id")
    if not isinstance(conversation_id, str):
        raise InvalidInput("A conversation target needs its conversation_id.", code="invalid_target")
    return TargetKind.CONVERSATION, conversation_id


def quiet_hours_clean(value: object) -> tuple[time | None, time | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict) or set(value) != {"start", "end"}:
        raise InvalidInput("quiet_hours must be null or {\"start\": \"HH:MM\", \"end\": \"HH:MM\"}.",
                           code="invalid_quiet_hours")
    start = _wall_time(value["start"], "quiet_hours.start", "invalid_quiet_hours")
    end = _wall_time(value["end"], "quiet_hours.end", "invalid_quiet_hours")
    if start == end:
        raise InvalidInput("quiet_hours.start and quiet_hours.end must differ.", code="invalid_quiet_hours")
    return start, end


def enabled_clean(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput("enabled must be true or false.", code="invalid_enabled")
    return value
