"""The owner's settings and Character Studio's characters in the admin (`/admin/elion/…`): every write goes
through the conversations services, so stored prompts are rebuilt here too. The conversations app's admin
pages until issue 45, when the rows moved to `elion.models`."""

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from conversations.services import characters
from conversations.services.characters import clean_character_fields
from conversations.services.settings_writes import assistant_settings_update
from elion.base.errors import ServiceError
from elion.models import AssistantSettings, Character


@admin.register(AssistantSettings)
class AssistantSettingsAdmin(admin.ModelAdmin):
    list_display = ("display_name", "owner_name", "personality", "archive_access", "web_search", "updated_at")

    def save_model(self, request: HttpRequest, obj: AssistantSettings, form: forms.ModelForm, change: bool) -> None:
        # Settings saves go through the service so stored prompts are rebuilt.

        assistant_settings_update(**{name: form.cleaned_data[name] for name in form.changed_data})


class CharacterAdminForm(forms.ModelForm):
    """Runs the service's checks so bad input is a form error, not a failed save."""

    class Meta:
        model = Character
        fields = ("name", "description", "image_guidance")

    def clean(self) -> dict[str, object]:
        cleaned = super().clean()
        try:
            clean_character_fields({k: cleaned.get(k) or "" for k in self.Meta.fields}, creating=True)
        except ServiceError as exc:
            raise forms.ValidationError(exc.detail) from exc
        return cleaned


@admin.register(Character)
class CharacterAdmin(admin.ModelAdmin):
    """Character Studio in the admin: every write goes through the services, so
    stored prompts are rebuilt here too."""

    form = CharacterAdminForm
    list_display = ("name", "updated_at")
    search_fields = ("name",)

    def save_model(self, request: HttpRequest, obj: Character, form: forms.ModelForm, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in ("name", "description", "image_guidance")}
        if change:
            saved = characters.character_edit(character_id=obj.pk, changes=fields)
        else:
            saved = characters.character_create(**fields)
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Character) -> None:
        characters.character_delete(character_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Character]) -> None:
        for pk in list(queryset.values_list("pk", flat=True)):
            characters.character_delete(character_id=pk)
