"""Claude.ai imports in the background (`?background=true`, issue 21): the same job runner, progress,
cancel and resume as the ChatGPT import, from a multipart upload or from pieces, to the same answer as
an import at once (memory suggestions included)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django_q.models import OrmQ

from archive import tasks
from archive.models import ArchiveChunk, ArchiveDocument, ImportJob
from archive.services.importers.claude import store as claude_importer
from bench.claude_export_build import write_export_zip
from tests.archive import claude_export as export
from tests.archive.conftest import make_zip
from tests.support.import_jobs import counts, job_url
from tests.support.upload_pieces import send_in_pieces

pytestmark = pytest.mark.django_db

IMPORT = "/api/archive/import/claude/"


@pytest.fixture
def import_dir(settings, tmp_path):
    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    return settings.ELION_IMPORT_DIR


@pytest.fixture
def start(client, django_capture_on_commit_callbacks, import_dir):
    """POST a Claude.ai export with ?background=true; the job id."""

    def post(*files, **data) -> str:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"{IMPORT}?background=true", {"file": list(files), **data})
        assert response.status_code == 202, response.content
        assert set(response.json()) == {"job_id"}
        return response.json()["job_id"]

    return post


def test_a_background_claude_import_answers_what_an_import_at_once_does(
    client, start, upload, run_queued, import_dir, monkeypatch  # noqa: F811
):
    data = make_zip(export.members())
    job_id = start(upload("claude-export.zip", data), collection="incarnations")
    queued = client.get(job_url(job_id)).json()
    assert (queued["state"], queued["kind"], queued["done"], queued["total"]) == ("queued", "claude", 0, None)
    assert queued["memory_suggestions"] == []  # read in the first pass, not yet
    assert (import_dir / job_id / "000.upload").read_bytes() == data

    seen = []
    store = claude_importer.claude_conversation_import

    def watched(conversation, **kwargs):
        body = client.get(job_url(job_id)).json()  # what the page sees while the job runs
        seen.append((body["state"], body["done"], body["total"], len(body["memory_suggestions"])))
        return store(conversation, **kwargs)

    monkeypatch.setattr(claude_importer, "claude_conversation_import", watched)
    assert run_queued() == ["done"]
    # Five conversations (three of them problems, counted in the first pass) and one project (with nothing
    # to archive); memories offered from the start.
    assert seen == [("running", 0, 6, 4), ("running", 2, 6, 4)]
    body = client.get(job_url(job_id)).json()
    assert (body["state"], body["done"], body["total"], body["error"]) == ("done", 6, 6, None)
    assert set(ArchiveDocument.objects.values_list("collection", flat=True)) == {"incarnations"}
    assert body["document_ids"] == sorted(ArchiveDocument.objects.values_list("pk", flat=True))

    monkeypatch.setattr(claude_importer, "claude_conversation_import", store)
    ArchiveDocument.objects.all().delete()
    at_once = client.post(IMPORT, {"file": upload("claude-export.zip", data)}).json()
    assert counts(body) == counts(at_once) == {
        "conversations": 2, "messages": 7, "alternate_messages": 0, "skipped": 3, "duplicates": 0,
    }
    assert body["problems"] == at_once["problems"] and len(body["problems"]) == 3
    assert body["memory_suggestions"] == at_once["memory_suggestions"] == export.SUGGESTIONS


def test_an_unreadable_memories_json_is_the_jobs_problem_too(client, start, upload, run_queued):  # noqa: F811
    members = {**export.members(), "memories.json": b"\xff\xfe not utf-8"}
    job_id = start(upload("claude-export.zip", make_zip(members)))
    assert run_queued() == ["done"]
    body = client.get(job_url(job_id)).json()
    assert body["memory_suggestions"] == []
    assert body["problems"][-1] == {"index": None, "title": "memories.json", "reason": "memories.json is not UTF-8 text",
                                    "file": "memories.json"}


def test_a_claude_export_sent_in_pieces_runs_as_a_job(
    client, pieces_dir, run_queued, django_capture_on_commit_callbacks  # noqa: F811
):
    data = make_zip(export.members())
    upload_id = send_in_pieces(client, "claude-export.zip", data)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{IMPORT}?background=true", {"upload_ids": [upload_id], "assistant_name": "Claude"},
                               content_type="application/json")
    assert response.status_code == 202, response.content
    assert not (pieces_dir / upload_id).exists()
    assert run_queued() == ["done"]
    body = client.get(job_url(response.json()["job_id"])).json()
    assert (body["kind"], body["conversations"], body["files"]) == (
        "claude", 2, [{"name": "claude-export.zip", "size": len(data)}]
    )
    speakers = set(ArchiveChunk.objects.filter(role="assistant").values_list("speaker", flat=True))
    assert speakers == {"Claude"}


def test_a_cancelled_claude_job_resumes_and_a_rerun_imports_only_what_is_missing(
    client, start, upload, tmp_path, settings, run_queued, django_capture_on_commit_callbacks  # noqa: F811
):
    path = tmp_path / "claude-export.zip"
    total = write_export_zip(path, 0.2)["conversations"]
    settings.ELION_IMPORT_SLICE_SECONDS = 0  # each slice stores one conversation, then hands over
    job_id = start(upload("claude-export.zip", path.read_bytes()))
    task = OrmQ.objects.get().task
    OrmQ.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.run_import_job(*task["args"]) == "running"  # the first slice: one conversation stored
    cancelled = client.post(job_url(job_id, "cancel"))
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert run_queued() == ["not claimed"]
    assert ArchiveDocument.objects.count() == client.get(job_url(job_id)).json()["done"] == 1

    settings.ELION_IMPORT_SLICE_SECONDS = 240
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(job_url(job_id, "resume")).status_code == 202
    assert run_queued() == ["done"]
    body = client.get(job_url(job_id)).json()
    assert (body["state"], body["done"], body["conversations"], body["duplicates"]) == ("done", total, total, 0)
    uuids = list(ArchiveDocument.objects.values_list("metadata__claude_conversation_uuid", flat=True))
    assert len(uuids) == len(set(uuids)) == total

    again = start(upload("claude-export.zip", path.read_bytes()))
    run_queued()
    assert counts(client.get(job_url(again)).json()) == {
        "conversations": 0, "messages": 0, "alternate_messages": 0, "skipped": 0, "duplicates": total,
    }


def test_a_refused_claude_export_fails_its_job_with_the_reason(client, start, upload, run_queued, import_dir):  # noqa: F811
    job_id = start(upload("conversations.json", b'[{"title": "ChatGPT", "mapping": {}}]'))
    assert run_queued() == ["failed"]
    body = client.get(job_url(job_id)).json()
    assert body["error"]["error"] == "malformed_claude_export" and "use the ChatGPT import" in body["error"]["detail"]
    assert not ArchiveDocument.objects.exists() and not (import_dir / job_id).exists()


@pytest.mark.parametrize("query, body, code, status", [
    ("?background=maybe", "file", "invalid_background", 400),
    ("?background=true", None, "missing_file", 400),
    ("?background=true", {"upload_ids": "nope"}, "invalid_upload_ids", 400),
    ("?background=true", {"upload_ids": [7]}, "invalid_upload_ids", 400),
    ("?background=true", {"upload_ids": ["00000000-0000-4000-8000-000000000000"]}, "upload_not_found", 404),
    ("?background=true", {"upload_ids": [], "collection": "nowhere"}, "invalid_upload_ids", 400),
    ("?background=true", {"collection": "nowhere"}, "unknown_collection", 400),
    ("?background=true", {"assistant_name": 5}, "invalid_assistant_name", 400),
])
def test_bad_background_claude_requests_are_4xx_and_queue_nothing(client, upload, import_dir, query, body, code,
                                                                  status):
    if body == "file":
        response = client.post(IMPORT + query, {"file": upload("c.zip", make_zip(export.members()))})
    elif body is None:
        response = client.post(IMPORT + query, {})
    else:
        response = client.post(IMPORT + query, body, content_type="application/json")
    assert response.status_code == status, response.content
    assert response.json()["error"] == code and response.json()["detail"]
    assert ImportJob.objects.count() == 0 and OrmQ.objects.count() == 0


# --- A progress write carries only the counts --------------------------------------------------------------


def memories_with_projects(count: int) -> bytes:
    """memories.json with the account's memory (three suggestions) and `count` project memories."""
    projects = {f"{i:08x}-0000-4000-8000-00000000beef": f"Project memory {i}: the lantern wick trimmed on day {i}."
                for i in range(count)}
    return export.as_json([{"conversations_memory": export.MEMORIES_TEXT, "project_memories": projects,
                            "account_uuid": export.ACCOUNT["uuid"]}])


