"""A check-in as the API answers it (`check_in_repr`), and the schema's shapes (drf-spectacular).

Shape only: the values are checked by `check_ins.services.inputs`, which answers 400 with a code.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from check_ins.models import CheckIn, ScheduleKind, TargetKind


def check_in_repr(check_in: CheckIn) -> dict:
    """`{"id", "title", "brief", "schedule", "time_zone", "target", "quiet_hours", "enabled", "paused_reason",
    "next_run_at", "last_run_at"}` (docs/api.md "Check-ins")."""
    schedule: dict = {"kind": check_in.schedule_kind, "at": check_in.schedule_at}
    if check_in.schedule_kind == ScheduleKind.WEEKDAYS:
        schedule["days"] = list(check_in.schedule_days)
    if check_in.schedule_kind == ScheduleKind.EVERY_N_DAYS:
        schedule["n"] = check_in.schedule_n
    target: dict = {"kind": check_in.target_kind}
    if check_in.target_kind == TargetKind.CONVERSATION:
        target["conversation_id"] = str(check_in.conversation_id) if check_in.conversation_id else None
    quiet = None
    if check_in.quiet_start is not None and check_in.quiet_end is not None:
        quiet = {"start": check_in.quiet_start.strftime("%H:%M"), "end": check_in.quiet_end.strftime("%H:%M")}
    return {
        "id": check_in.pk,
        "title": check_in.title,
        "brief": check_in.brief,
        "schedule": schedule,
        "time_zone": check_in.time_zone,
        "target": target,
        "quiet_hours": quiet,
        "enabled": check_in.enabled,
        "paused_reason": check_in.paused_reason,
        "next_run_at": check_in.next_run_at.isoformat() if check_in.next_run_at else None,
        "last_run_at": check_in.last_run_at.isoformat() if check_in.last_run_at else None,
    }


class ScheduleSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ScheduleKind.values)
    at = serializers.CharField(help_text='"HH:MM" (daily, weekdays) or "YYYY-MM-DDTHH:MM" (once; every_n_days: the '
                               "first run), a wall time in the check-in's time_zone")
    days = serializers.ListField(child=serializers.ChoiceField(choices=["mon", "tue", "wed", "thu", "fri", "sat", "sun"]),
                                 required=False, help_text="weekdays only")
    n = serializers.IntegerField(min_value=1, max_value=365, required=False, help_text="every_n_days only")


class TargetSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=TargetKind.values)
    conversation_id = serializers.UUIDField(required=False, allow_null=True, help_text="conversation only")


class QuietHoursSerializer(serializers.Serializer):
    start = serializers.CharField(help_text="HH:MM")
    end = serializers.CharField(help_text="HH:MM; before start: the quiet hours span midnight")


class CheckInSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    brief = serializers.CharField()
    schedule = ScheduleSerializer()
    time_zone = serializers.CharField()
    target = TargetSerializer()
    quiet_hours = QuietHoursSerializer(allow_null=True)
    enabled = serializers.BooleanField()
    paused_reason = serializers.CharField(allow_blank=True)
    next_run_at = serializers.DateTimeField(allow_null=True)
    last_run_at = serializers.DateTimeField(allow_null=True)


class CheckInListSerializer(serializers.Serializer):
    results = CheckInSerializer(many=True)


@extend_schema_field(ScheduleSerializer)
class _ScheduleIn(serializers.JSONField):
    """Passed on as sent; `check_ins.services.inputs.schedule_clean` checks it (400 `invalid_schedule`)."""


@extend_schema_field(TargetSerializer)
class _TargetIn(serializers.JSONField):
    """Passed on as sent; checked by `target_clean` (400 `invalid_target`)."""


@extend_schema_field(QuietHoursSerializer)
class _QuietHoursIn(serializers.JSONField):
    """Passed on as sent; checked by `quiet_hours_clean` (400 `invalid_quiet_hours`)."""


@extend_schema_field(OpenApiTypes.STR)
class _TextIn(serializers.JSONField):
    """Passed on as sent; the service checks it (400 with the field's code)."""


@extend_schema_field(OpenApiTypes.BOOL)
class _FlagIn(serializers.JSONField):
    """true or false only; the service checks it (400 `invalid_enabled`)."""


class CheckInWriteSerializer(serializers.Serializer):
    """POST (title, brief, schedule and target required) and PATCH (any of them)."""

    title = _TextIn(required=False)
    brief = _TextIn(required=False)
    schedule = _ScheduleIn(required=False)
    time_zone = _TextIn(required=False, help_text="IANA name; default: Settings' time_zone")
    target = _TargetIn(required=False)
    quiet_hours = _QuietHoursIn(required=False, allow_null=True)
    enabled = _FlagIn(required=False)


class CheckInRunSerializer(serializers.Serializer):
    conversation_id = serializers.UUIDField()
    message_id = serializers.UUIDField(help_text="The check-in's reply")
