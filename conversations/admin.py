from django.contrib import admin

from conversations.models import AssistantSettings, Conversation, Folder, Message


@admin.register(AssistantSettings)
class AssistantSettingsAdmin(admin.ModelAdmin):
    list_display = ("display_name", "owner_name", "personality", "archive_access", "web_search", "updated_at")

    def save_model(self, request, obj, form, change):
        # Settings saves go through the service so stored prompts are rebuilt.
        from conversations.settings_service import assistant_settings_update

        assistant_settings_update(**{name: form.cleaned_data[name] for name in form.changed_data})


@admin.register(Folder)
class FolderAdmin(admin.ModelAdmin):
    list_display = ("name", "hidden", "created_at")


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
    list_display = ("display_title", "persona", "folder", "trashed", "shielded", "origin", "updated_at")
    list_filter = ("persona", "trashed", "shielded", "origin", "folder")
    search_fields = ("title",)
    readonly_fields = ("head", "last_seq", "origin")
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "seq", "role", "kind", "status", "created_at")
    list_filter = ("role", "kind", "status")
    readonly_fields = [f.name for f in Message._meta.fields]

    def has_add_permission(self, request):
        # The transcript is append-only through the send pipeline.
        return False
