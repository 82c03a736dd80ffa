"""Background imports (`?background=true`): the job's lifecycle, progress, slices, a crash and a resume (issue 21).

The queued task is the real one django-q2 stored (`OrmQ`); these tests run it in
this process (`run_queued`), as a worker would. tests/archive/test_import_worker.py
runs the same jobs in a real `qcluster`, with a cancel from outside.
"""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from archive.models import ArchiveChunk, ArchiveDocument, ImportJob
from archive.services import import_jobs
from archive.services.importers.chatgpt import store as chatgpt_importer
from bench.chatgpt_export_build import write_export_zip
from tests.archive import chatgpt_export as export
from tests.support.import_jobs import (
    IMPORT,
    counts,
    job_url,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def import_dir(settings, tmp_path):
    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    return settings.ELION_IMPORT_DIR


@pytest.fixture
def start(client, django_capture_on_commit_callbacks, import_dir):
    """POST an export with ?background=true; the job id (its task is then in the queue)."""

    def post(*files, **data) -> str:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"{IMPORT}?background=true", {"file": list(files), **data})
        assert response.status_code == 202, response.content
        assert set(response.json()) == {"job_id"}
        return response.json()["job_id"]

    return post


def test_a_background_import_is_queued_then_runs_with_progress_to_the_same_answer_as_at_once(
    client, start, upload, export_zip, monkeypatch, run_queued, import_dir
):
    job_id = start(upload("export.zip", export_zip))
    queued = client.get(job_url(job_id)).json()
    assert (queued["state"], queued["done"], queued["total"], queued["kind"]) == ("queued", 0, None, "chatgpt")
    assert queued["files"] == [{"name": "export.zip", "size": len(export_zip)}]
    assert OrmQ.objects.get().task["args"] == (job_id,)
    assert (import_dir / job_id / "000.upload").read_bytes() == export_zip

    seen = []
    store = chatgpt_importer.chatgpt_conversation_import

    def watched(conversation, **kwargs):
        body = client.get(job_url(job_id)).json()  # what a poller sees while the job runs
        seen.append((body["state"], body["done"], body["total"], body["conversations"]))
        return store(conversation, **kwargs)

    monkeypatch.setattr(chatgpt_importer, "chatgpt_conversation_import", watched)
    assert run_queued() == ["done"]
    # Three conversations: the second cannot be read (counted in the first pass, stored by nobody).
    assert seen == [("running", 0, 3, 0), ("running", 2, 3, 1)]

    body = client.get(job_url(job_id)).json()
    assert (body["state"], body["done"], body["total"], body["error"]) == ("done", 3, 3, None)
    assert body["finished_at"] is not None
    assert body["document_ids"] == sorted(ArchiveDocument.objects.values_list("pk", flat=True))
    assert not (import_dir / job_id).exists()  # the saved upload is removed once done

    monkeypatch.setattr(chatgpt_importer, "chatgpt_conversation_import", store)
    ArchiveDocument.objects.all().delete()
    at_once = client.post(IMPORT, {"file": [upload("export.zip", export_zip)]}).json()
    assert counts(body) == counts(at_once) == {
        "conversations": 2, "messages": 7, "alternate_messages": 4, "skipped": 1, "duplicates": 0,
    }
    assert [p["reason"] for p in body["problems"]] == [p["reason"] for p in at_once["problems"]]
    assert body["custom_instructions_suggestion"] == at_once["custom_instructions_suggestion"]


def test_a_long_import_runs_in_slices_each_going_on_where_the_last_ended(
    client, start, upload, settings, tmp_path, run_queued
):
    settings.ELION_IMPORT_SLICE_SECONDS = 0  # each slice stores one conversation, then hands over
    path = tmp_path / "export.zip"
    written = write_export_zip(path, 0.1, members=2)
    job_id = start(upload("export.zip", path.read_bytes()))
    answers = run_queued()
    assert answers == ["running"] * (written["conversations"] - 1) + ["done"]
    body = client.get(job_url(job_id)).json()
    assert (body["state"], body["done"], body["total"]) == ("done", written["conversations"], written["conversations"])
    assert body["conversations"] == ArchiveDocument.objects.count() == written["conversations"]


def _stored_whole() -> None:
    """Every stored document has exactly the chunks it counts: no half-stored conversation."""
    for document in ArchiveDocument.objects.all():
        assert ArchiveChunk.objects.filter(document=document).count() == document.chunk_count


