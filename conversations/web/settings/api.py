"""HTTP API for the assistant settings: `GET|PATCH /api/settings/` (docs/api.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.rules.prompt_refresh import refreshed_after_commit
from conversations.services.settings_writes import assistant_settings_update
from conversations.web import schema as docs
from conversations.web import serializers as s
from elion.base.api_errors import ErrorSerializer
from elion.base.assistant_settings import assistant_settings_get
from operations.backup.scheduling import BACKUP_SETTINGS, backup_settings_update, schedule_sync


class SettingsView(APIView):
    @extend_schema(responses=docs.SettingsSerializer)
    def get(self, request: Request) -> Response:
        return Response(s.settings_repr(assistant_settings_get()))

    @extend_schema(request=s.SettingsPatchSerializer, responses={200: docs.SettingsSerializer, 400: ErrorSerializer})
    def patch(self, request: Request) -> Response:
        changes = s.validated(s.SettingsPatchSerializer, request.data)
        backup = {name: changes.pop(name) for name in BACKUP_SETTINGS if name in changes}
        # One save: a refused setting leaves every other as it was. The prompts it makes stale are rebuilt
        # after it commits, never inside its transaction (which would hold every write back meanwhile).
        with refreshed_after_commit():
            if backup:
                backup_settings_update(**backup)  # no prompt reads them: nothing is rebuilt for these
            row = assistant_settings_update(**changes) if changes or not backup else assistant_settings_get()
            if "time_zone" in changes:
                schedule_sync(row)  # the backup hour is on the owner's clock
        return Response(s.settings_repr(row))
