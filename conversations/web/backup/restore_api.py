"""`POST /api/backups/{id}/restore/` (restore a stored backup over this instance, typed confirmation, a background
job) and `GET /api/restores/{id}/` (how far that job got). Thin: the rules are `operations.backup.restore_requests`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput
from operations.backup.restore_requests import restore_from_backup_request, restore_run_get, restore_run_repr


class RestoreRequestSerializer(serializers.Serializer):
    confirm = serializers.CharField(help_text="The word `replace` (any case): the restore replaces everything here.")
    identity = serializers.CharField(
        required=False,
        help_text="An age identity file's text (AGE-SECRET-KEY-1…) for a backup encrypted to age recipients; "
        "used for this request only, never stored.",
    )


class RestoreCountsSerializer(serializers.Serializer):
    rows = serializers.DictField(child=serializers.IntegerField())
    blobs = serializers.IntegerField()


class RestoreRunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    backup_id = serializers.UUIDField(allow_null=True)
    source = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    step = serializers.CharField(allow_null=True)
    steps = serializers.ListField(child=serializers.CharField())
    backup_holds = serializers.CharField()
    restored = RestoreCountsSerializer(allow_null=True)
    restored_words = serializers.CharField(allow_null=True)
    safety_backup = serializers.CharField(allow_null=True)
    detail = serializers.CharField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class BackupRestoreView(APIView):
    @extend_schema(
        operation_id="backups_restore", request=RestoreRequestSerializer,
        responses={202: RestoreRunSerializer, 400: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer},
    )
    def post(self, request: Request, backup_id: str) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise InvalidInput("The body must be a JSON object.", code="malformed_request")
        run = restore_from_backup_request(backup_id, body.get("confirm"), body.get("identity"))
        return Response(restore_run_repr(run), status=202)


class RestoreRunView(APIView):
    @extend_schema(operation_id="restores_retrieve", responses={200: RestoreRunSerializer, 404: ErrorSerializer})
    def get(self, request: Request, run_id: str) -> Response:
        return Response(restore_run_repr(restore_run_get(run_id)))
