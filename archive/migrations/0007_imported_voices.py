"""Imported voices kept apart (issue 34): what ChatGPT and Claude.ai exports brought in with the assistant
labelled by Elion's display name (the import's optional name left empty) is relabelled "ChatGPT" / "Claude",
once: each such assistant chunk's `speaker`, and the "‹name› said:" lines of the document's text, which the
importer rendered as `# title`, header lines, then "‹speaker› said:" after a blank line before every turn.

Only the default is rewritten: a speaker the owner named at import (anything but Elion's display name) is
kept, and Elion's own documents (its exports, pasted text) are not touched.
"""

from django.db import migrations

IMPORTED_ASSISTANT_NAMES = {"chatgpt": "ChatGPT", "claude": "Claude"}
DEFAULT_DISPLAY_NAME = "Elion Voicefire"


def _elion_names(apps) -> set[str]:
    AssistantSettings = apps.get_model("conversations", "AssistantSettings")
    names = {DEFAULT_DISPLAY_NAME}
    names.update(name for name in AssistantSettings.objects.values_list("display_name", flat=True) if name)
    return names


def relabel_imported_voices(apps, schema_editor):
    ArchiveDocument = apps.get_model("archive", "ArchiveDocument")
    ArchiveChunk = apps.get_model("archive", "ArchiveChunk")
    elion = _elion_names(apps)
    for source, name in IMPORTED_ASSISTANT_NAMES.items():
        for document in ArchiveDocument.objects.filter(source=source).only("pk", "text").iterator(chunk_size=200):
            chunks = ArchiveChunk.objects.filter(document_id=document.pk, role="assistant", speaker__in=elion)
            labelled = set(chunks.values_list("speaker", flat=True))
            if not labelled:
                continue
            chunks.update(speaker=name)
            text = document.text
            for old in labelled:
                text = text.replace(f"\n\n{old} said:\n", f"\n\n{name} said:\n")
            if text != document.text:
                ArchiveDocument.objects.filter(pk=document.pk).update(text=text)


class Migration(migrations.Migration):

    dependencies = [
        ("archive", "0006_import_job_offers"),
        ("conversations", "0017_search_entry_id_conversation"),
    ]

    operations = [migrations.RunPython(relabel_imported_voices, migrations.RunPython.noop)]
