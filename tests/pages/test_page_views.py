"""Server-rendered pages without a browser: what the HTML says, and status codes."""

from __future__ import annotations

import json
import math
import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.web.page_selectors import sidebar_groups, thread_token_estimate
from elion.models import AssistantSettings
from transcript.leases import streams_interrupt_expired
from transcript.models import Conversation, Folder, Message, MessageStatus, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline(settings):
    settings.OPENAI_API_KEY = None


@pytest.fixture
def keyed(settings):
    settings.OPENAI_API_KEY = "test-key"


def bubble_ids(html: str) -> list[str]:
    return re.findall(r'data-message-id="([0-9a-f-]+)"', html)


def test_chat_page_renders_the_live_branch_only(client, make_conversation, make_turns, keyed):
    conversation = make_conversation(title="Branchy")
    q1, a1, q2, old = make_turns(
        conversation, ("user", "First"), ("assistant", "One"), ("user", "Second"), ("assistant", "Old **reply**")
    )
    # A sibling branch from a1, now live; the old branch stays stored.
    (q2b, a2b) = make_turns(conversation, ("user", "Second, edited"), ("assistant", "New **reply**"), parent=a1)
    conversation.last_seq += 1
    Message.objects.create(conversation=conversation, seq=conversation.last_seq, role=Role.SYSTEM, content="SYSTEM PROMPT")

    html = client.get(f"/c/{conversation.id}/").content.decode()
    assert bubble_ids(html) == [str(m.id) for m in (q1, a1, q2b, a2b)]
    assert "Old" not in html and "SYSTEM PROMPT" not in html
    assert "New <strong>reply</strong>" in html
    # Names come from AssistantSettings (the <template>s after the list hold one more of each).
    rendered = html.split('<template id="tpl-user-message">')[0]
    assert rendered.count('<span class="author">AUMA</span>') == 2
    assert rendered.count('<span class="author">Elion Voicefire</span>') == 2


def test_token_estimate_counts_visible_user_and_assistant_text(client, make_conversation, make_turns, keyed):
    conversation = make_conversation()
    turns = make_turns(conversation, ("user", "x" * 5), ("assistant", "y" * 8), ("user", "é" * 9))
    conversation.last_seq += 1
    Message.objects.create(conversation=conversation, seq=conversation.last_seq, role=Role.SYSTEM, content="z" * 4000)
    expected = math.ceil(5 / 4) + math.ceil(8 / 4) + math.ceil(9 / 4)
    assert thread_token_estimate(turns) == expected == 7
    html = client.get(f"/c/{conversation.id}/").content.decode()
    assert f'data-token-estimate="{expected}"' in html
    assert [int(n) for n in re.findall(r'data-tokens="(\d+)"', html) if n != "0"] == [2, 2, 3]


def test_request_size_details_come_from_the_latest_assistant_reply(client, make_conversation, make_turns, keyed):
    conversation = make_conversation()
    _, first, _, latest = make_turns(
        conversation, ("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d")
    )
    first.metadata = {"diagnostics": {"total_input_tokens": 1}}
    first.save()
    numbers = {
        "history_tokens": 12, "static_prompt_tokens": 340, "handoff_tokens": 90, "handoff_included_in_static": True,
        "dynamic_context_tokens": 7, "tool_definition_tokens": 0, "total_input_tokens": 359,
        "input_budget_tokens": 200000, "remaining_tokens": 199641, "trimmed_messages": 0,
        "estimate_method": "chars_div_4",
    }
    latest.metadata = {"diagnostics": numbers}
    latest.save()
    html = client.get(f"/c/{conversation.id}/").content.decode()
    embedded = re.search(r'<script id="initial-diagnostics" type="application/json">(.*?)</script>', html).group(1)
    assert json.loads(embedded) == numbers
    assert "already included in static prompt" in html
    assert 'data-diag="remaining_tokens">199641<' in html


def test_unknown_conversation_or_message_is_a_404_not_a_500(client, make_conversation, make_turns):
    assert client.get(f"/c/{uuid.uuid4()}/").status_code == 404
    assert client.get("/c/not-a-uuid/").status_code == 404
    conversation = make_conversation()
    other = make_conversation()
    (foreign,) = make_turns(other, ("user", "elsewhere"))
    base = f"/c/{conversation.id}/messages"
    assert client.get(f"{base}/{uuid.uuid4()}/fragment/").status_code == 404
    assert client.get(f"{base}/junk/fragment/").status_code == 404
    assert client.get(f"{base}/{foreign.id}/fragment/").status_code == 404


