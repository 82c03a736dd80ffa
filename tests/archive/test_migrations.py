"""Migration 0003 (branches and attachments) keeps SQLite's full-text index whole.

Adding the NOT NULL `branch` column makes SQLite rebuild the chunk table, which drops the FTS5
triggers of 0002; 0003 recreates them and rebuilds the index. Run on a throwaway SQLite database
in a subprocess (`manage.py migrate`), never the test database. (PostgreSQL adds the column in
place; its generated `search_vector` column is untouched, and every search test runs on it.)
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from archive.services.search import search_text_for

ROOT = Path(__file__).resolve().parents[2]

# Each test migrates a throwaway database in `manage.py` subprocesses: under CI's load a whole `migrate` can pass
# the suite's 120 s timeout (tests/conversations/test_migrations.py did once).
pytestmark = pytest.mark.timeout(600)


def manage(data_dir: Path, *args: str) -> None:
    env = {**os.environ, "ELION_DATA_DIR": str(data_dir)}
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", *args, "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)


def chunk_add(db: sqlite3.Connection, document_id: int, text: str) -> None:
    db.execute(
        "INSERT INTO archive_archivechunk (document_id, position, speaker, role, turn, spoken_at, text, search_text"
        + (", branch" if "branch" in columns(db) else "") + ") VALUES (?, 1, '', '', NULL, NULL, ?, ?"
        + (", 'current'" if "branch" in columns(db) else "") + ")",
        (document_id, text, search_text_for(text)),
    )
    db.commit()


def columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(archive_archivechunk)")}


def document_add(db: sqlite3.Connection, title: str, sha: str) -> int:
    cursor = db.execute(
        "INSERT INTO archive_archivedocument (title, collection, source, source_name, content_sha256, text, "
        "parser_version, metadata, chunk_count, created_at) VALUES (?, 'papers', 'text', '', ?, ?, '', '{}', 1, "
        "'2026-12-01 00:00:00')",
        (title, sha, title),
    )
    db.commit()
    return cursor.lastrowid


def matches(db: sqlite3.Connection, word: str) -> list[int]:
    return [row[0] for row in db.execute("SELECT rowid FROM archive_chunk_fts WHERE archive_chunk_fts MATCH ?", (word,))]


def test_chunks_indexed_before_0003_stay_found_and_later_writes_stay_indexed(tmp_path):
    manage(tmp_path, "migrate")
    manage(tmp_path, "migrate", "archive", "0002")
    db = sqlite3.connect(tmp_path / "elion.sqlite3")
    try:
        chunk_add(db, document_add(db, "Before", "1" * 64), "lighthouse keeper")
        before = matches(db, "lighthouse")
        db.close()
        manage(tmp_path, "migrate")
        db = sqlite3.connect(tmp_path / "elion.sqlite3")
        assert "branch" in columns(db)
        assert matches(db, "lighthouse") == before and len(before) == 1
        chunk_add(db, document_add(db, "After", "2" * 64), "foghorn")
        assert len(matches(db, "foghorn")) == 1  # the insert trigger is back
        db.execute("DELETE FROM archive_archivechunk WHERE text = 'foghorn'")
        db.commit()
        assert matches(db, "foghorn") == []  # and the delete trigger
    finally:
        db.close()


def test_0006_moves_what_a_job_offers_out_of_its_counts_and_back(tmp_path):
    manage(tmp_path, "migrate", "archive", "0005")
    db = sqlite3.connect(tmp_path / "elion.sqlite3")
    result = {"conversations": 2, "messages": 7, "alternate_messages": 0, "skipped": 3, "duplicates": 0,
              "projects": 1, "custom_instructions_suggestion": None,
              "memory_suggestions": [{"text": "AUMA keeps a journal.", "category": "general"}],
              "memories_problem": None}
    try:
        db.execute(
            "INSERT INTO archive_importjob (id, kind, state, options, files, total, done, result, problems, error, "
            "runner, created_at, updated_at, finished_at) VALUES ('0f0e0d0c0b0a49088706050403020100', 'claude', "
            "'cancelled', '{}', '[]', 6, 2, ?, '[]', NULL, '', '2026-12-01 00:00:00', '2026-12-01 00:00:00', NULL)",
            (json.dumps(result),),
        )
        db.commit()
        db.close()
        manage(tmp_path, "migrate", "archive", "0006")
        db = sqlite3.connect(tmp_path / "elion.sqlite3")
        moved_result, offers = (json.loads(v) for v in db.execute("SELECT result, offers FROM archive_importjob").fetchone())
        assert moved_result == {k: result[k] for k in ("conversations", "messages", "alternate_messages", "skipped",
                                                       "duplicates", "projects")}
        assert offers == {k: result[k] for k in ("custom_instructions_suggestion", "memory_suggestions",
                                                 "memories_problem")}
        db.close()
        manage(tmp_path, "migrate", "archive", "0005")
        db = sqlite3.connect(tmp_path / "elion.sqlite3")
        assert json.loads(db.execute("SELECT result FROM archive_importjob").fetchone()[0]) == result
    finally:
        db.close()
