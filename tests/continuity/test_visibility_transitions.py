"""Visibility transitions (seed, "Hidden Folders and Continuity Quarantine", "Continuity
Shield", "Explicit Historical Access"; issue 6).

* A conversation leaving quarantine (folder unhidden or deleted, moved out of a
  hidden folder, restored) becomes Continuity-Shielded; only the release clears it.
* Every transition refreshes affected stored prompts before it reports success:
  the assertions read the stored prompt right after the API call returns.
* Deliberate access stays: quarantined and shielded conversations open, read
  and branch; a trashed one refuses sends.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from continuity.rules.eligibility import VisibilityState, visibility_state
from continuity.rules.prompt_store import static_prompt_ensure
from transcript.access import access_conversation
from transcript.models import Conversation, Folder, Message, Role

pytestmark = pytest.mark.django_db

SOURCE_WORDS = "the lighthouse keeper's ledger"


@pytest.fixture
def client():
    return Client()


def api(client, method: str, path: str, body: dict | None = None, status: int = 200) -> dict:
    response = getattr(client, method)(path, body or {}, content_type="application/json")
    assert response.status_code == status, response.content
    return response.json()


def stored_prompt(conversation_id) -> str:
    return Message.objects.get(conversation_id=conversation_id, role=Role.SYSTEM).content


def store_prompt(conversation_id) -> str:
    """Store the static prompt the way the first send does (under the row lock)."""
    with transaction.atomic():
        return static_prompt_ensure(access_conversation(conversation_id, lock=True)).content


@pytest.fixture
def linked(client, thread):
    """A source S in a visible folder, and a destination D whose stored prompt carries S's handoff."""
    folder = Folder.objects.create(name="Letters")
    source = thread(("user", f"Remember {SOURCE_WORDS}?"), ("assistant", "Every page of it."), title="Source")
    api(client, "patch", f"/api/conversations/{source.id}/", {"folder_id": folder.id})
    destination_id = api(client, "post", "/api/conversations/", {"persona": "elion"}, status=201)["id"]
    assert store_prompt(destination_id).count(SOURCE_WORDS) == 1
    return source, folder, destination_id


# --- the state machine --------------------------------------------------------------------


def test_trash_restore_release_answer_the_conversation(client, thread):
    conversation = thread(("user", "q"), ("assistant", "r"))
    base = f"/api/conversations/{conversation.id}"
    body = api(client, "post", f"{base}/trash/")
    assert body["id"] == str(conversation.id) and (body["trashed"], body["shielded"]) == (True, False)
    body = api(client, "post", f"{base}/restore/")
    assert (body["trashed"], body["shielded"]) == (False, True)
    body = api(client, "post", f"{base}/release-shield/")
    assert (body["trashed"], body["shielded"]) == (False, False)
    # Repeating an action is harmless (a retried request).
    assert api(client, "post", f"{base}/release-shield/")["shielded"] is False
    assert api(client, "post", f"{base}/restore/")["shielded"] is False


def test_actions_on_an_unknown_conversation_are_404(client):
    for action in ("trash", "restore", "release-shield"):
        response = client.post(f"/api/conversations/00000000-0000-0000-0000-000000000000/{action}/")
        assert response.status_code == 404 and response.json()["error"] == "conversation_not_found"
    assert client.post("/api/conversations/not-a-uuid/trash/").status_code == 404


def test_release_is_refused_while_quarantined(client, thread):
    conversation = thread(("user", "q"))
    api(client, "post", f"/api/conversations/{conversation.id}/trash/")
    body = api(client, "post", f"/api/conversations/{conversation.id}/release-shield/", status=409)
    assert body["error"] == "conversation_quarantined"
    hidden = Folder.objects.create(name="Quiet", hidden=True)
    other = thread(("user", "q"), folder_id=hidden.id)
    assert client.post(f"/api/conversations/{other.id}/release-shield/").status_code == 409


def test_unhiding_a_folder_shields_its_conversations_and_hiding_does_not_clear_shields(client, thread):
    folder = api(client, "post", "/api/folders/", {"name": "Quiet"}, status=201)
    inside = [thread(("user", f"q{i}"), folder_id=folder["id"]) for i in range(2)]
    outside = thread(("user", "elsewhere"))
    assert api(client, "patch", f"/api/folders/{folder['id']}/", {"hidden": True}) == {**folder, "hidden": True}
    assert [visibility_state(Conversation.objects.get(pk=c.pk)) for c in inside] == [VisibilityState.HIDDEN] * 2
    assert api(client, "patch", f"/api/folders/{folder['id']}/", {"hidden": False})["hidden"] is False
    assert all(Conversation.objects.get(pk=c.pk).shielded for c in inside)
    assert not Conversation.objects.get(pk=outside.pk).shielded
    api(client, "patch", f"/api/folders/{folder['id']}/", {"hidden": True})
    assert all(Conversation.objects.get(pk=c.pk).shielded for c in inside)


