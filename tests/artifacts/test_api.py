"""`GET /api/artifacts/` (`?q=`), `GET|DELETE /api/artifacts/{id}/`, the JSON export's `artifacts`, and a
permanent deletion taking a conversation's artifacts with it. Bad input is a 4xx, never a 5xx."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from artifacts import services
from artifacts.models import Artifact, ArtifactVersion
from conversations.services.visibility.transitions import conversation_trash
from tests.support.factories import api_call, thread

pytestmark = pytest.mark.django_db(transaction=True)

LISTED_FIELDS = {"id", "title", "kind", "conversation_id", "message_id", "created_at", "updated_at", "versions"}


def provenance(conversation, call_id: str = "call_1") -> services.Provenance:
    return services.Provenance(conversation_id=conversation.id, message_id=conversation.head_id, tool_call_id=call_id)


def artifact_in(conversation, title: str, content: str, kind: str = "poem") -> Artifact:
    return services.artifact_create(title=title, kind=kind, content=content, provenance=provenance(conversation)).artifact


@pytest.fixture
def conversation():
    return thread(("user", "write something"), ("assistant", "Here it is."))


def test_the_list_shows_each_artifact_with_its_provenance_and_version_count(conversation):
    client = Client()
    dawn = artifact_in(conversation, "Dawn", "Larks at first light.")
    services.artifact_update(artifact_id=dawn.pk, content="Larks, then bells.", provenance=provenance(conversation, "c2"))
    dusk = artifact_in(conversation, "Dusk", "Owls.", kind="letter")

    results = api_call(client, "get", "/api/artifacts/")["results"]
    assert [r["id"] for r in results] == [dusk.pk, dawn.pk]  # newest change first
    assert all(set(r) == LISTED_FIELDS for r in results)
    assert results[1] | {"created_at": None, "updated_at": None} == {
        "id": dawn.pk, "title": "Dawn", "kind": "poem", "conversation_id": str(conversation.id),
        "message_id": str(conversation.head_id), "versions": 2, "created_at": None, "updated_at": None,
    }


def test_search_matches_every_word_in_the_title_or_the_current_text(conversation):
    client = Client()
    dawn = artifact_in(conversation, "Dawn", "Larks at first light.")
    dusk = artifact_in(conversation, "Dusk", "Owls at last light.")
    services.artifact_update(artifact_id=dusk.pk, content="Bats at last light.", provenance=provenance(conversation))

    def found(query: str) -> list[int]:
        return [r["id"] for r in api_call(client, "get", f"/api/artifacts/?q={query}")["results"]]

    assert found("larks") == [dawn.pk]
    assert found("DUSK") == [dusk.pk]
    assert found("light") == [dusk.pk, dawn.pk]
    assert found("light+bats") == [dusk.pk]
    assert found("owls") == []  # an earlier version's words are not the artifact's text any more
    assert found("") == [dusk.pk, dawn.pk]


def test_a_search_too_long_is_a_400():
    response = Client().get("/api/artifacts/", {"q": "x" * 201})
    assert response.status_code == 400 and response.json()["error"] == "invalid_query"


def test_the_detail_adds_the_current_text_and_every_version(conversation):
    client = Client()
    dawn = artifact_in(conversation, "Dawn", "Larks.")
    services.artifact_update(artifact_id=dawn.pk, content="Bells.", provenance=provenance(conversation, "call_2"))
    body = api_call(client, "get", f"/api/artifacts/{dawn.pk}/")
    assert set(body) == LISTED_FIELDS | {"content", "history"}
    assert body["content"] == "Bells." and body["versions"] == 2
    assert [(h["version"], h["content"], h["tool_call_id"], h["message_id"]) for h in body["history"]] == [
        (1, "Larks.", "call_1", str(conversation.head_id)), (2, "Bells.", "call_2", str(conversation.head_id)),
    ]


@pytest.mark.parametrize("artifact_id", ["999", "abc", "0", "-1", "99999999999999999999"])
def test_an_unknown_or_malformed_id_is_a_404(artifact_id):
    client = Client()
    for method in ("get", "delete"):
        response = getattr(client, method)(f"/api/artifacts/{artifact_id}/")
        assert response.status_code == 404 and response.json()["error"] == "artifact_not_found"


def test_the_owner_deletes_an_artifact_with_all_its_versions(conversation):
    client = Client()
    dawn, dusk = artifact_in(conversation, "Dawn", "Larks."), artifact_in(conversation, "Dusk", "Owls.")
    services.artifact_update(artifact_id=dawn.pk, content="Bells.", provenance=provenance(conversation))
    assert client.delete(f"/api/artifacts/{dawn.pk}/").status_code == 204
    assert client.get(f"/api/artifacts/{dawn.pk}/").status_code == 404
    assert list(ArtifactVersion.objects.values_list("artifact_id", flat=True)) == [dusk.pk]
    assert [r["id"] for r in api_call(client, "get", "/api/artifacts/")["results"]] == [dusk.pk]


def test_the_json_export_lists_the_conversations_artifacts(conversation):
    other = thread(("user", "another"), ("assistant", "yes"))
    dawn = artifact_in(conversation, "Dawn", "Larks.")
    artifact_in(other, "Elsewhere", "Not this one.")
    response = Client().get(f"/api/conversations/{conversation.id}/export/?format=json")
    assert response.status_code == 200
    exported = json.loads(b"".join(response.streaming_content))  # the export streams
    assert [(a["id"], a["title"], a["content"]) for a in exported["artifacts"]] == [(dawn.pk, "Dawn", "Larks.")]
    assert [h["content"] for h in exported["artifacts"][0]["history"]] == ["Larks."]


def test_deleting_a_conversation_forever_deletes_its_artifacts_and_versions_written_in_it(conversation):
    client = Client()
    doomed = thread(("user", "write"), ("assistant", "ok"))
    born_here = artifact_in(doomed, "Born here", "Gone with it.")
    kept = artifact_in(conversation, "Kept", "Stays.")
    services.artifact_update(artifact_id=kept.pk, content="Revised in the doomed thread.", provenance=provenance(doomed))
    conversation_trash(conversation_id=doomed.id)

    receipt = api_call(client, "delete", f"/api/conversations/{doomed.id}/")
    assert receipt["state"] == "complete"
    assert (receipt["counts"]["artifacts"], receipt["counts"]["artifact_versions"]) == (1, 2)
    assert not Artifact.objects.filter(pk=born_here.pk).exists()
    assert list(ArtifactVersion.objects.filter(artifact=kept).values_list("content", flat=True)) == ["Stays."]
    assert api_call(client, "get", f"/api/artifacts/{kept.pk}/")["content"] == "Stays."
