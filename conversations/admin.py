from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from conversations.services.threads.thread_writes import (
    conversation_create,
    conversation_update,
    folder_create,
    folder_delete,
    folder_update,
)
from conversations.services.visibility.transitions import (
    conversation_restore,
    conversation_shield_release,
    conversation_trash,
)
from elion.base.errors import ServiceError
from transcript.models import Attachment, Conversation, Folder, Message


@admin.register(Folder)
class FolderAdmin(admin.ModelAdmin):
    """Hiding, unhiding and deleting go through the visibility services, so
    conversations are shielded and stored prompts refreshed here too."""

    list_display = ("name", "hidden", "created_at")

    def save_model(self, request: HttpRequest, obj: Folder, form: forms.ModelForm, change: bool) -> None:
        if not change:
            saved = folder_create(name=obj.name, hidden=obj.hidden)
            obj.pk = saved.pk
            return
        changes = {name: form.cleaned_data[name] for name in ("name", "hidden") if name in form.changed_data}
        folder_update(folder_id=obj.pk, changes=changes)

    def delete_model(self, request: HttpRequest, obj: Folder) -> None:
        folder_delete(folder_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Folder]) -> None:
        for pk in list(queryset.values_list("pk", flat=True)):
            folder_delete(folder_id=pk)


class MessageInline(admin.TabularInline):
    model = Message
    fk_name = "conversation"
    fields = ("seq", "role", "kind", "status", "content", "parent")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ("seq",)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """Trash, restore, release and folder moves are visibility transitions: they
    run through `conversations.services.visibility.transitions` (actions, and `save_model` for the folder)."""

    list_display = ("display_title", "persona", "folder", "trashed", "shielded", "private", "origin", "updated_at")
    list_filter = ("persona", "trashed", "shielded", "private", "origin", "folder")
    search_fields = ("title",)
    readonly_fields = ("head", "last_seq", "origin", "trashed", "shielded", "private")
    inlines = [MessageInline]
    actions = ["trash_selected", "restore_selected", "release_shield_selected"]

    def save_model(self, request: HttpRequest, obj: Conversation, form: forms.ModelForm, change: bool) -> None:
        if not change:
            saved = conversation_create(persona=obj.persona, title=obj.title, folder_id=obj.folder_id)
            obj.pk = saved.pk
            return
        changes = {}
        if "title" in form.changed_data:
            changes["title"] = form.cleaned_data["title"]
        if "folder" in form.changed_data:
            folder = form.cleaned_data["folder"]
            changes["folder_id"] = folder.pk if folder else None
        if changes:
            conversation_update(conversation_id=obj.pk, changes=changes)
        other = [name for name in form.changed_data if name not in ("title", "folder")]
        if other:
            Conversation.objects.filter(pk=obj.pk).update(**{name: form.cleaned_data[name] for name in other})

    def _transition(self, request: HttpRequest, queryset: QuerySet[Conversation], service: Callable[..., object], done: str) -> None:
        count = 0
        for pk in list(queryset.values_list("pk", flat=True)):
            try:
                service(conversation_id=pk)
                count += 1
            except ServiceError as exc:
                self.message_user(request, f"{pk}: {exc.detail}", messages.WARNING)
        self.message_user(request, f"{count} conversation(s) {done}.")

    @admin.action(description="Move to trash")
    def trash_selected(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        self._transition(request, queryset, conversation_trash, "moved to the trash")

    @admin.action(description="Restore from trash (comes back Continuity-Shielded)")
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        self._transition(request, queryset, conversation_restore, "restored and shielded")

    @admin.action(description="Release Continuity Shield")
    def release_shield_selected(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        self._transition(request, queryset, conversation_shield_release, "released")


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "seq", "role", "kind", "status", "created_at")
    list_filter = ("role", "kind", "status")
    readonly_fields = [f.name for f in Message._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # The transcript is append-only through the send pipeline.
        return False


@admin.register(Attachment)
class AttachmentAdmin(admin.ModelAdmin):
    """Read-only: blobs and manifests change only through uploads, sends, forks and the collector."""

    list_display = ("name", "mime", "size", "sha256", "created_at", "attached_at")
    list_filter = ("kind", "mime")
    search_fields = ("name", "sha256")
    readonly_fields = [f.name for f in Attachment._meta.fields if f.name != "text"]
    exclude = ("text",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Attachment | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Attachment | None = None) -> bool:
        return False
