"""Django admin for the archive and the Library.

Adding goes through the same services as the page and the API (hash dedupe,
chunking, text checks), so the admin's add form is an upload form; stored
documents and chunks are read-only here.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from archive.models import ArchiveChunk, ArchiveCollection, ArchiveDocument, LibraryFile
from archive.services import documents as services
from archive.services import library
from elion.base.errors import ServiceError


class DocumentUploadForm(forms.ModelForm):
    upload = forms.FileField(required=False, help_text="Text, Markdown or an Elion conversation export.")
    pasted_text = forms.CharField(required=False, widget=forms.Textarea, label="…or paste text")
    collection = forms.ChoiceField(choices=ArchiveCollection.choices)
    title = forms.CharField(required=False, max_length=300)

    class Meta:
        model = ArchiveDocument
        fields = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.result: services.DocumentResult | None = None

    # The service validates and stores in one step (hash dedupe, chunking, one
    # transaction); running it here turns its refusals into form errors.
    def clean(self) -> dict[str, object]:
        cleaned = super().clean()
        try:
            if cleaned.get("upload"):
                self.result = services.archive_document_upload(
                    upload=cleaned["upload"], collection=cleaned.get("collection"), title=cleaned.get("title") or ""
                )
            else:
                self.result = services.archive_document_add_text(
                    text=cleaned.get("pasted_text") or "", collection=cleaned.get("collection"),
                    title=cleaned.get("title") or "",
                )
        except ServiceError as exc:
            raise forms.ValidationError(exc.detail) from exc
        return cleaned


class ArchiveChunkInline(admin.TabularInline):
    model = ArchiveChunk
    fields = ("position", "speaker", "role", "turn", "spoken_at", "text")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ArchiveDocument)
class ArchiveDocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "collection", "source", "chunk_count", "created_at")
    list_filter = ("collection", "source")
    search_fields = ("title",)
    readonly_fields = ("title", "collection", "source", "source_name", "content_sha256", "parser_version",
                       "chunk_count", "metadata", "created_at")
    exclude = ("text",)
    inlines = [ArchiveChunkInline]

    def get_form(self, request: HttpRequest, obj: ArchiveDocument | None = None, **kwargs: object) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = DocumentUploadForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: ArchiveDocument | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("collection", "title", "upload", "pasted_text")
        return self.readonly_fields

    def get_readonly_fields(self, request: HttpRequest, obj: ArchiveDocument | None = None) -> tuple[str, ...]:
        return () if obj is None else self.readonly_fields

    def get_inlines(self, request: HttpRequest, obj: ArchiveDocument | None) -> list:
        return self.inlines if obj is not None else []

    def save_model(self, request: HttpRequest, obj: ArchiveDocument, form: forms.ModelForm, change: bool) -> None:
        # The service stored it in clean(); point the admin at the stored row.
        result = form.result
        obj.pk = result.document.pk
        if result.duplicate:
            messages.info(request, f"That content is already archived as “{result.document.title}”.")

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: list, change: bool) -> None:
        pass

    def response_add(self, request: HttpRequest, obj: ArchiveDocument, post_url_continue: str | None = None) -> HttpResponse:
        return HttpResponseRedirect("../")

    def has_change_permission(self, request: HttpRequest, obj: ArchiveDocument | None = None) -> bool:
        return obj is None


class LibraryUploadForm(forms.ModelForm):
    upload = forms.FileField(required=False, help_text="Text, Markdown, CSV or PDF.")
    pasted_text = forms.CharField(required=False, widget=forms.Textarea, label="…or paste text")
    name = forms.CharField(required=False, max_length=300)

    class Meta:
        model = LibraryFile
        fields = ()

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.result: library.LibraryResult | None = None

    def clean(self) -> dict[str, object]:
        cleaned = super().clean()
        try:
            if cleaned.get("upload"):
                self.result = library.library_file_upload(upload=cleaned["upload"], name=cleaned.get("name") or "")
            else:
                self.result = library.library_file_add_text(
                    name=cleaned.get("name") or "", text=cleaned.get("pasted_text") or ""
                )
        except ServiceError as exc:
            raise forms.ValidationError(exc.detail) from exc
        return cleaned


@admin.register(LibraryFile)
class LibraryFileAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "size", "created_at")
    list_filter = ("kind",)
    search_fields = ("name",)
    readonly_fields = ("name", "kind", "sha256", "size", "created_at", "text")

    def get_form(self, request: HttpRequest, obj: LibraryFile | None = None, **kwargs: object) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = LibraryUploadForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: LibraryFile | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("name", "upload", "pasted_text")
        return self.readonly_fields

    def get_readonly_fields(self, request: HttpRequest, obj: LibraryFile | None = None) -> tuple[str, ...]:
        return () if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: LibraryFile, form: forms.ModelForm, change: bool) -> None:
        result = form.result
        obj.pk = result.file.pk
        if result.duplicate:
            messages.info(request, f"That file is already in the Library as “{result.file.name}”.")

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: list, change: bool) -> None:
        pass

    def response_add(self, request: HttpRequest, obj: LibraryFile, post_url_continue: str | None = None) -> HttpResponse:
        return HttpResponseRedirect("../")

    def has_change_permission(self, request: HttpRequest, obj: LibraryFile | None = None) -> bool:
        return obj is None
