"""Visibility pages without a browser: the no-JS forms, what the HTML says, status codes."""

from __future__ import annotations

import re

import pytest

from tests.support.factories import turns_append
from transcript.models import Conversation, Folder

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(make_conversation, make_turns):
    def make(title, *pairs, **kwargs):
        conversation = make_conversation(title=title, **kwargs)
        make_turns(conversation, *(pairs or [("user", f"{title} question"), ("assistant", f"{title} answer")]))
        return conversation

    return make


def page_words(html: str) -> str:
    """The page's text without its tags: a search excerpt marks its matched words (`<mark>`)."""
    return re.sub(r"<[^>]+>", "", html)


def reload(conversation) -> Conversation:
    return Conversation.objects.get(pk=conversation.pk)


def test_trash_restore_release_and_move_work_without_javascript(client, seeded):
    conversation = seeded("Plain")
    response = client.post(f"/c/{conversation.id}/trash/")
    assert response.status_code == 302 and response.url == f"/c/{conversation.id}/"
    assert reload(conversation).trashed
    page = client.get(f"/c/{conversation.id}/").content.decode()
    assert 'data-visibility-banner="trashed"' in page and "Restore this conversation to send" in page

    response = client.post(f"/c/{conversation.id}/restore/", follow=True)
    assert "restored and Continuity-Shielded" in response.content.decode()
    assert (reload(conversation).trashed, reload(conversation).shielded) == (False, True)
    page = client.get(f"/c/{conversation.id}/").content.decode()
    assert "data-shield-badge" in page and "data-release-shield" in page

    response = client.post(f"/c/{conversation.id}/release-shield/", follow=True)
    assert "Shield released" in response.content.decode()
    assert not reload(conversation).shielded

    hidden = Folder.objects.create(name="Vault", hidden=True)
    client.post(f"/c/{conversation.id}/move/", {"folder_id": hidden.id})
    assert reload(conversation).folder_id == hidden.id
    page = client.get(f"/c/{conversation.id}/").content.decode()
    assert 'data-visibility-banner="hidden"' in page and "hidden folder “Vault”" in page
    response = client.post(f"/c/{conversation.id}/move/", {"folder_id": ""}, follow=True)
    assert "Continuity-Shielded until you release it" in response.content.decode()
    assert (reload(conversation).folder_id, reload(conversation).shielded) == (None, True)


def test_refused_release_is_a_flash_not_an_error_page(client, seeded):
    conversation = seeded("Plain")
    client.post(f"/c/{conversation.id}/trash/")
    response = client.post(f"/c/{conversation.id}/release-shield/", follow=True)
    assert response.status_code == 200
    assert "restore it or move it out first" in response.content.decode()


def test_folder_create_and_visibility_toggle(client, seeded):
    response = client.post("/folders/new/", {"name": "  Letters  ", "next": "/settings/"})
    assert response.status_code == 302 and response.url == "/settings/"
    folder = Folder.objects.get(name="Letters")
    inside = seeded("Inside", folder_id=folder.id)
    client.post(f"/folders/{folder.id}/visibility/", {"hidden": "true"})
    assert Folder.objects.get(pk=folder.pk).hidden
    client.post(f"/folders/{folder.id}/visibility/", {"hidden": "false"})
    assert reload(inside).shielded
    response = client.post(f"/folders/{folder.id}/visibility/", {"hidden": "sometimes"}, follow=True)
    assert "hidden must be true or false" in response.content.decode()
    assert client.post("/folders/new/", {"name": " "}, follow=True).status_code == 200
    assert client.post("/folders/999999/visibility/", {"hidden": "true"}, follow=True).status_code == 200
    # Off-site `next` targets are ignored.
    assert client.post("/folders/new/", {"name": "X", "next": "https://evil.example/"}).url == "/"


def test_sidebar_hides_hidden_folders_counts_them_and_tags_shields(client, seeded):
    visible = Folder.objects.create(name="Open folder")
    hidden = Folder.objects.create(name="Closed folder", hidden=True)
    seeded("In open", folder_id=visible.id)
    seeded("In closed", folder_id=hidden.id)
    shielded = seeded("Shielded one")
    trashed = seeded("Trashed one")
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True)
    Conversation.objects.filter(pk=trashed.pk).update(trashed=True)
    html = client.get("/settings/").content.decode()
    assert "Open folder" in html and "In open" in html
    assert "Closed folder" not in html and "In closed" not in html and "Trashed one" not in html
    assert f'data-folder-toggle="{visible.id}"' in html and "data-confirm=" in html
    assert f'data-conversation-link="{shielded.id}"' in html and "data-shield-tag" in html
    assert 'href="/folders/hidden/" data-nav-hidden-folders>Hidden folders <span class="count">1</span>' in html
    assert 'href="/trash/" data-nav-trash>Trash <span class="count">1</span>' in html


