"""Django admin for artifacts: read-only, since versions are written only by the model's tools."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from artifacts.models import Artifact, ArtifactVersion


class ArtifactVersionInline(admin.TabularInline):
    model = ArtifactVersion
    extra = 0
    fields = ("number", "content", "conversation", "message", "tool_call_id", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Artifact | None = None) -> bool:
        return False


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ("title", "kind", "conversation", "created_at", "updated_at")
    list_filter = ("kind",)
    search_fields = ("title",)
    readonly_fields = ("title", "kind", "conversation", "message", "tool_call_id", "created_at", "updated_at")
    inlines = [ArtifactVersionInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Artifact | None = None) -> bool:
        return False
