"""The Memories API (docs/api.md "Memories") and its bad-input answers."""

from __future__ import annotations

import pytest

from memories.models import Memory

pytestmark = pytest.mark.django_db

MEMORY_KEYS = {
    "id", "text", "category", "importance", "position", "active", "created_at", "updated_at", "source", "chats", "history",
}


def post(client, path, body):
    return client.post(path, body, content_type="application/json")


def test_create_list_get_patch_delete(client):
    created = post(client, "/api/memories/", {"text": "  Loves the sea  ", "category": "place", "importance": 4})
    assert created.status_code == 201
    body = created.json()
    assert set(body) == MEMORY_KEYS
    assert (body["text"], body["category"], body["importance"], body["position"]) == ("Loves the sea", "place", 4, 1)
    second = post(client, "/api/memories/", {"text": "Second"}).json()
    assert (second["category"], second["importance"], second["position"]) == ("general", 3, 2)

    listed = client.get("/api/memories/").json()["results"]
    assert [m["id"] for m in listed] == [body["id"], second["id"]]
    assert client.get(f"/api/memories/{body['id']}/").json() == body

    patched = client.patch(f"/api/memories/{body['id']}/", {"text": "Loves the ocean"}, content_type="application/json")
    assert patched.status_code == 200 and patched.json()["text"] == "Loves the ocean"
    assert client.delete(f"/api/memories/{body['id']}/").status_code == 204
    assert client.get(f"/api/memories/{body['id']}/").status_code == 404


@pytest.mark.parametrize(
    "body, code",
    [
        ({"text": ""}, "empty_memory_text"),
        ({"text": "   "}, "empty_memory_text"),
        ({}, "empty_memory_text"),
        ({"text": "x" * 4001}, "memory_text_too_long"),
        ({"text": "ok", "category": "gossip"}, "unknown_category"),
        ({"text": "ok", "importance": 0}, "invalid_importance"),
        ({"text": "ok", "importance": 6}, "invalid_importance"),
        ({"text": "ok", "importance": "high"}, "invalid_importance"),
        ({"text": "ok", "importance": True}, "invalid_importance"),
        ({"text": "ok", "active": "yes"}, "invalid_active"),
        ({"text": "ok", "position": 3}, "unknown_field"),
    ],
)
def test_bad_memory_input_is_a_400_and_changes_nothing(client, body, code):
    response = post(client, "/api/memories/", body)
    assert response.status_code == 400
    assert response.json()["error"] == code and response.json()["detail"]
    assert not Memory.objects.exists()


def test_bad_patch_changes_nothing(client):
    memory = post(client, "/api/memories/", {"text": "Kept as is"}).json()
    for body in ({"text": ""}, {"importance": 9}, {"category": "nope"}, {"id": 5}):
        response = client.patch(f"/api/memories/{memory['id']}/", body, content_type="application/json")
        assert response.status_code == 400, body
    assert client.get(f"/api/memories/{memory['id']}/").json() == memory


def test_malformed_json_and_unknown_ids_are_4xx(client):
    response = client.post("/api/memories/", "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "malformed_request"
    assert post(client, "/api/memories/", ["a list"]).status_code == 400
    for path in ("/api/memories/999/", "/api/memories/abc/", "/api/memories/999/impact/"):
        response = client.get(path)
        assert response.status_code == 404 and response.json()["error"] == "memory_not_found"
    assert client.delete("/api/memories/999/").status_code == 404


def test_import_creates_all_in_order_after_existing(client):
    post(client, "/api/memories/", {"text": "Existing"})
    response = post(
        client,
        "/api/memories/import/",
        {"memories": ["Plain string", {"text": "Object", "category": "event", "importance": 5}]},
    )
    assert response.status_code == 201 and response.json() == {"created": 2}
    listed = client.get("/api/memories/").json()["results"]
    assert [(m["text"], m["position"]) for m in listed] == [("Existing", 1), ("Plain string", 2), ("Object", 3)]
    assert listed[2]["category"] == "event" and listed[2]["importance"] == 5


def test_import_csv_text_and_file(client):
    response = post(client, "/api/memories/import/", {"format": "csv", "text": "text,importance\nFrom CSV,2\n"})
    assert response.json() == {"created": 1}
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("memories.json", b'[{"text": "From a file"}]', content_type="application/json")
    response = client.post("/api/memories/import/", {"file": upload})
    assert response.status_code == 201 and response.json() == {"created": 1}
    assert list(Memory.objects.values_list("text", flat=True)) == ["From CSV", "From a file"]


def test_bad_import_reports_the_item_and_imports_nothing(client):
    response = post(client, "/api/memories/import/", {"memories": ["fine", {"text": "bad", "importance": 9}]})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_importance"
    assert response.json()["detail"].startswith("Memory 2:")
    response = post(client, "/api/memories/import/", {"format": "json", "text": '[\n"ok",\n"broken\n]'})
    assert response.status_code == 400 and response.json()["error"] == "import_parse_error"
    assert "Line 3" in response.json()["detail"]
    assert post(client, "/api/memories/import/", {}).status_code == 400
    assert post(client, "/api/memories/import/", {"memories": []}).status_code == 400
    assert not Memory.objects.exists()


def test_import_preview_parses_and_saves_nothing(client):
    response = post(client, "/api/memories/import/preview/", {"format": "csv", "text": "Walks at dawn,practice,4"})
    assert response.status_code == 400  # "practice" is not a category
    response = post(client, "/api/memories/import/preview/", {"format": "csv", "text": "Walks at dawn,event,4"})
    assert response.status_code == 200
    assert response.json() == {
        "count": 1,
        "reaches": "new_threads_only",
        "memories": [{"text": "Walks at dawn", "category": "event", "importance": 4, "active": True}],
    }
    assert not Memory.objects.exists()


def test_reorder_sets_positions(client):
    ids = [post(client, "/api/memories/", {"text": f"m{i}"}).json()["id"] for i in range(3)]
    response = post(client, "/api/memories/reorder/", {"ids": [ids[2], ids[0], ids[1]]})
    assert response.status_code == 200
    assert [(m["id"], m["position"]) for m in response.json()["results"]] == [(ids[2], 1), (ids[0], 2), (ids[1], 3)]
    assert [m["id"] for m in client.get("/api/memories/").json()["results"]] == [ids[2], ids[0], ids[1]]


@pytest.mark.parametrize(
    "mangle, code",
    [
        (lambda ids: ids[:-1], "missing_memory_ids"),
        (lambda ids: ids + [99999], "unknown_memory_ids"),
        (lambda ids: ids + ids[:1], "duplicate_ids"),
        (lambda ids: [str(i) for i in ids], "invalid_ids"),
        (lambda ids: None, "invalid_ids"),
    ],
)
def test_bad_reorder_is_a_400_and_changes_nothing(client, mangle, code):
    ids = [post(client, "/api/memories/", {"text": f"m{i}"}).json()["id"] for i in range(3)]
    response = post(client, "/api/memories/reorder/", {"ids": mangle(ids)})
    assert response.status_code == 400 and response.json()["error"] == code
    assert list(Memory.objects.order_by("position").values_list("id", flat=True)) == ids


def test_refresh_memory_route_is_not_shadowed_by_conversation_routes(client):
    from django.urls import resolve

    match = resolve("/api/conversations/00000000-0000-0000-0000-000000000000/refresh-memory/")
    assert match.url_name == "api-refresh-memory"
