"""Claude.ai projects (issue 21): each project's docs are archive material, searchable and never speech;
its prompt template is offered once for Settings → Custom instructions (the owner confirms); a project
that cannot be read is a problem, never a refused export; users.json is not read."""

from __future__ import annotations

import json

import pytest

from archive.models import ArchiveChunk, ArchiveDocument
from archive.sending import tools as archive_tools
from archive.services import import_jobs
from archive.services.importers.claude import parse as claude
from elion.base.assistant_settings import assistant_settings_get
from tests.archive import claude_export as export
from tests.archive.conftest import make_zip
from tests.support.import_jobs import job_url
from tests.support.json_fields import WRONG_TYPES, read_outcomes

pytestmark = pytest.mark.django_db

IMPORT = "/api/archive/import/claude/"


def post(client, upload, members: dict[str, bytes], **fields) -> dict:
    response = client.post(IMPORT, {"file": upload("claude-export.zip", make_zip(members)), **fields})
    assert response.status_code == 200, response.content
    return response.json()


def garden() -> ArchiveDocument:
    return ArchiveDocument.objects.get(metadata__claude_project_uuid=export.projects()[0]["uuid"])


def test_a_projects_docs_are_one_document_of_labelled_chunks_never_speech(client, upload):
    body = post(client, upload, export.project_members(), collection="papers")
    assert (body["conversations"], body["projects"]) == (2, 1)
    document = garden()
    assert (document.title, document.source, document.collection) == ("Project: Garden", "claude", "papers")
    assert document.pk in body["document_ids"]
    assert list(document.chunks.values_list("turn", "role", "speaker", "text")) == [
        (None, "", "Project description", "Planting plans."),
        (None, "", "Project file: lavender.md", export.LAVENDER),
        (None, "", "Project file: soil.txt", export.SOIL),
    ]
    assert document.metadata["docs"] == [
        {"uuid": "d1", "filename": "lavender.md", "created_at": "2024-05-01T09:00:00+00:00"},
        {"uuid": "d2", "filename": "soil.txt", "created_at": "2024-05-01T09:00:00+00:00"},
    ]
    assert "Project files (their text is kept as chunks under each file's name): lavender.md, soil.txt" in document.text
    # Never speech: no turn, no role, nothing to continue; the instructions are not archived at all.
    continued = client.post(f"/api/archive/documents/{document.pk}/continue/", "{}", content_type="application/json",
                            HTTP_IDEMPOTENCY_KEY="continue-garden")
    assert continued.status_code == 409 and continued.json()["error"] == "archive_document_not_a_conversation"
    assert not ArchiveChunk.objects.filter(text__contains="patient gardener").exists()
    assert not ArchiveDocument.objects.filter(text__contains="patient gardener").exists()


def test_project_docs_are_found_by_search_and_the_models_tool_under_the_files_name(client, upload):
    post(client, upload, export.project_members())
    (hit,) = client.get("/api/archive/search/", {"q": "chalky compost"}).json()["results"]
    assert (hit["speaker"], hit["document_title"], hit["branch"]) == ("Project file: soil.txt", "Project: Garden",
                                                                       "current")
    tool_answer = json.loads(archive_tools.search_archive({"query": "north wall lavender"}, None))
    assert [r["speaker"] for r in tool_answer["results"]] == ["Project file: lavender.md"]


def test_the_newest_prompt_template_is_offered_once_and_saved_only_when_the_owner_confirms(client, upload):
    body = post(client, upload, export.project_members())
    assert body["custom_instructions_suggestion"] == export.GARDEN_TEMPLATE
    assert assistant_settings_get().custom_instructions == ""  # offered, not saved
    saved = client.patch("/api/settings/", {"custom_instructions": export.GARDEN_TEMPLATE},
                         content_type="application/json")
    assert saved.status_code == 200
    # Settings hold it now: the next import does not offer it again.
    again = post(client, upload, export.project_members())
    assert again["custom_instructions_suggestion"] is None
    assert (again["projects"], again["duplicates"]) == (0, 3)


def test_a_project_that_cannot_be_read_is_a_problem_and_the_rest_imports(client, upload):
    body = post(client, upload, export.project_members())
    project_problems = [(p["index"], p["title"], p["reason"], p["file"]) for p in body["problems"]
                        if p["file"] == "projects.json"]
    assert project_problems == [
        (7, "Broken project", "its docs are not a list", "projects.json"),
        (8, "", "it is not a JSON object", "projects.json"),
    ]
    assert body["skipped"] == 3 + 2  # three conversations and two projects not imported
    assert body["conversations"] == 2 and body["projects"] == 1


