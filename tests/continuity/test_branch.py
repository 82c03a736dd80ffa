"""Branch / Fresh Chat (seed "Layer 3", "Branch / Fresh Chat", "Historical branch bubbles")."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connection
from django.template.loader import render_to_string
from django.test import Client

from continuity.models import ThreadHandoff
from continuity.services import branching
from conversations.web.page_selectors import bubbles_for
from elion.base.assistant_settings import assistant_settings_get
from tests.support.factories import turns_append
from transcript.models import Conversation, ConversationOrigin, Folder, IdempotentAction, Message, MessageKind, Role

pytestmark = pytest.mark.django_db


def branch(client: Client, conversation_id, key: str | None = "key-1"):
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post(f"/api/conversations/{conversation_id}/branch/", headers=headers)


@pytest.fixture
def source(thread):
    return thread(
        *[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(10)], title="Evening *walk*"
    )


def test_branch_requires_idempotency_key(source):
    response = branch(Client(), source.id, key=None)
    assert response.status_code == 400
    assert response.json()["error"] == "idempotency_key_required"
    assert branch(Client(), source.id, key="   ").json()["error"] == "idempotency_key_required"
    assert not Conversation.objects.filter(origin=ConversationOrigin.BRANCH).exists()


def test_branch_creates_destination_and_visible_handoff_bubble_together(source):
    response = branch(Client(), source.id)
    assert response.status_code == 201
    body = response.json()
    assert body["origin"] == "branch" and body["persona"] == "elion"
    source_ids = [str(m.id) for m in Message.objects.filter(conversation=source).order_by("seq")][-8:]
    assert body["handoff"] == {"source_conversation_id": str(source.id), "source_message_ids": source_ids}

    listed = Client().get(f"/api/conversations/{body['id']}/messages/").json()["results"]
    assert len(listed) == 1
    bubble = listed[0]
    assert bubble["role"] == "assistant" and bubble["kind"] == "handoff_artifact"
    assert bubble["parent_id"] is None and bubble["status"] == "complete"
    assert bubble["metadata"] == {"source_conversation_id": str(source.id), "source_message_ids": source_ids}
    destination = Conversation.objects.get(pk=body["id"])
    assert str(destination.head_id) == bubble["id"]
    # Heading with the escaped title, then the exact final eight: no synopsis, nothing older.
    assert bubble["content"].startswith("### Continued from “Evening \\*walk\\*”\n\n")
    assert "AUMA said:\nturn 2\n\n---\n\nElion Voicefire said:\nturn 3" in bubble["content"]
    assert "turn 1\n" not in bubble["content"] and bubble["content"].endswith("turn 9")
    assert ThreadHandoff.objects.get(destination=destination).source == source


def test_branch_retry_with_same_key_returns_same_conversation(source):
    client = Client()
    first = branch(client, source.id, key="retry-key")
    again = branch(client, source.id, key="retry-key")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert Conversation.objects.filter(origin=ConversationOrigin.BRANCH).count() == 1
    assert Message.objects.filter(kind=MessageKind.HANDOFF_ARTIFACT).count() == 1
    other = branch(client, source.id, key="another-action")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def test_conversation_and_bubble_succeed_or_fail_together(source, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(branching, "handoff_row_create", broken)
    before = (Conversation.objects.count(), Message.objects.count())
    with pytest.raises(RuntimeError):
        branching.conversation_branch(conversation_id=source.id, idempotency_key="k")
    assert (Conversation.objects.count(), Message.objects.count()) == before
    assert not IdempotentAction.objects.exists()


def test_branch_from_a_source_without_messages_is_refused(make_conversation):
    empty = make_conversation(persona="elion")
    response = branch(Client(), empty.id)
    assert response.status_code == 409 and response.json()["error"] == "branch_source_empty"
    assert branch(Client(), uuid.uuid4()).status_code == 404


@pytest.mark.parametrize("change", ["hidden_folder", "trashed", "shielded"])
def test_explicit_branch_from_hidden_trashed_or_shielded_source_is_allowed(source, change):
    if change == "hidden_folder":
        source.folder = Folder.objects.create(name="Quiet", hidden=True)
    else:
        setattr(source, change, True)
    source.save()
    response = branch(Client(), source.id)
    assert response.status_code == 201
    destination = Conversation.objects.get(pk=response.json()["id"])
    assert Message.objects.get(conversation=destination).kind == MessageKind.HANDOFF_ARTIFACT
    # Deliberate access made the bubble; automatic injection still honours the boundary.
    from continuity.rules.thread_handoff_store import handoff_block_for

    assert handoff_block_for(destination) == ""


def test_clipboard_branch_keeps_persona_and_labels(thread):
    source = thread(("user", "hello clipboard"), ("assistant", "noted"), persona="clipboard")
    body = branch(Client(), source.id).json()
    assert body["persona"] == "clipboard"
    bubble = Message.objects.get(conversation_id=body["id"])
    assert "Clipboard said:\nnoted" in bubble.content


@pytest.mark.django_db(transaction=True)
def test_branch_first_request_carries_handoff_in_static_prompt_not_as_history(source, scripted_provider):
    destination_id = branch(Client(), source.id).json()["id"]
    response = Client().post(
        f"/api/conversations/{destination_id}/messages/?stream=false", {"content": "Continuing"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    body = scripted_provider.requests[0].body
    roles = [item["role"] for item in body["input"]]
    assert roles == ["system", "user"]  # the bubble travels in the prompt, not as assistant speech
    system = body["input"][0]["content"]
    assert 'Elion Voicefire said: "turn 9"' in system and "VERBATIM_EXCHANGE_" in system
    assert "Continued from" not in system and "Evening" not in system


def test_handoff_artifact_never_feeds_a_later_handoff(source, make_turns, thread):
    destination = Conversation.objects.get(pk=branch(Client(), source.id).json()["id"])
    # A later branch of the branch, before anyone spoke in it: nothing to carry.
    assert branch(Client(), destination.id, key="k2").status_code == 409
    make_turns(destination, ("user", "new words"), ("assistant", "new reply"))
    second = Conversation.objects.get(pk=branch(Client(), destination.id, key="k3").json()["id"])
    bubble = Message.objects.get(conversation=second)
    assert "new words" in bubble.content and "new reply" in bubble.content
    # Its one heading names its own source (the branch, titled "Evening *walk* (2)"); the first bubble's stays out.
    assert "turn 9" not in bubble.content and bubble.content.count("Continued from") == 1
    assert bubble.content.startswith("### Continued from “Evening \\*walk\\* \\(2\\)”")
    # Automatic New Chat continuity reads the branch the same way.
    # (`second` holds only its bubble, so the prior thread is `destination`.)
    row = ThreadHandoff.objects.get(destination=thread())
    assert row.source == destination
    assert row.handoff == "AUMA said:\nnew words\n\n---\n\nElion Voicefire said:\nnew reply"


def test_bubble_stays_in_exports(source):
    destination_id = branch(Client(), source.id).json()["id"]
    exported = json.loads(Client().get(f"/api/conversations/{destination_id}/export/?format=json").getvalue())
    assert [m["kind"] for m in exported["messages"]] == ["handoff_artifact"]
    markdown = Client().get(f"/api/conversations/{destination_id}/export/?format=markdown").getvalue().decode()
    assert "turn 9" in markdown


def test_rewound_away_turns_never_reach_a_branch(source, make_turns):
    from conversations.services.threads.thread_writes import conversation_rewind

    make_turns(source, ("user", "abandoned question"), ("assistant", "abandoned answer"))
    turn_9 = Message.objects.get(conversation=source, content="turn 9")
    conversation_rewind(conversation_id=source.id, message_id=turn_9.id)
    bubble = Message.objects.get(conversation_id=branch(Client(), source.id).json()["id"])
    assert "abandoned" not in bubble.content and bubble.content.endswith("turn 9")


def test_handoff_bubble_template_links_to_source(source):
    destination = Conversation.objects.get(pk=branch(Client(), source.id).json()["id"])
    (bubble,) = bubbles_for(destination, [destination.head], assistant_settings_get())
    html = render_to_string("chat/_handoff_bubble.html", {"bubble": bubble})
    assert f'href="/c/{source.id}/"' in html and "Open source conversation" in html
    assert "Evening *walk*" in html.replace("\\", "") and "<em>walk</em>" not in html
    assert 'data-kind="handoff_artifact"' in html


def test_branch_button_keeps_one_retry_identity_per_source_until_resolved(source):
    html = render_to_string("chat/_branch_button.html", {"conversation": source})
    assert f'data-branch-source="{source.id}"' in html
    # The script lives in static/ (Content-Security-Policy: no inline script); the page loads it.
    assert 'src="/static/js/branch_button.js"' in html
    script = (Path(__file__).resolve().parents[2] / "static" / "js" / "branch_button.js").read_text()
    assert "sessionStorage" in script and "Idempotency-Key" in script
    assert "elion.branch.pending.${sourceId}" in script and "removeItem" in script


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not django_settings.DATABASE_IS_POSTGRES, reason="real concurrent transactions need PostgreSQL")
def test_concurrent_branch_clicks_create_one_branch(thread):
    source = thread(("user", "q"), ("assistant", "r"))
    clicks = 20
    barrier = threading.Barrier(clicks)
    results: list[tuple[int, str]] = []
    errors: list[BaseException] = []

    def click():
        try:
            barrier.wait(timeout=30)
            response = branch(Client(), source.id, key="double-click")
            results.append((response.status_code, response.json().get("id")))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=click) for _ in range(clicks)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not errors, errors
    codes = sorted(code for code, _ in results)
    assert codes == [200] * (clicks - 1) + [201]
    assert len({conversation_id for _, conversation_id in results}) == 1
    assert Conversation.objects.filter(origin=ConversationOrigin.BRANCH).count() == 1
    assert Message.objects.filter(kind=MessageKind.HANDOFF_ARTIFACT).count() == 1
    assert ThreadHandoff.objects.filter(destination__origin=ConversationOrigin.BRANCH).count() == 1


# --- Historical branch bubbles ---------------------------------------------


def legacy_branch(make_conversation, source, *pairs, message_ids=None):
    """A branch made before artifacts were marked: an ordinary assistant seed first."""
    destination = make_conversation(persona="elion", origin=ConversationOrigin.BRANCH)
    ThreadHandoff.objects.create(
        destination=destination, source=source, handoff="", summary="old generated summary",
        source_message_ids=message_ids or [],
    )
    turns_append(destination, *pairs, parent=None, binding=None)  # made before bindings were recorded
    return destination


def test_historical_seed_marked_only_when_branch_provenance_identifies_it(make_conversation, source):
    seeded = legacy_branch(make_conversation, source, ("assistant", "Here is where we were…"), ("user", "go on"))
    call_command("mark_historical_branch_artifacts", verbosity=0)
    seed = Message.objects.filter(conversation=seeded).order_by("seq").first()
    assert seed.kind == MessageKind.HANDOFF_ARTIFACT
    # Provenance copied, never invented: the legacy row recorded no message ids.
    assert seed.metadata == {"source_conversation_id": str(source.id)}
    assert Message.objects.filter(conversation=seeded, role=Role.USER).get().kind == MessageKind.ORDINARY


def test_historical_seed_keeps_recorded_source_message_ids(make_conversation, source):
    ids = [str(m.id) for m in Message.objects.filter(conversation=source).order_by("seq")][-8:]
    seeded = legacy_branch(make_conversation, source, ("assistant", "seed"), message_ids=ids)
    call_command("mark_historical_branch_artifacts", verbosity=0)
    assert Message.objects.get(conversation=seeded).metadata["source_message_ids"] == ids


def test_deleted_seed_with_remaining_turns_marks_nothing(make_conversation, source):
    seeded = legacy_branch(make_conversation, source, ("assistant", "seed"), ("user", "q"), ("assistant", "a"))
    seed = Message.objects.filter(conversation=seeded).order_by("seq").first()
    # Deleting the seed (a root) in this tree removes its subtree; keep the turns as a new root chain.
    Message.objects.filter(parent=seed).update(parent=None)
    seed.delete()
    call_command("mark_historical_branch_artifacts", verbosity=0)
    assert not Message.objects.filter(kind=MessageKind.HANDOFF_ARTIFACT).exists()


def test_marking_never_classifies_from_prose(make_conversation, thread):
    # Reads exactly like a branch bubble, but no branch provenance: untouched.
    lookalike = thread(("assistant", "### Continued from “x”\n\nAUMA said:\nhi"))
    # Branch origin but no provenance row: untouched too.
    orphan = make_conversation(persona="elion", origin=ConversationOrigin.BRANCH)
    turns_append(orphan, ("assistant", "seed"), parent=None, binding=None)
    call_command("mark_historical_branch_artifacts", verbosity=0)
    assert not Message.objects.filter(kind=MessageKind.HANDOFF_ARTIFACT).exists()
    assert lookalike.messages.count() == 1


def test_marking_is_idempotent_and_skips_new_artifacts(make_conversation, source):
    legacy_branch(make_conversation, source, ("assistant", "seed"))
    branch(Client(), source.id)
    call_command("mark_historical_branch_artifacts", verbosity=0)
    call_command("mark_historical_branch_artifacts", verbosity=0)
    assert Message.objects.filter(kind=MessageKind.HANDOFF_ARTIFACT).count() == 2
    from continuity.services.branch_history import historical_branch_artifacts_mark

    assert historical_branch_artifacts_mark(dry_run=True) == 0
