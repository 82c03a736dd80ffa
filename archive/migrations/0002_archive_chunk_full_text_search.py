"""Full-text search over archive chunks, per database (see archive/services/search.py).

SQLite: an external-content FTS5 table over `search_text`, kept in step with
the chunk table by triggers, so every write path (ORM, admin, bulk create,
raw SQL) updates the index. PostgreSQL: a stored generated tsvector column
(`search_vector`, unknown to the ORM, kept by the database itself) with a GIN
index; matching a stored vector stays cheap even when the planner tests rows
one by one along the primary key.

On SQLite a later migration that alters `archive_archivechunk` rebuilds the
table, which drops these triggers: such a migration must create them again
(and `rebuild` the FTS table).
"""

from django.db import migrations

from elion.base.db.vendor_sql import vendor_statements

SQLITE_FORWARD = [
    """CREATE VIRTUAL TABLE archive_chunk_fts USING fts5(
        search_text,
        content='archive_archivechunk',
        content_rowid='id',
        tokenize="unicode61 remove_diacritics 0"
    )""",
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
    # Index rows that already exist (none on a fresh database).
    "INSERT INTO archive_chunk_fts(archive_chunk_fts) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS archive_chunk_fts_update",
    "DROP TRIGGER IF EXISTS archive_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS archive_chunk_fts_insert",
    "DROP TABLE IF EXISTS archive_chunk_fts",
]
POSTGRES_FORWARD = [
    "ALTER TABLE archive_archivechunk ADD COLUMN search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED",
    "CREATE INDEX archive_chunk_search_gin ON archive_archivechunk USING gin (search_vector)",
]
POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS archive_chunk_search_gin",
    "ALTER TABLE archive_archivechunk DROP COLUMN IF EXISTS search_vector",
]


class Migration(migrations.Migration):
    dependencies = [("archive", "0001_archive_documents_chunks_library")]

    operations = [
        migrations.RunPython(
            vendor_statements({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            vendor_statements({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