@pytest.mark.parametrize(("data", "kept", "reason"), [
    (b"not json", 0, "projects.json is not a JSON list of projects; the projects from here on are not imported"),
    (b'"a string"', 0, "projects.json is not a JSON list of projects; the projects from here on are not imported"),
    (export.as_json(export.projects()[:2])[:-30], 1,
     "projects.json is not a JSON list of projects; the projects from here on are not imported"),
    (b"\xff\xfe not utf-8", 0, "projects.json is not a JSON list of projects; the projects from here on are not imported"),
    (b"", 0, None),
    (b"[]", 0, None),
])
def test_a_projects_json_that_cannot_be_read_costs_only_the_projects(client, upload, data, kept, reason):
    body = post(client, upload, export.project_members(data))
    assert body["conversations"] == 2
    assert body["projects"] == kept
    reasons = [p["reason"] for p in body["problems"] if p["file"] == "projects.json"]
    assert reasons == ([reason] if reason else [])


def test_wrong_types_nul_characters_and_deep_nesting_in_projects_are_problems(client, upload):
    deep = {"name": "Deep", "docs": [{"filename": "x", "content": "PLACEHOLDER"}]}
    nested = json.dumps(deep).replace('"PLACEHOLDER"', "[" * 50_000 + "]" * 50_000)
    items = [
        {"name": "Description a list", "description": ["x"]},
        {"name": "Template a number", "prompt_template": 7},
        {"name": "Doc a string", "docs": ["x"]},
        {"name": "Content a dict", "docs": [{"filename": "a", "content": {"x": 1}}]},
        {"name": "Nul", "docs": [{"filename": "a", "content": "a\u0000b"}]},
    ]
    data = ("[" + ",".join([*(json.dumps(i) for i in items), nested, json.dumps(export.projects()[0])]) + "]").encode()
    body = post(client, upload, export.project_members(data))
    assert [(p["title"], p["reason"]) for p in body["problems"] if p["file"] == "projects.json"] == [
        ("Description a list", "it has a description that is not a string"),
        ("Template a number", "it has a prompt_template that is not a string"),
        ("Doc a string", "doc 1 is not a JSON object"),
        ("Content a dict", "doc 1 has a content that is not a string"),
        ("Nul", "it holds a NUL character or an unpaired surrogate"),
        ("", "it is nested deeper than 64 levels"),
    ]
    assert body["projects"] == 1


@pytest.mark.parametrize("wrong", WRONG_TYPES)
def test_every_field_of_a_project_may_hold_any_type_without_a_5xx(wrong):
    original = export.projects()[0]
    outcomes = read_outcomes(claude.read_project, claude.UnreadableConversation, original, wrong)
    assert outcomes == {"ClaudeProject", "problem"}


def test_users_json_is_not_read_and_a_plain_conversations_json_has_no_projects(client, upload):
    members = {**export.project_members(), "users.json": b"not json at all"}
    body = post(client, upload, members)
    assert body["conversations"] == 2 and not [p for p in body["problems"] if p["file"] == "users.json"]
    assert not ArchiveChunk.objects.filter(text__contains="a@example.invalid").exists()
    ArchiveDocument.objects.all().delete()
    alone = client.post(IMPORT, {"file": upload("conversations.json", export.as_json([export.letters()]))}).json()
    assert (alone["conversations"], alone["projects"]) == (1, 0)


def test_a_background_import_archives_projects_and_offers_the_template(
    client, upload, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{IMPORT}?background=true",
                               {"file": upload("claude-export.zip", make_zip(export.project_members()))})
    job_id = response.json()["job_id"]
    assert import_jobs.import_job_run(job_id) == "done"
    body = client.get(job_url(job_id)).json()
    assert (body["projects"], body["total"], body["custom_instructions_suggestion"]) == (1, 9, export.GARDEN_TEMPLATE)
    assert garden().pk in body["document_ids"]


def test_a_projects_json_above_the_size_limit_is_a_problem_not_a_refusal(client, upload, settings):
    big = export.projects()[:1]
    big[0]["docs"].append(export.project_doc("d9", "big.txt", "tide " * 60_000))
    settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES = 200_000
    body = post(client, upload, export.project_members(export.as_json(big)))
    assert (body["conversations"], body["projects"]) == (2, 0)
    (problem,) = [p for p in body["problems"] if p["file"] == "projects.json"]
    assert problem["index"] == 5 and problem["reason"].startswith("projects.json: ")
