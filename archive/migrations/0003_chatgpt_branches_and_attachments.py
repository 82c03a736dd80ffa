"""Imported conversations keep every branch and their images.

`ArchiveChunk.branch` marks turns of branches the owner left ("alternate");
`ArchiveAttachment` lists a document's images (content-addressed blobs).

Adding a NOT NULL column makes SQLite rebuild `archive_archivechunk`, which
drops the FTS5 triggers of 0002: they are created again here and the FTS
table rebuilt (PostgreSQL's generated `search_vector` column is untouched).
"""

import django.db.models.deletion
from django.db import migrations, models

BRANCH_CHOICES = [
    ("current", "The branch the owner last saw"),
    ("alternate", "Another branch (an edit or a regeneration)"),
]

SQLITE_TRIGGERS = [
    "DROP TRIGGER IF EXISTS archive_chunk_fts_insert",
    "DROP TRIGGER IF EXISTS archive_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS archive_chunk_fts_update",
    """CREATE TRIGGER archive_chunk_fts_insert AFTER INSERT ON archive_archivechunk BEGIN
        INSERT INTO archive_chunk_fts(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    """CREATE TRIGGER archive_chunk_fts_delete AFTER DELETE ON archive_archivechunk BEGIN
        INSERT INTO archive_chunk_fts(archive_chunk_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    END""",
    """CREATE TRIGGER archive_chunk_fts_update AFTER UPDATE ON archive_archivechunk BEGIN
        INSERT INTO archive_chunk_fts(archive_chunk_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
        INSERT INTO archive_chunk_fts(rowid, search_text) VALUES (new.id, new.search_text);
    END""",
    "INSERT INTO archive_chunk_fts(archive_chunk_fts) VALUES ('rebuild')",
]


def fts_triggers_recreate(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("archive", "0002_archive_chunk_full_text_search")]

    operations = [
        # Each direction recreates the triggers after the column change that drops
        # them: forwards after AddField, backwards (removing the column) here.
        migrations.RunPython(migrations.RunPython.noop, fts_triggers_recreate),
        migrations.AddField(
            model_name="archivechunk",
            name="branch",
            field=models.CharField(choices=BRANCH_CHOICES, default="current", max_length=10),
        ),
        migrations.RunPython(fts_triggers_recreate, migrations.RunPython.noop),
        migrations.CreateModel(
            name="ArchiveAttachment",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("position", models.PositiveIntegerField()),
                ("sha256", models.CharField(max_length=64)),
                ("name", models.CharField(max_length=300)),
                ("mime", models.CharField(max_length=100)),
                ("size", models.PositiveBigIntegerField()),
                ("turn", models.PositiveIntegerField(blank=True, null=True)),
                ("branch", models.CharField(choices=BRANCH_CHOICES, default="current", max_length=10)),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="attachments",
                        to="archive.archivedocument",
                    ),
                ),
            ],
            options={
                "ordering": ["document", "position"],
                "constraints": [
                    models.UniqueConstraint(fields=("document", "position"), name="archive_attachment_position_unique"),
                    models.UniqueConstraint(fields=("document", "sha256"), name="archive_attachment_blob_unique"),
                ],
            },
        ),
    ]