def param_bytes(params) -> int:
    # A JSON value reaches the driver as text (SQLite) or wrapped (psycopg's Jsonb, whose `obj` is the value).
    return sum(len(json.dumps(p.obj) if hasattr(p, "obj") else str(p)) for p in params or ())


def job_updates(client, start, upload, run, memories: bytes) -> tuple[list[int], list[int], dict]:
    """Run a job of the export with `memories`; the parameter bytes of its progress writes (one a
    conversation), of its write after the first pass, and the job's answer."""
    job_id = start(upload("claude-export.zip", make_zip({**export.members(with_memories=False),
                                                         "memories.json": memories})))
    progress, counted = [], []

    def capture(execute, sql, params, many, context):
        if sql.startswith('UPDATE "archive_importjob"'):
            assignments = sql.split(" WHERE ")[0]
            if '"total"' in assignments:
                counted.append(param_bytes(params))
            elif '"done"' in assignments and '"state"' not in assignments:
                progress.append(param_bytes(params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        assert run() == ["done"]
    return progress, counted, client.get(job_url(job_id)).json()


def test_a_progress_write_does_not_grow_with_the_memories_the_export_offers(client, start, upload, run_queued):  # noqa: F811
    small_progress, small_counted, small = job_updates(client, start, upload, run_queued, memories_with_projects(10))
    ArchiveDocument.objects.all().delete()
    large_progress, large_counted, large = job_updates(client, start, upload, run_queued, memories_with_projects(1_000))
    assert (len(small["memory_suggestions"]), len(large["memory_suggestions"])) == (13, 1_003)
    assert small["memory_suggestions"][:3] == large["memory_suggestions"][:3] == export.SUGGESTIONS[:3]
    # One write per item of the export (six), each the same size at 10 and at 1,000 memories (a timestamp's
    # digits aside) ...
    assert len(small_progress) == len(large_progress) == 6
    assert max(large_progress) <= max(small_progress) + 8
    # ... while the one write after the first pass carries the suggestions (what the capture does see).
    assert len(small_counted) == len(large_counted) == 1
    assert large_counted[0] > small_counted[0] + 50_000
    assert counts(small) == counts(large)
