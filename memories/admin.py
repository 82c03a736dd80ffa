"""Django admin for memories and snapshots. Every write goes through the services,
so the refresh rules hold here too."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from elion.base.errors import ServiceError
from memories.models import ConversationMemorySnapshot, Memory, SnapshotMembership
from memories.services import memory_writes as services
from memories.services.snapshots import snapshot_refresh


class MemoryAdminForm(forms.ModelForm):
    """Runs the services' checks so bad input is a form error, not a failed save."""

    class Meta:
        model = Memory
        fields = ("text", "category", "importance", "active")

    def clean(self) -> dict[str, object]:
        cleaned = super().clean()
        for name, check in (("text", services.clean_text), ("importance", services.clean_importance)):
            if name in cleaned:
                try:
                    cleaned[name] = check(cleaned[name])
                except ServiceError as exc:
                    self.add_error(name, exc.detail)
        return cleaned


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = MemoryAdminForm
    list_display = ("position", "short_text", "category", "importance", "active", "updated_at")
    list_display_links = ("short_text",)
    list_filter = ("category", "importance", "active")
    search_fields = ("text",)
    ordering = ("position", "id")
    fields = ("text", "category", "importance", "active", "position", "created_at", "updated_at")
    readonly_fields = ("position", "created_at", "updated_at")

    @admin.display(description="text")
    def short_text(self, obj: Memory) -> str:
        return obj.text[:80]

    def save_model(self, request: HttpRequest, obj: Memory, form: forms.ModelForm, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in ("text", "category", "importance", "active")}
        if change:
            changes = {name: value for name, value in fields.items() if name in form.changed_data}
            saved = services.memory_edit(memory_id=obj.pk, changes=changes)
        else:
            saved = services.memory_add(**fields)
        obj.pk, obj.position = saved.pk, saved.position

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        services.memory_delete(memory_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        for pk in list(queryset.values_list("pk", flat=True)):
            services.memory_delete(memory_id=pk)


class SnapshotMembershipInline(admin.TabularInline):
    model = SnapshotMembership
    fk_name = "conversation"
    fields = ("memory",)
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ConversationMemorySnapshot)
class ConversationMemorySnapshotAdmin(admin.ModelAdmin):
    list_display = ("conversation", "provenance", "captured_at", "refreshed_at")
    list_filter = ("provenance",)
    readonly_fields = ("conversation", "provenance", "captured_at", "refreshed_at", "members")
    actions = ["refresh_memory"]

    @admin.display(description="memories held")
    def members(self, obj: ConversationMemorySnapshot) -> str:
        rows = SnapshotMembership.objects.filter(conversation_id=obj.conversation_id).select_related("memory")
        return "; ".join(f"#{row.memory_id} {row.memory.text[:40]}" for row in rows) or "(empty snapshot)"

    @admin.action(description="Refresh memory (replace with the current memory set)")
    def refresh_memory(self, request: HttpRequest, queryset: QuerySet[ConversationMemorySnapshot]) -> None:
        ids = list(queryset.values_list("conversation_id", flat=True))
        for conversation_id in ids:
            snapshot_refresh(conversation_id)
        self.message_user(request, f"Refreshed {len(ids)} snapshot(s).", messages.SUCCESS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Snapshots are captured at conversation creation, never hand-made.
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ConversationMemorySnapshot | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ConversationMemorySnapshot | None = None) -> bool:
        return False
