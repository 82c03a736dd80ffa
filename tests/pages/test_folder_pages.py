"""Folder rename and delete from the pages (issue 19, "The smaller ones"), without a browser.

Delete keeps every conversation: they move to no folder; leaving a hidden
folder they leave quarantine, so they are Continuity-Shielded (seed,
"Hidden Folders and Continuity Quarantine", "Continuity Shield"). The page
and its confirmation say so before, the flash message after.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from continuity.rules.prompt_store import static_prompt_ensure
from transcript.access import access_conversation
from transcript.models import Conversation, Folder, Message, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(make_conversation, make_turns):
    def make(title, folder=None):
        conversation = make_conversation(title=title, folder_id=folder.pk if folder else None)
        make_turns(conversation, ("user", f"{title} question"), ("assistant", f"{title} answer"))
        return conversation

    return make


def reload(conversation) -> Conversation:
    return Conversation.objects.get(pk=conversation.pk)


def test_rename_a_folder_from_the_sidebar(client, seeded):
    folder = Folder.objects.create(name="Letters")
    seeded("Inside", folder=folder)
    chat = client.get(f"/c/{Conversation.objects.get().id}/").content.decode()
    assert f'action="/folders/{folder.id}/rename/"' in chat and f'action="/folders/{folder.id}/delete/"' in chat
    response = client.post(f"/folders/{folder.id}/rename/", {"name": "  Old letters  ", "next": "/trash/"}, follow=True)
    assert response.redirect_chain[-1][0] == "/trash/"
    assert "Folder renamed “Old letters”." in response.content.decode()
    # The message list renders as markup only: no template comment or tag leaks into the page.
    assert "{#" not in response.content.decode() and "{%" not in response.content.decode()
    assert 'aria-label="Dismiss this message"' in response.content.decode()
    assert Folder.objects.get(pk=folder.pk).name == "Old letters"


def test_a_folder_cannot_be_renamed_to_nothing(client):
    folder = Folder.objects.create(name="Letters")
    response = client.post(f"/folders/{folder.id}/rename/", {"name": "   "}, follow=True)
    assert response.status_code == 200 and "A folder needs a name." in response.content.decode()
    assert Folder.objects.get(pk=folder.pk).name == "Letters"


def test_deleting_a_visible_folder_keeps_its_conversations_unchanged(client, seeded):
    folder = Folder.objects.create(name="Letters")
    inside = [seeded("One", folder=folder), seeded("Two", folder=folder)]
    chat = client.get(f"/c/{inside[0].id}/").content.decode()
    assert "Delete the folder “Letters”? Its conversations are kept and move to Chats" in chat
    response = client.post(f"/folders/{folder.id}/delete/", follow=True)
    assert "Folder “Letters” deleted. Its 2 conversations moved to Chats, unchanged." in response.content.decode()
    assert not Folder.objects.exists()
    assert [(reload(c).folder_id, reload(c).shielded) for c in inside] == [(None, False), (None, False)]


def test_deleting_a_hidden_folder_says_its_conversations_leave_quarantine_shielded(client, seeded):
    vault = Folder.objects.create(name="Vault", hidden=True)
    inside = seeded("Secret", folder=vault)
    other = seeded("Today")
    with transaction.atomic():
        static_prompt_ensure(access_conversation(other.pk, lock=True))
    page = client.get("/folders/hidden/").content.decode()
    assert "Delete the hidden folder “Vault”? Its conversations are kept: they move to Chats and leave quarantine " \
           "Continuity-Shielded" in page
    response = client.post(f"/folders/{vault.id}/delete/", {"next": "/folders/hidden/"}, follow=True)
    html = response.content.decode()
    assert "Its one conversation moved to Chats and left quarantine Continuity-Shielded" in html
    assert (reload(inside).folder_id, reload(inside).shielded) == (None, True)
    # Shielded: still out of automatic continuity, so no other thread's prompt picked it up.
    assert "Secret question" not in Message.objects.get(conversation=other, role=Role.SYSTEM).content


def test_deleting_an_empty_folder_says_so(client):
    folder = Folder.objects.create(name="Empty")
    response = client.post(f"/folders/{folder.id}/delete/", follow=True)
    assert "Folder “Empty” deleted. It held no conversations." in response.content.decode()


@pytest.mark.parametrize("path", ["/folders/999/rename/", "/folders/999/delete/"])
def test_a_missing_folder_is_a_flash_not_an_error_page(client, path):
    response = client.post(path, {"name": "x"}, follow=True)
    assert response.status_code == 200 and "No folder has that id." in response.content.decode()


@pytest.mark.parametrize("path", ["/folders/1/rename/", "/folders/1/delete/"])
def test_folder_writes_are_post_only(client, path):
    Folder.objects.create(name="Letters")
    assert client.get(path).status_code == 405
    assert Folder.objects.filter(name="Letters").exists()