def test_fragment_renders_one_bubble_with_its_status(client, make_conversation, make_turns):
    conversation = make_conversation(persona="clipboard")
    user, reply = make_turns(conversation, ("user", "<b>hi</b>"), ("assistant", "Hello **there**"))
    reply.status = MessageStatus.FAILED
    reply.error_detail = "The model provider failed (HTTP 500)."
    reply.save()

    response = client.get(f"/c/{conversation.id}/messages/{reply.id}/fragment/")
    assert response.status_code == 200
    assert response["X-Message-Status"] == "failed"
    html = response.content.decode()
    assert html.lstrip().startswith("<article") and bubble_ids(html) == [str(reply.id)]
    assert "<strong>there</strong>" in html
    assert "badge-error" in html and "The model provider failed (HTTP 500)." in html
    assert 'data-action="retry"' in html
    assert '<span class="author">Clipboard</span>' in html  # persona label, not the Elion display name

    html = client.get(f"/c/{conversation.id}/messages/{user.id}/fragment/").content.decode()
    assert "&lt;b&gt;hi&lt;/b&gt;" in html  # user text is escaped plain text
    assert 'data-action="edit"' in html and 'data-parent-id=""' in html


def test_system_message_has_no_fragment(client, make_conversation):
    conversation = make_conversation()
    conversation.last_seq += 1
    prompt = Message.objects.create(conversation=conversation, seq=conversation.last_seq, role=Role.SYSTEM, content="x")
    assert client.get(f"/c/{conversation.id}/messages/{prompt.id}/fragment/").status_code == 404


def test_a_dead_stream_shows_as_interrupted_with_retry(client, make_conversation, make_turns):
    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "hello"), ("assistant", "partial te"))
    reply.status = MessageStatus.STREAMING
    reply.lease_expires_at = timezone.now() - timedelta(seconds=5)
    reply.save()
    html = client.get(f"/c/{conversation.id}/").content.decode()
    assert "Interrupted" in html and "partial te" in html
    assert 'data-streaming="false"' in html
    assert 'data-action="retry"' in html
    # Reads don't write: the page showed it as interrupted; the sweep is what stores it so.
    reply.refresh_from_db()
    assert reply.status == MessageStatus.STREAMING
    assert streams_interrupt_expired() == 1
    reply.refresh_from_db()
    assert reply.status == MessageStatus.INTERRUPTED


def test_a_live_stream_disables_the_composer(client, make_conversation, make_turns):
    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "hello"), ("assistant", "so far"))
    reply.status = MessageStatus.STREAMING
    reply.lease_expires_at = timezone.now() + timedelta(seconds=30)
    reply.save()
    html = client.get(f"/c/{conversation.id}/").content.decode()
    assert 'data-streaming="true"' in html
    assert re.search(r"<textarea[^>]*data-composer-input[^>]*disabled", html.replace("\n", " "))
    assert "badge-live" in html


def test_edit_is_offered_only_where_the_send_pipeline_accepts_the_parent(client, make_conversation, make_turns):
    conversation = make_conversation()
    first, answer, second = make_turns(conversation, ("user", "one"), ("assistant", "two"), ("user", "three"))
    (after_user,) = make_turns(conversation, ("user", "four"), parent=second)
    html = client.get(f"/c/{conversation.id}/").content.decode()
    editable = re.findall(r'data-message-id="([0-9a-f-]+)"(?:(?!</article>).)*data-action="edit"', html, re.S)
    assert editable == [str(first.id), str(second.id)]
    assert str(after_user.id) not in editable


def test_sidebar_groups_by_folder_most_recent_first_without_trash_or_hidden_folders(make_conversation):
    """Hidden folders have their own page (tests/pages/test_visibility_views.py); empty
    visible folders are listed after the others so they can be used and hidden."""
    Folder.objects.create(name="Empty")
    work = Folder.objects.create(name="Work")
    hidden = Folder.objects.create(name="Secret", hidden=True)
    old = make_conversation(title="old unfiled")
    in_work = make_conversation(title="work chat", folder_id=work.id)
    trashed = make_conversation(title="in trash")
    Conversation.objects.filter(pk=trashed.pk).update(trashed=True)
    in_hidden = make_conversation(title="hidden chat", folder_id=hidden.id)
    new = make_conversation(title="new unfiled")
    now = timezone.now()
    for offset, conversation in enumerate([new, in_hidden, in_work, old]):
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=now - timedelta(minutes=offset))

    groups = sidebar_groups()
    assert [(g.name, g.hidden, [c.title for c in g.conversations]) for g in groups] == [
        ("Today", False, ["new unfiled", "old unfiled"]),
        ("Work", False, ["work chat"]),
        ("Empty", False, []),
    ]
    assert in_hidden.folder_id == hidden.id


def test_sidebar_lists_conversations_with_persona_and_links(client, make_conversation, keyed):
    conversation = make_conversation(title="Notes", persona="clipboard")
    html = client.get("/settings/").content.decode()
    assert f'href="/c/{conversation.id}/"' in html
    assert "persona-clipboard" in html
    for link in ('href="/settings/"', 'href="/memories/"', 'href="/admin/"', 'action="/c/new/"'):
        assert link in html
    assert "Log out" not in html  # protection is off