def test_hidden_folders_and_trash_pages_list_with_actions(client, seeded):
    hidden = Folder.objects.create(name="Closed folder", hidden=True)
    inside = seeded("In closed", folder_id=hidden.id)
    trashed = seeded("Trashed one")
    client.post(f"/c/{trashed.id}/trash/")
    html = client.get("/folders/hidden/").content.decode()
    assert f'data-hidden-folder="{hidden.id}"' in html and f'href="/c/{inside.id}/"' in html
    assert ">Unhide<" in html and "Continuity-Shielded" in html
    html = client.get("/trash/").content.decode()
    assert f'data-trashed-conversation="{trashed.id}"' in html and "data-restore" in html
    assert "Restore “Trashed one”? It comes back Continuity-Shielded" in html
    client.post(f"/folders/{hidden.id}/visibility/", {"hidden": "false"})
    client.post(f"/c/{trashed.id}/restore/")
    assert "data-hidden-folders-empty" in client.get("/folders/hidden/").content.decode()
    assert "data-trash-empty" in client.get("/trash/").content.decode()


def test_search_page_groups_results_and_reports_bad_input(client, seeded):
    seeded("Heron talk", ("user", "Where did the heron nest?"), ("assistant", "The heron nested by the reeds."))
    shielded = seeded("Quiet heron", ("user", "A heron at dusk"), ("assistant", "ok"))
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True)
    html = client.get("/search/", {"q": "heron"}).content.decode()
    assert html.count("data-search-group=") == 1 and html.count("data-search-hit=") == 2
    assert f'data-search-group="{shielded.id}"' not in html
    html = client.get("/search/", {"q": "heron", "include_shielded": "true"}).content.decode()
    assert html.count("data-search-group=") == 2 and "data-shield-tag" in html
    assert "data-search-empty" in client.get("/search/", {"q": "zebra"}).content.decode()
    response = client.get("/search/", {"q": "x" * 600})
    assert response.status_code == 400 and "data-search-error" in response.content.decode()
    assert client.get("/search/").status_code == 200  # the empty form


def test_a_search_result_can_be_quoted_into_the_message_box(client, seeded):
    source = seeded("Heron talk", ("user", "Where did the heron nest?"), ("assistant", "By the reeds & <water>."))
    current = seeded("Today")
    html = client.get("/search/", {"q": "reeds", "from": str(current.id)}).content.decode()
    assert f'href="/c/{current.id}/?quote=' in html and "Insert into “Today”" in html
    message_id = source.head_id
    page = client.get(f"/c/{current.id}/", {"quote": str(message_id), "q": "reeds"}).content.decode()
    assert "&gt; By the reeds &amp; &lt;water&gt;.\n— from “Heron talk”\n\n</textarea>" in page
    # A bad id quotes nothing and breaks nothing.
    assert client.get(f"/c/{current.id}/", {"quote": "nope"}).status_code == 200


def test_home_never_lands_in_a_hidden_or_trashed_conversation(client, seeded):
    visible = seeded("Visible")
    hidden = seeded("Hidden", folder_id=Folder.objects.create(name="Vault", hidden=True).id)
    trashed = seeded("Trashed")
    Conversation.objects.filter(pk=trashed.pk).update(trashed=True)
    assert hidden and client.get("/").url == f"/c/{visible.id}/"


def test_private_chat_starts_keeps_and_is_searched_only_when_asked_without_javascript(client, seeded):
    response = client.post("/c/new/", {"persona": "elion", "private": "on"})
    chat = Conversation.objects.get()
    assert response.status_code == 302 and response.url == f"/c/{chat.id}/" and chat.private
    seeded("Ordinary", ("user", "a heron by the weir"), ("assistant", "noted"))
    chat_page = client.get(f"/c/{chat.id}/").content.decode()
    assert "data-private-badge" in chat_page and 'data-visibility-banner="private"' in chat_page

    turns_append(chat, ("user", "the heron in private"), ("assistant", "kept quiet"))
    default = page_words(client.get("/search/", {"q": "heron"}).content.decode())
    assert "the heron in private" not in default and "a heron by the weir" in default
    included_page = client.get("/search/", {"q": "heron", "include_private": "true"}).content.decode()
    assert "the heron in private" in page_words(included_page) and "data-private-tag" in included_page

    kept = client.post(f"/c/{chat.id}/keep/")
    assert kept.status_code == 302 and kept.url == f"/c/{chat.id}/"
    assert (reload(chat).private, reload(chat).shielded) == (False, True)