def test_moving_out_of_a_hidden_folder_shields_other_moves_do_not(client, thread):
    hidden = Folder.objects.create(name="Hidden", hidden=True)
    other_hidden = Folder.objects.create(name="Also hidden", hidden=True)
    visible = Folder.objects.create(name="Visible")
    conversation = thread(("user", "q"))
    path = f"/api/conversations/{conversation.id}/"
    assert api(client, "patch", path, {"folder_id": visible.id})["shielded"] is False
    assert api(client, "patch", path, {"folder_id": None})["shielded"] is False
    assert api(client, "patch", path, {"folder_id": hidden.id})["shielded"] is False
    assert api(client, "patch", path, {"folder_id": other_hidden.id})["shielded"] is False  # still quarantined
    assert api(client, "patch", path, {"folder_id": visible.id})["shielded"] is True
    assert api(client, "patch", path, {"title": "Renamed"})["shielded"] is True  # only the release clears it


def test_deleting_a_hidden_folder_shields_its_conversations(client, thread):
    hidden = Folder.objects.create(name="Hidden", hidden=True)
    visible = Folder.objects.create(name="Visible")
    in_hidden = thread(("user", "q"), folder_id=hidden.id)
    in_visible = thread(("user", "q"), folder_id=visible.id)
    assert client.delete(f"/api/folders/{hidden.id}/").status_code == 204
    assert client.delete(f"/api/folders/{visible.id}/").status_code == 204
    in_hidden.refresh_from_db()
    in_visible.refresh_from_db()
    assert (in_hidden.folder_id, in_hidden.shielded) == (None, True)
    assert (in_visible.folder_id, in_visible.shielded) == (None, False)


def test_restoring_inside_a_hidden_folder_keeps_it_hidden(client, thread):
    hidden = Folder.objects.create(name="Hidden", hidden=True)
    conversation = thread(("user", "q"), folder_id=hidden.id)
    api(client, "post", f"/api/conversations/{conversation.id}/trash/")
    api(client, "post", f"/api/conversations/{conversation.id}/restore/")
    assert visibility_state(Conversation.objects.get(pk=conversation.pk)) == VisibilityState.HIDDEN


# --- every transition refreshes affected prompts before it reports success -------------------


QUARANTINE = {
    "trash": lambda client, source, folder: api(client, "post", f"/api/conversations/{source.id}/trash/"),
    "hide folder": lambda client, source, folder: api(client, "patch", f"/api/folders/{folder.id}/", {"hidden": True}),
    "move into hidden folder": lambda client, source, folder: api(
        client, "patch", f"/api/conversations/{source.id}/",
        {"folder_id": Folder.objects.create(name="Vault", hidden=True).id},
    ),
}
LEAVE = {
    "trash": lambda client, source, folder: api(client, "post", f"/api/conversations/{source.id}/restore/"),
    "hide folder": lambda client, source, folder: api(client, "patch", f"/api/folders/{folder.id}/", {"hidden": False}),
    "move into hidden folder": lambda client, source, folder: api(
        client, "patch", f"/api/conversations/{source.id}/", {"folder_id": folder.id}
    ),
}


@pytest.mark.parametrize("transition", list(QUARANTINE))
def test_each_transition_refreshes_the_destination_prompt_before_returning(client, linked, transition):
    source, folder, destination_id = linked
    QUARANTINE[transition](client, source, folder)
    # Immediately after the response: the stored prompt no longer carries the handoff.
    prompt = stored_prompt(destination_id)
    assert SOURCE_WORDS not in prompt and "VERBATIM_EXCHANGE_" not in prompt
    assert "## Continuity from a prior thread" not in prompt

    LEAVE[transition](client, source, folder)
    source.refresh_from_db()
    assert source.shielded and not source.trashed
    assert SOURCE_WORDS not in stored_prompt(destination_id)  # shielded: still out

    body = api(client, "post", f"/api/conversations/{source.id}/release-shield/")
    assert body["shielded"] is False
    assert stored_prompt(destination_id).count(SOURCE_WORDS) == 1  # released: back, before the response


