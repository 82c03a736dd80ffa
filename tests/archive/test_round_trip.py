"""Our own Markdown export, re-imported into the archive, parses to the same turns.

Branch / Fresh Chat handoff bubbles stay in exports (they are history) but are
never ingested as assistant speech.
"""

from __future__ import annotations

import pytest

from archive.models import ArchiveDocument
from continuity.services.branching import conversation_branch
from transcript.models import Message, MessageKind, Role
from transcript.tree import live_branch

pytestmark = pytest.mark.django_db


def export_markdown(client, conversation) -> bytes:
    response = client.get(f"/api/conversations/{conversation.id}/export/?format=markdown")
    assert response.status_code == 200
    return response.getvalue()


def archive_upload(client, upload, name: str, data: bytes) -> ArchiveDocument:
    response = client.post("/api/archive/documents/", {"file": upload(name, data), "collection": "conversations"})
    assert response.status_code == 201, response.content
    return ArchiveDocument.objects.get(pk=response.json()["id"])


def turns(document: ArchiveDocument) -> list[tuple[str, str, str]]:
    return list(document.chunks.order_by("position").values_list("speaker", "role", "text"))


def test_markdown_export_round_trips_to_the_same_turns(client, upload, make_conversation, make_turns):
    conversation = make_conversation(title="Night *garden*")
    make_turns(
        conversation,
        ("user", "Are the moonflowers open?"),
        ("assistant", "They are.\n\nThe whole row, white as paper.\n\n- one\n- two"),
        ("user", "Tell me what Voicefire 5.1 said about them."),
        ("assistant", "It said they keep their own clock."),
    )
    document = archive_upload(client, upload, "night.md", export_markdown(client, conversation))
    assert document.title == "Night *garden*"
    expected = [
        ("AUMA" if m.role == Role.USER else "Elion Voicefire", m.role, m.content) for m in live_branch(conversation)
    ]
    assert turns(document) == expected


def test_clipboard_export_round_trips(client, upload, make_conversation, make_turns):
    conversation = make_conversation(persona="clipboard", title="List")
    make_turns(conversation, ("user", "note: buy thread"), ("assistant", "Noted: buy thread."))
    document = archive_upload(client, upload, "list.md", export_markdown(client, conversation))
    assert turns(document) == [("AUMA", "user", "note: buy thread"), ("Clipboard", "assistant", "Noted: buy thread.")]


def test_branch_bubble_in_a_markdown_export_is_not_ingested(client, upload, make_conversation, make_turns):
    source = make_conversation(title="Evening walk")
    make_turns(
        source,
        *[(("user", "assistant")[i % 2], f"source turn {i}\n\nwith a second paragraph") for i in range(10)],
    )
    destination, _ = conversation_branch(conversation_id=source.id, idempotency_key="round-trip")
    make_turns(destination, ("user", "branch question"), ("assistant", "branch answer"))
    markdown = export_markdown(client, destination).decode()
    assert "source turn 9" in markdown  # the bubble is in the export…
    document = archive_upload(client, upload, "branch.md", markdown.encode())
    # …but not in the archive as speech.
    assert turns(document) == [("AUMA", "user", "branch question"), ("Elion Voicefire", "assistant", "branch answer")]
    assert Message.objects.filter(conversation=destination, kind=MessageKind.HANDOFF_ARTIFACT).count() == 1
