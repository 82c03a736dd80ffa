"""The Archive page's Claude.ai import without JavaScript: the summary as a flash message, the export's
memories shown once, as a form for the memory import preview (nothing is added until the owner confirms)."""

from __future__ import annotations

import html
import json
import re

import pytest

from archive.models import ArchiveDocument
from memories.models import Memory
from tests.archive import claude_export as export
from tests.archive.conftest import make_zip

pytestmark = pytest.mark.django_db

IMPORT_API = "/api/archive/import/claude/"


def suggestion_card(page: str) -> str:
    match = re.search(r'<div class="[^"]*"\s*(hidden)?\s*data-memory-suggestions>(.*?)</div>', page, re.S)
    assert match, "the page has no memory suggestion card"
    return ("hidden " if match.group(1) else "") + match.group(2)


def test_the_page_offers_the_claude_import_form(client):
    page = client.get("/archive/").content.decode()
    assert "data-claude-import" in page and 'data-api="/api/archive/import/claude/"' in page
    assert suggestion_card(page).startswith("hidden ")


def test_a_posted_import_flashes_its_summary_and_shows_the_memories_once(client, upload):
    response = client.post("/archive/", {"action": "import_claude", "collection": "incarnations",
                                         "file": upload("claude.zip", make_zip(export.members()))}, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Imported 2 Claude.ai conversation(s) with 7 message(s); 0 already in the archive, 3 skipped." in page
    assert "#3 Corrupted tide: it has no list of messages (chat_messages)" in page
    assert set(ArchiveDocument.objects.values_list("collection", flat=True)) == {"incarnations"}
    card = suggestion_card(page)
    assert not card.startswith("hidden ")
    assert 'action="/memories/import/"' in card
    posted = re.search(r"<textarea name=\"text\" hidden data-memory-suggestion-text>(.*?)</textarea>", card, re.S)
    suggestions = json.loads(html.unescape(posted.group(1)))
    assert suggestions == export.SUGGESTIONS
    assert not Memory.objects.exists()
    # The card's form is the memory import's preview step: it shows them and saves nothing.
    preview = client.post("/memories/import/", {"action": "preview", "format": "json", "text": json.dumps(suggestions)})
    assert preview.status_code == 200 and "Preview: 4 memories" in preview.content.decode()
    assert not Memory.objects.exists()
    # Shown once: the next visit does not offer them again.
    assert suggestion_card(client.get("/archive/").content.decode()).startswith("hidden ")


def test_a_refused_file_is_an_error_on_the_page(client, upload):
    response = client.post("/archive/", {"action": "import_claude", "file": upload("conversations.json", b"[1]")})
    assert response.status_code == 400
    assert "holds no Claude.ai conversations" in response.content.decode()


def test_the_document_page_shows_an_attached_files_text_as_the_file_not_as_speech(client, upload):
    client.post(IMPORT_API, {"file": upload("claude.zip", make_zip(export.members()))})
    lantern = ArchiveDocument.objects.get(title="Lantern by the sea")
    page = client.get(f"/archive/{lantern.pk}/").content.decode()
    assert "Chunk 2 · Attachment: lantern-notes.txt</p>" in page  # right after the turn it came with
    assert "Attachment: lantern-notes.txt said" not in page
    assert "AUMA said" in page and html.escape(export.NOTES) in page