def test_release_refreshes_every_affected_thread_and_only_those(client, thread):
    source = thread(("user", f"Remember {SOURCE_WORDS}?"), ("assistant", "Yes."))
    destinations = [api(client, "post", "/api/conversations/", {}, status=201)["id"] for _ in range(3)]
    for destination_id in destinations:
        store_prompt(destination_id)
    api(client, "post", f"/api/conversations/{source.id}/trash/")
    assert all(SOURCE_WORDS not in stored_prompt(d) for d in destinations)
    api(client, "post", f"/api/conversations/{source.id}/restore/")
    api(client, "post", f"/api/conversations/{source.id}/release-shield/")
    assert all(stored_prompt(d).count(SOURCE_WORDS) == 1 for d in destinations)


def test_a_branch_from_a_shielded_source_stays_out_of_its_prompt_until_release(client, thread):
    source = thread(("user", f"Remember {SOURCE_WORDS}?"), ("assistant", "Yes."))
    api(client, "post", f"/api/conversations/{source.id}/trash/")
    api(client, "post", f"/api/conversations/{source.id}/restore/")
    response = client.post(f"/api/conversations/{source.id}/branch/", HTTP_IDEMPOTENCY_KEY="k1")
    assert response.status_code == 201  # deliberate access
    branch_id = response.json()["id"]
    assert SOURCE_WORDS not in store_prompt(branch_id)
    api(client, "post", f"/api/conversations/{source.id}/release-shield/")
    assert stored_prompt(branch_id).count(SOURCE_WORDS) == 1


# --- deliberate access stays ---------------------------------------------------------------------


@pytest.mark.parametrize("state", ["hidden", "trashed", "shielded"])
def test_quarantined_and_shielded_conversations_open_read_and_branch(client, thread, state):
    conversation = thread(("user", "deliberate question"), ("assistant", "deliberate answer"))
    if state == "hidden":
        api(client, "patch", f"/api/conversations/{conversation.id}/",
            {"folder_id": Folder.objects.create(name="Quiet", hidden=True).id})
    else:
        api(client, "post", f"/api/conversations/{conversation.id}/trash/")
        if state == "shielded":
            api(client, "post", f"/api/conversations/{conversation.id}/restore/")
    assert api(client, "get", f"/api/conversations/{conversation.id}/")["id"] == str(conversation.id)
    messages = api(client, "get", f"/api/conversations/{conversation.id}/messages/")["results"]
    assert [m["content"] for m in messages] == ["deliberate question", "deliberate answer"]
    page = client.get(f"/c/{conversation.id}/")
    assert page.status_code == 200 and "deliberate answer" in page.content.decode()
    assert client.get(f"/api/conversations/{conversation.id}/export/?format=markdown").status_code == 200
    branch = client.post(f"/api/conversations/{conversation.id}/branch/", HTTP_IDEMPOTENCY_KEY=f"k-{state}")
    assert branch.status_code == 201
    assert visibility_state(Conversation.objects.get(pk=conversation.pk)) == VisibilityState(state)


def test_a_trashed_conversation_refuses_sends(client, thread):
    conversation = thread(("user", "q"), ("assistant", "r"))
    api(client, "post", f"/api/conversations/{conversation.id}/trash/")
    response = client.post(f"/api/conversations/{conversation.id}/messages/?stream=false", {"content": "hello"},
                           content_type="application/json")
    assert response.status_code == 409 and response.json()["error"] == "conversation_trashed"


# --- the admin uses the same services -------------------------------------------------------------


def test_admin_actions_and_folder_edits_are_transitions(client, linked):
    source, folder, destination_id = linked
    changelist = "/admin/transcript/conversation/"
    response = client.post(changelist, {"action": "trash_selected", "_selected_action": [str(source.id)]})
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.trashed and SOURCE_WORDS not in stored_prompt(destination_id)
    client.post(changelist, {"action": "restore_selected", "_selected_action": [str(source.id)]})
    source.refresh_from_db()
    assert (source.trashed, source.shielded) == (False, True)
    client.post(changelist, {"action": "release_shield_selected", "_selected_action": [str(source.id)]})
    assert stored_prompt(destination_id).count(SOURCE_WORDS) == 1

    response = client.post(f"/admin/transcript/folder/{folder.id}/change/", {"name": "Letters", "hidden": "on"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert SOURCE_WORDS not in stored_prompt(destination_id)
    client.post(f"/admin/transcript/folder/{folder.id}/change/", {"name": "Letters"})
    source.refresh_from_db()
    assert source.shielded and SOURCE_WORDS not in stored_prompt(destination_id)
