"""Past Conversation Search (seed, "Continuity Shield"; issue 6): `GET /api/search/`.

Runs unchanged on SQLite (FTS5) and PostgreSQL (GIN): every assertion on
exact results is the proof that both databases answer the same.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from conversations.services.threads.thread_writes import conversation_rewind
from conversations.services.visibility.past_search import past_conversation_search, quoted_excerpt
from elion.base.fulltext import excerpt
from transcript.models import Conversation, Folder, Message, MessageSearchEntry
from transcript.search_index import message_search_index_sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return Client()


@pytest.fixture
def thread(make_conversation, make_turns):
    def make(*pairs, title="", **kwargs):
        conversation = make_conversation(title=title, **kwargs)
        if pairs:
            make_turns(conversation, *pairs)
        return conversation

    return make


def search(client, q, **params) -> list[dict]:
    response = client.get("/api/search/", {"q": q, **params})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_results_shape_and_grouping_by_conversation(client, thread):
    lantern = thread(("user", "Where is the lantern?"), ("assistant", "The lantern hangs by the lantern door."),
                     title="Lantern talk")
    other = thread(("user", "I lost the lantern"), ("assistant", "It will turn up."), title="Lost things")
    results = search(client, "lantern")
    assert set(results[0]) == {"conversation_id", "conversation_title", "message_id", "role", "excerpt", "shielded", "private",
                               "created_at"}
    # Grouped: the conversation with the best match first, its hits together, best first.
    assert [(r["conversation_title"], r["excerpt"]) for r in results] == [
        ("Lantern talk", "The lantern hangs by the lantern door."),
        ("Lantern talk", "Where is the lantern?"),
        ("Lost things", "I lost the lantern"),
    ]
    assert {r["conversation_id"] for r in results} == {str(lantern.id), str(other.id)}
    assert [r["role"] for r in results] == ["assistant", "user", "user"]
    assert not any(r["shielded"] for r in results)


def test_every_word_must_occur_case_and_punctuation_insensitive(client, thread):
    thread(("user", "The Crooked-Pear tree, at the GATE."), ("assistant", "yes"))
    thread(("user", "a pear alone"), ("assistant", "ok"))
    assert [r["excerpt"] for r in search(client, "pear gate")] == ["The Crooked-Pear tree, at the GATE."]
    assert [r["excerpt"] for r in search(client, "CROOKED pear")] == ["The Crooked-Pear tree, at the GATE."]
    assert len(search(client, "pear")) == 2


def test_same_tokens_on_both_databases_for_awkward_text(client, thread):
    """URLs, e-mail addresses, decimals and accents split into the same words everywhere."""
    thread(("user", "mail auma@example.org or see https://example.org/path?x=1, pi is 3.14, café déjà vu"),
           ("assistant", "noted"))
    for query, expected in [("example", 1), ("org path", 1), ("14", 1), ("café", 1), ("cafe", 0), ("déjà vu", 1),
                            ("https", 1), ("x 1", 1), ("3.14", 1), ("pi 3", 1), ("missing", 0)]:
        assert len(search(client, query)) == expected, query


def test_only_live_branch_user_and_assistant_speech_is_searched(client, thread, make_turns):
    conversation = thread(("user", "kept zephyr question"), ("assistant", "kept zephyr answer"))
    make_turns(conversation, ("user", "abandoned zephyr"), ("assistant", "abandoned zephyr reply"))
    conversation_rewind(conversation_id=conversation.id,
                        message_id=Message.objects.get(content="kept zephyr answer").id)
    conversation.refresh_from_db()
    # On the live branch too, but never results: the stored prompt, a tool turn,
    # a failed reply, a handoff bubble and a reply still streaming.
    Message.objects.create(conversation=conversation, seq=99, role="system", kind="static_prompt",
                           content="zephyr in the system prompt")
    head = conversation.head
    for seq, (role, kind, status) in enumerate(
        [("tool", "tool_result", "complete"), ("assistant", "ordinary", "failed"),
         ("assistant", "handoff_artifact", "complete"), ("assistant", "ordinary", "streaming")], start=100,
    ):
        head = Message.objects.create(conversation=conversation, parent=head, seq=seq, role=role, kind=kind,
                                      status=status, content=f"zephyr {kind} {status}")
    Conversation.objects.filter(pk=conversation.pk).update(head=head, last_seq=103)
    assert sorted(r["excerpt"] for r in search(client, "zephyr")) == ["kept zephyr answer", "kept zephyr question"]


def test_interrupted_reply_text_is_searchable(client, thread, make_turns):
    conversation = thread(("user", "tell me about quasars"))
    make_turns(conversation, ("assistant", "Quasars are"))
    Message.objects.filter(content="Quasars are").update(status="interrupted")
    assert sorted(r["excerpt"] for r in search(client, "quasars")) == ["Quasars are", "tell me about quasars"]


def test_cut_off_reply_text_is_searchable(client, thread, make_turns):
    """Status `incomplete` (the provider cut the reply off, issue 31) is speech like `interrupted`: the
    index triggers of migration 0018 add it, and take it out again when a reply turns `failed`."""
    conversation = thread(("user", "tell me about pulsars"))
    make_turns(conversation, ("assistant", "Pulsars spin"))
    Message.objects.filter(content="Pulsars spin").update(status="incomplete")
    assert sorted(r["excerpt"] for r in search(client, "pulsars")) == ["Pulsars spin", "tell me about pulsars"]
    Message.objects.filter(content="Pulsars spin").update(status="failed")
    assert [r["excerpt"] for r in search(client, "pulsars")] == ["tell me about pulsars"]


def test_hidden_and_trashed_never_shielded_only_on_request(client, thread):
    visible = thread(("user", "heron visible"), title="Visible")
    hidden = thread(("user", "heron hidden"), title="Hidden", folder_id=Folder.objects.create(name="H", hidden=True).id)
    trashed = thread(("user", "heron trashed"), title="Trashed")
    shielded = thread(("user", "heron shielded"), title="Shielded")
    Conversation.objects.filter(pk=trashed.pk).update(trashed=True)
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True)
    titles = {r["conversation_title"] for r in search(client, "heron")}
    assert titles == {"Visible"}
    with_shielded = search(client, "heron", include_shielded="true")
    assert {r["conversation_title"]: r["shielded"] for r in with_shielded} == {"Visible": False, "Shielded": True}
    # Including shielded conversations in a search changes nothing else.
    shielded.refresh_from_db()
    assert shielded.shielded is True
    assert search(client, "heron", include_shielded="false") == search(client, "heron")
    assert visible and hidden


def test_index_follows_every_write_path(client, thread):
    conversation = thread(("user", "alpha words"))
    message = Message.objects.get(conversation=conversation)
    assert [r["excerpt"] for r in search(client, "alpha")] == ["alpha words"]
    # A raw UPDATE (no ORM signal) is seen: the trigger replaced the index row.
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {Message._meta.db_table} SET content = %s WHERE id = %s",
                       ["beta words", Message._meta.pk.get_db_prep_value(message.id, connection)])
    assert search(client, "alpha") == []
    assert [r["excerpt"] for r in search(client, "beta")] == ["beta words"]
    # Becoming unsearchable (failed) removes it; deleting the conversation removes its rows.
    Message.objects.filter(pk=message.pk).update(status="failed")
    assert search(client, "beta") == []
    Message.objects.filter(pk=message.pk).update(status="complete")
    assert len(search(client, "beta")) == 1
    conversation.delete()
    assert not MessageSearchEntry.objects.exists()
    assert search(client, "beta") == []


def test_streaming_reply_is_indexed_once_it_completes(client, thread, make_turns):
    conversation = thread(("user", "ask"))
    (reply,) = make_turns(conversation, ("assistant", ""))
    Message.objects.filter(pk=reply.pk).update(status="streaming", content="")
    Message.objects.filter(pk=reply.pk).update(content="partial gryphon")
    assert search(client, "gryphon") == []
    Message.objects.filter(pk=reply.pk).update(content="partial gryphon, finished", status="complete")
    assert [r["excerpt"] for r in search(client, "gryphon")] == ["partial gryphon, finished"]


def test_index_sync_tokenises_pending_rows_once(thread):
    thread(("user", "one"), ("assistant", "two"))
    assert MessageSearchEntry.objects.filter(search_text__isnull=True).count() == 2
    assert message_search_index_sync() == 2
    assert message_search_index_sync() == 0
    assert sorted(MessageSearchEntry.objects.values_list("search_text", flat=True)) == ["one", "two"]


def test_search_takes_a_fixed_number_of_queries(client, thread, django_assert_max_num_queries):
    for i in range(15):
        thread(("user", f"common word {i}"), ("assistant", f"common reply {i}"), title=f"T{i}")
    message_search_index_sync()
    with django_assert_max_num_queries(9):
        hits = past_conversation_search("common")
    assert len(hits) == 30


def test_limits_per_conversation_and_overall(thread):
    thread(*[("user", f"osprey {i}") for i in range(9)])
    for _ in range(12):
        thread(("user", "osprey"))
    hits = past_conversation_search("osprey")
    assert len(hits) == 17  # 5 from the long thread, 1 from each of the other 12
    assert len(past_conversation_search("osprey", limit=3)) == 3


@pytest.mark.parametrize(
    ("params", "code"),
    [({}, "query_required"), ({"q": "   "}, "query_required"), ({"q": "?!"}, "query_required"),
     ({"q": "x" * 501}, "query_too_long"), ({"q": "ok", "include_shielded": "maybe"}, "invalid_include_shielded")],
)
def test_bad_search_input_is_a_clear_400(client, params, code):
    response = client.get("/api/search/", params)
    assert response.status_code == 400
    assert response.json()["error"] == code and response.json()["detail"]


def test_search_triggers_exist_after_all_migrations():
    """SQLite drops triggers when a migration rebuilds a table; a later migration
    on the message table must recreate them (see migration 0004)."""
    names = {"message_search_mark_insert", "message_search_mark_update", "message_search_mark_delete"}
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            names |= {"message_search_fts_insert", "message_search_fts_delete", "message_search_fts_update"}
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        found = {row[0] for row in cursor.fetchall()}
    assert names <= found


def test_search_indexes_exist_after_all_migrations():
    """The indexes recall's bounded searches stand on: FTS5 on SQLite; on
    PostgreSQL the GIN index, the BRIN index on id (id windows) and the title
    trigram index (the skip rule's title check)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            expected = {"message_search_fts"}
        else:
            cursor.execute("SELECT indexname FROM pg_indexes")
            expected = {"message_search_gin", "message_search_id_brin", "conversation_title_trgm"}
        found = {row[0] for row in cursor.fetchall()}
    assert expected <= found


def test_inserted_quote_keeps_line_breaks_as_a_markdown_quote_block(thread):
    source = thread(("user", "A list to keep:\n- salt\n- rope\n\n\n\nAnd the   heron at dusk."),
                    ("assistant", "ok"), title="Harbour")
    message = Message.objects.get(conversation=source, role="user")
    quoted = quoted_excerpt(message_id=message.id, query="heron")
    assert quoted == "> A list to keep:\n> - salt\n> - rope\n>\n> And the heron at dusk.\n— from “Harbour”\n\n"


def test_inserted_quote_of_a_long_message_is_a_window_around_the_match_still_on_its_lines(thread):
    lines = [f"line {i} of the log" for i in range(60)] + ["the heron landed", "and stayed"]
    source = thread(("user", "\n".join(lines)), ("assistant", "ok"), title="Log")
    quoted = quoted_excerpt(message_id=Message.objects.get(conversation=source, role="user").id, query="heron")
    body = quoted.split("\n— from")[0].splitlines()
    assert all(line.startswith("> ") for line in body) and len(body) > 5
    assert "> the heron landed" in body and body[0].startswith("> …")
    # A results list still shows the excerpt on one line.
    assert "\n" not in excerpt("\n".join(lines), ["heron"])