@pytest.mark.parametrize("path", ["/", "/settings/", "/login/"])
def test_demo_banner_on_every_page_when_no_key(client, offline, path):
    html = client.get(path, follow=True).content.decode()
    assert "Offline demo provider" in html
    assert "no OPENAI_API_KEY set; replies are canned" in html


def test_demo_banner_also_on_the_chat_page_and_absent_with_a_key(client, make_conversation, settings):
    conversation = make_conversation()
    settings.OPENAI_API_KEY = None
    assert "Offline demo provider" in client.get(f"/c/{conversation.id}/").content.decode()
    settings.OPENAI_API_KEY = "test-key"
    assert "Offline demo provider" not in client.get(f"/c/{conversation.id}/").content.decode()


def test_empty_state_offers_new_chat_with_a_persona(client, keyed):
    html = client.get("/").content.decode()
    assert "There are no conversations yet" in html
    assert 'value="elion"' in html and 'value="clipboard"' in html
    assert "Hello, AUMA" in html


def test_new_chat_creates_with_the_chosen_persona(client):
    response = client.post("/c/new/", {"persona": "clipboard"})
    conversation = Conversation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/c/{conversation.id}/"
    assert conversation.persona == "clipboard"


def test_settings_post_saves_every_field(client):
    response = client.post(
        "/settings/",
        {"owner_name": " Sam ", "display_name": "Nova", "personality": "playful",
         "custom_instructions": "Be brief.", "web_search": "on"},
    )
    assert response.status_code == 302 and response["Location"] == "/settings/"
    row = AssistantSettings.objects.get(pk=1)
    assert (row.owner_name, row.display_name, row.personality, row.custom_instructions) == (
        "Sam", "Nova", "playful", "Be brief.")
    assert (row.archive_access, row.web_search) == (False, True)
    page = client.get("/settings/").content.decode()
    assert "Settings saved" in page
    assert 'value="Nova"' in page


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("display_name", "  ", "display_name cannot be empty"), ("personality", "grumpy", "personality must be one of")],
)
def test_settings_errors_are_shown_and_nothing_is_lost(client, field, value, message):
    data = {"owner_name": "Sam", "display_name": "Nova", "personality": "warm", "custom_instructions": "keep me"}
    data[field] = value
    response = client.post("/settings/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html
    assert "keep me" in html  # what the owner typed is still in the form
    assert AssistantSettings.objects.get(pk=1).custom_instructions == ""


def test_login_page_does_not_list_conversations(client, make_conversation, settings):
    settings.ELION_PROTECTED = True
    settings.ELION_OWNER_PASSWORD = "pw"
    make_conversation(title="Very private")
    response = client.get("/", follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0].startswith("/login/")
    assert "Very private" not in html and "Elion Voicefire" not in html
    response = client.post("/login/?next=/settings/", {"password": "pw"})
    assert response["Location"] == "/settings/"
    html = client.get("/settings/").content.decode()
    assert "Very private" in html and "Log out" in html


def test_chat_header_offers_branch_and_refresh_memory(client, make_conversation):
    conversation = make_conversation()
    html = client.get(f"/c/{conversation.id}/").content.decode()
    assert f'data-branch-source="{conversation.id}"' in html
    assert f'data-refresh-memory-api="/api/conversations/{conversation.id}/refresh-memory/"' in html


def test_handoff_artifact_renders_as_a_handoff_bubble_in_page_and_fragment(client, make_conversation):
    from transcript.models import MessageKind

    source = make_conversation(title="Source")
    destination = make_conversation()
    destination.last_seq += 1
    artifact = Message.objects.create(
        conversation=destination, seq=destination.last_seq, role=Role.ASSISTANT, kind=MessageKind.HANDOFF_ARTIFACT,
        content="Carried over: **the last exchange**",
        metadata={"source_conversation_id": str(source.id), "source_message_ids": []},
    )
    destination.head = artifact
    destination.save(update_fields=["head", "last_seq"])
    for url in (f"/c/{destination.id}/", f"/c/{destination.id}/messages/{artifact.id}/fragment/"):
        html = client.get(url).content.decode()
        assert 'data-kind="handoff_artifact"' in html
        assert f'href="/c/{source.id}/"' in html
        assert "<strong>the last exchange</strong>" in html


def test_tool_calls_are_shown_compactly_with_results_on_demand(client, make_conversation, make_turns, keyed):
    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "what did we say about tea?"), ("assistant", "We said it was green."))
    reply.parts = [
        {"type": "tool_call", "call_id": "c1", "name": "search_past_conversations", "arguments": '{"query": "tea"}'},
        {"type": "tool_result", "call_id": "c1", "content": "Tea is a leaf.", "is_error": False},
    ]
    reply.save(update_fields=["parts"])
    html = client.get(f"/c/{conversation.id}/").content.decode()
    assert "<details class=\"tool-calls\">" in html
    assert "<code>search_past_conversations</code>" in html
    assert "Tea is a leaf." in html  # inside the collapsed details, shown on demand
