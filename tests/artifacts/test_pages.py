"""The reply's artifact card, the Artifacts page and the Markdown download, rendered by the server."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from artifacts import services
from artifacts.models import Artifact
from tests.support.factories import thread
from transcript.models import Message

pytestmark = pytest.mark.django_db

POEM = "# Orchard\n\nThe pear tree <b>keeps</b> the gate."


def reply_with_artifact(title: str = "Orchard", content: str = POEM) -> tuple:
    """A conversation whose last reply called create_artifact (its stored parts and its version row)."""
    conversation = thread(("user", "Write me a poem."), ("assistant", "Here it is."))
    reply = conversation.head
    version = services.artifact_create(
        title=title, kind="poem", content=content,
        provenance=services.Provenance(conversation_id=conversation.id, message_id=reply.id, tool_call_id="call_1"),
    )
    parts = [
        {"type": "tool_call", "call_id": "call_1", "name": "create_artifact", "arguments": "{}", "round": 0},
        {"type": "tool_result", "call_id": "call_1", "content": '{"artifact_id": 1}', "is_error": False},
    ]
    Message.objects.filter(pk=reply.pk).update(parts=parts, updated_at=timezone.now())
    return conversation, version.artifact


def test_a_reply_that_created_an_artifact_shows_its_card(client):
    conversation, artifact = reply_with_artifact()
    html = client.get(f"/c/{conversation.id}/").content.decode()
    card = re.search(r'<section class="artifact-card.*?</section>', html, re.S).group(0)
    assert f'data-artifact-id="{artifact.pk}"' in card and "Orchard" in card and "Poem" in card
    assert f'href="/artifacts/{artifact.pk}/"' in card and "Copy" in card
    assert f'href="/artifacts/{artifact.pk}/download/?version=1"' in card
    # The Markdown to copy travels escaped, never as markup.
    assert "The pear tree &lt;b&gt;keeps&lt;/b&gt; the gate." in card
    fragment = client.get(f"/c/{conversation.id}/messages/{conversation.head_id}/fragment/").content.decode()
    assert 'data-artifact-card' in fragment


def test_replies_without_artifact_tools_cost_no_artifact_query(client):
    conversation = thread(*[("user", "hi"), ("assistant", "hello")] * 5)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(f"/c/{conversation.id}/").content.decode()
    assert "data-artifact-card" not in html
    assert not [q for q in queries.captured_queries if "artifacts_" in q["sql"]]


def test_the_artifacts_page_is_in_the_navigation_and_searches(client):
    reply_with_artifact("Orchard", "Pear trees.")
    reply_with_artifact("Harbour", "Gulls and rope.")
    html = client.get("/artifacts/").content.decode()
    assert '<a href="/artifacts/" aria-current="page">Artifacts</a>' in html
    assert "Orchard" in html and "Harbour" in html
    found = client.get("/artifacts/", {"q": "gulls"}).content.decode()
    assert "Harbour" in found and "Orchard" not in found
    assert "No artifact matches" in client.get("/artifacts/", {"q": "zebra"}).content.decode()
    assert client.get("/artifacts/", {"q": "x" * 300}).status_code == 400


def test_the_artifact_page_renders_the_text_and_keeps_earlier_versions(client):
    conversation, artifact = reply_with_artifact()
    services.artifact_update(
        artifact_id=artifact.pk, content="# Orchard\n\nThe bees keep time.",
        provenance=services.Provenance(conversation_id=conversation.id, message_id=conversation.head_id, tool_call_id="c2"),
    )
    html = client.get(f"/artifacts/{artifact.pk}/").content.decode()
    body = re.search(r"data-artifact-body>(.*?)</div>", html, re.S).group(1)
    assert "<h1>Orchard</h1>" in body and "The bees keep time." in body
    assert "Earlier versions" in html and "The pear tree &lt;b&gt;keeps&lt;/b&gt; the gate." in html
    assert client.get("/artifacts/999/").status_code == 404


def test_download_gives_the_markdown_as_a_file(client):
    conversation, artifact = reply_with_artifact(title="Orchard at Dusk")
    services.artifact_update(
        artifact_id=artifact.pk, content="Second.",
        provenance=services.Provenance(conversation_id=conversation.id, message_id=conversation.head_id, tool_call_id="c2"),
    )
    latest = client.get(f"/artifacts/{artifact.pk}/download/")
    assert latest["Content-Type"] == "text/markdown; charset=utf-8"
    assert latest["Content-Disposition"] == 'attachment; filename="orchard-at-dusk.md"'
    assert latest.content.decode() == "Second."
    assert client.get(f"/artifacts/{artifact.pk}/download/?version=1").content.decode() == POEM
    for bad in ("3", "abc", "0"):
        assert client.get(f"/artifacts/{artifact.pk}/download/?version={bad}").status_code == 404


def test_the_delete_form_removes_the_artifact(client):
    _, artifact = reply_with_artifact()
    response = client.post(f"/artifacts/{artifact.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == "/artifacts/"
    assert not Artifact.objects.filter(pk=artifact.pk).exists()
    assert client.post(f"/artifacts/{artifact.pk}/delete/").status_code == 404