def test_a_crash_mid_import_leaves_no_half_conversation_and_a_resume_imports_exactly_the_rest(
    client, start, upload, tmp_path, monkeypatch, run_queued, django_capture_on_commit_callbacks
):
    path = tmp_path / "export.zip"
    written = write_export_zip(path, 0.3, members=3)
    total = written["conversations"]
    job_id = start(upload("export.zip", path.read_bytes()))
    store, calls = chatgpt_importer.chatgpt_conversation_import, []

    def crashing(conversation, **kwargs):
        stored = store(conversation, **kwargs)  # the document is written, then the process "dies"
        calls.append(conversation.index)
        if len(calls) == 7:
            raise RuntimeError("simulated crash")
        return stored

    monkeypatch.setattr(chatgpt_importer, "chatgpt_conversation_import", crashing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_queued()
    body = client.get(job_url(job_id)).json()
    assert (body["state"], body["done"], body["total"]) == ("failed", 6, total)
    assert body["error"]["error"] == "import_interrupted"
    assert ArchiveDocument.objects.count() == body["conversations"] == 6  # the seventh was rolled back
    _stored_whole()

    monkeypatch.setattr(chatgpt_importer, "chatgpt_conversation_import", store)
    with django_capture_on_commit_callbacks(execute=True):
        resumed = client.post(job_url(job_id, "resume"))
    assert resumed.status_code == 202 and resumed.json()["state"] == "queued"
    assert run_queued() == ["done"]
    body = client.get(job_url(job_id)).json()
    assert (body["state"], body["done"], body["conversations"], body["duplicates"]) == ("done", total, total, 0)
    ids = list(ArchiveDocument.objects.values_list("metadata__chatgpt_conversation_id", flat=True))
    assert len(ids) == len(set(ids)) == total
    assert sorted(body["document_ids"]) == sorted(ArchiveDocument.objects.values_list("pk", flat=True))
    _stored_whole()

    # The same export uploaded again (a re-run from scratch): every conversation is a duplicate.
    again = start(upload("export.zip", path.read_bytes()))
    run_queued()
    assert counts(client.get(job_url(again)).json()) == {
        "conversations": 0, "messages": 0, "alternate_messages": 0, "skipped": 0, "duplicates": total,
    }
    assert ArchiveDocument.objects.count() == total


def test_a_refused_export_fails_its_job_with_the_reason_and_keeps_no_file(
    client, start, upload, import_dir, run_queued
):
    job_id = start(upload("conversations.json", export.as_json([export.harbour()])[:-40]))
    assert run_queued() == ["failed"]
    body = client.get(job_url(job_id)).json()
    assert body["state"] == "failed" and body["error"]["error"] == "malformed_chatgpt_export"
    assert ArchiveDocument.objects.count() == 0
    assert not (import_dir / job_id).exists()
    resumed = client.post(job_url(job_id, "resume"))
    assert resumed.status_code == 409 and resumed.json()["error"] == "import_not_resumable"


def test_a_cancelled_queued_job_never_runs_and_resumes_on_request(
    client, start, upload, export_zip, run_queued, django_capture_on_commit_callbacks
):
    job_id = start(upload("export.zip", export_zip))
    cancelled = client.post(job_url(job_id, "cancel"))
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert run_queued() == ["not claimed"]
    assert ArchiveDocument.objects.count() == 0
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(job_url(job_id, "resume")).status_code == 202
    assert run_queued() == ["done"]
    assert client.get(job_url(job_id)).json()["conversations"] == 2
    finished = client.post(job_url(job_id, "cancel"))
    assert finished.status_code == 409 and finished.json()["error"] == "import_finished"
    assert client.delete(job_url(job_id)).status_code == 204
    assert ImportJob.objects.count() == 0 and ArchiveDocument.objects.count() == 2  # the documents stay


def test_a_running_job_is_not_taken_over_until_its_heartbeat_is_stale(start, upload, export_zip, settings):
    job_id = start(upload("export.zip", export_zip))
    ImportJob.objects.filter(pk=job_id).update(state="running", runner="another-live-run")
    assert import_jobs.import_job_run(job_id) == "not claimed"
    settings.ELION_IMPORT_STALE_SECONDS = 0  # that run's worker died: its heartbeat is now stale
    assert import_jobs.import_job_run(job_id) == "done"
    assert ArchiveDocument.objects.count() == 2


@pytest.mark.parametrize("query, files, code, status", [
    ("?background=maybe", True, "invalid_background", 400),
    ("?background=true", False, "missing_file", 400),
])
def test_bad_background_requests_are_4xx_and_queue_nothing(client, upload, export_zip, import_dir,
                                                           query, files, code, status):
    data = {"file": [upload("export.zip", export_zip)]} if files else {}
    response = client.post(IMPORT + query, data)
    assert response.status_code == status and response.json()["error"] == code
    assert ImportJob.objects.count() == 0 and OrmQ.objects.count() == 0
    assert not import_dir.exists() or not any(import_dir.iterdir())


def test_unknown_and_malformed_job_ids_are_404(client):
    for job_id in ("00000000-0000-4000-8000-000000000000", "not-a-uuid", "1"):
        for method, action in ((client.get, ""), (client.post, "cancel"), (client.post, "resume")):
            response = method(job_url(job_id, action))
            assert response.status_code == 404 and response.json()["error"] == "import_not_found"


def test_an_unknown_collection_is_refused_before_the_upload_is_saved(client, upload, export_zip, import_dir):
    response = client.post(f"{IMPORT}?background=true", {"file": [upload("e.zip", export_zip)], "collection": "x"})
    assert response.status_code == 400 and response.json()["error"] == "unknown_collection"
    assert ImportJob.objects.count() == 0
