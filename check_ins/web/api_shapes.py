"""TEMPORARY until the core's check-ins API lands: replaced by its serializers."""

from rest_framework import serializers


class ScheduleSerializer(serializers.Serializer):
    kind = serializers.CharField()
    at = serializers.CharField()


class TargetSerializer(serializers.Serializer):
    kind = serializers.CharField()


class QuietHoursSerializer(serializers.Serializer):
    start = serializers.CharField()
    end = serializers.CharField()


class CheckInSerializer(serializers.Serializer):
    id = serializers.IntegerField()


def check_in_repr(check_in: object) -> dict:
    return {"id": check_in.pk, "title": check_in.title}
