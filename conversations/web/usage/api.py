"""HTTP API for provider-reported usage: `GET /api/usage/?days=N&months=N`.

Thin: the totals, the periods and the cost rule live in `operations.usage`.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from elion.base.api_errors import ErrorSerializer
from operations import usage


class UsageFiguresSerializer(serializers.Serializer):
    replies = serializers.IntegerField(help_text="Assistant replies with provider-reported usage in the period.")
    input_tokens = serializers.IntegerField(allow_null=True, help_text="Includes cached input tokens.")
    cached_input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True, help_text="Includes reasoning tokens.")
    reasoning_tokens = serializers.IntegerField(allow_null=True)
    estimated_cost_usd = serializers.DecimalField(
        max_digits=20, decimal_places=6, allow_null=True,
        help_text="(input - cached) x input price + cached x cached price + output x output price; null without prices.",
    )


class UsageDaySerializer(UsageFiguresSerializer):
    date = serializers.DateField()


class UsageMonthSerializer(UsageFiguresSerializer):
    month = serializers.RegexField(r"^\d{4}-\d{2}$")


PRICE = r"^\d+(\.\d+)?$"


class UsagePricesSerializer(serializers.Serializer):
    """USD per million tokens, as decimal strings (`ELION_PRICE_*_PER_MTOK`)."""

    input_per_mtok = serializers.RegexField(PRICE)
    cached_input_per_mtok = serializers.RegexField(PRICE)
    output_per_mtok = serializers.RegexField(PRICE)


class AudioUsageFiguresSerializer(serializers.Serializer):
    """Transcriptions and speech the provider made in the period (`operations.audio_usage`); a replay from a
    stored blob and the offline demo are not counted."""

    transcriptions = serializers.IntegerField()
    speech_requests = serializers.IntegerField()
    transcription_seconds = serializers.FloatField(allow_null=True, help_text="Audio transcribed.")
    transcription_input_tokens = serializers.IntegerField(
        allow_null=True, help_text="As the provider reported them (the gpt-4o transcribe models).")
    transcription_output_tokens = serializers.IntegerField(allow_null=True)
    speech_characters = serializers.IntegerField(
        allow_null=True, help_text="Characters sent: audio.speech.create reports no usage.")
    speech_seconds = serializers.FloatField(allow_null=True, help_text="Audio made.")
    unpriced_calls = serializers.IntegerField(help_text="Calls the prices set cannot estimate.")
    estimated_cost_usd = serializers.DecimalField(
        max_digits=20, decimal_places=6, allow_null=True,
        help_text="The sum of the calls' estimates; null when any call in the period has no price.",
    )


class AudioUsageDaySerializer(AudioUsageFiguresSerializer):
    date = serializers.DateField()


class AudioUsageMonthSerializer(AudioUsageFiguresSerializer):
    month = serializers.RegexField(r"^\d{4}-\d{2}$")


class AudioPricesSerializer(serializers.Serializer):
    """USD as decimal strings, null where unset (`ELION_PRICE_TRANSCRIBE_*`, `ELION_PRICE_SPEECH_*`)."""

    transcribe_audio_input_per_mtok = serializers.RegexField(PRICE, allow_null=True)
    transcribe_text_input_per_mtok = serializers.RegexField(PRICE, allow_null=True)
    transcribe_output_per_mtok = serializers.RegexField(PRICE, allow_null=True)
    transcribe_per_minute = serializers.RegexField(PRICE, allow_null=True)
    speech_per_minute = serializers.RegexField(PRICE, allow_null=True)
    speech_per_mchar = serializers.RegexField(PRICE, allow_null=True)


class AudioUsageSerializer(serializers.Serializer):
    days = AudioUsageDaySerializer(many=True)
    months = AudioUsageMonthSerializer(many=True)
    prices = AudioPricesSerializer()


class UsageReportSerializer(serializers.Serializer):
    days = UsageDaySerializer(many=True)
    months = UsageMonthSerializer(many=True)
    prices = UsagePricesSerializer(allow_null=True)
    currency = serializers.ChoiceField(choices=["USD"])
    time_zone = serializers.CharField()
    audio = AudioUsageSerializer(help_text="Transcription and speech, per day and per month (issue 43).")


class UsageQuerySerializer(serializers.Serializer):
    """Documents the query; `operations.usage.period_count` checks it (400 `invalid_days|invalid_months`)."""

    days = serializers.IntegerField(
        required=False, min_value=1, max_value=usage.DAYS_MAX,
        help_text=f"Calendar days, today's included (default {usage.DAYS_DEFAULT}).",
    )
    months = serializers.IntegerField(
        required=False, min_value=1, max_value=usage.MONTHS_MAX,
        help_text=f"Calendar months, this one included (default {usage.MONTHS_DEFAULT}).",
    )


class UsageView(APIView):
    @extend_schema(
        operation_id="usage_retrieve",
        parameters=[UsageQuerySerializer],
        responses={200: UsageReportSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        days = usage.period_count(
            request.query_params.get("days"), name="days", default=usage.DAYS_DEFAULT, maximum=usage.DAYS_MAX
        )
        months = usage.period_count(
            request.query_params.get("months"), name="months", default=usage.MONTHS_DEFAULT, maximum=usage.MONTHS_MAX
        )
        return Response(usage.usage_report(days=days, months=months).as_dict())
