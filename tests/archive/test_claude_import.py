"""Claude.ai exports (issue 21): only text blocks are speech, attachments kept apart, fault isolation,
de-duplication, and memories.json offered to the memory import preview."""

from __future__ import annotations

import json

import pytest

from archive.models import ArchiveChunk, ArchiveDocument
from archive.sending import tools as archive_tools
from archive.services.importers.claude import parse as claude
from memories.models import Memory
from tests.archive import claude_export as export
from tests.archive.conftest import make_zip
from tests.support.json_fields import WRONG_TYPES, read_outcomes

pytestmark = pytest.mark.django_db

IMPORT = "/api/archive/import/claude/"
NEVER_SPEECH = (export.THOUGHT, "THINKING", export.TOOL_QUERY, export.TOOL_RESULT, "not supported on your",
                "Considering the mood", "token_budget")


def post(client, upload, name="claude-export.zip", data=None, **fields):
    return client.post(IMPORT, {"file": upload(name, data if data is not None else make_zip(export.members())),
                                **fields})


def counts(body: dict) -> dict:
    return {k: body[k] for k in ("conversations", "messages", "skipped", "duplicates")}


def lantern_chunks() -> list[tuple]:
    document = ArchiveDocument.objects.get(title="Lantern by the sea")
    return list(document.chunks.values_list("position", "turn", "role", "speaker", "text"))


# --- Speech -----------------------------------------------------------------------------------------


def test_only_text_blocks_are_speech_never_thinking_or_tool_blocks(client, upload):
    response = post(client, upload)
    assert response.status_code == 200, response.content
    body = response.json()
    assert counts(body) == {"conversations": 2, "messages": 7, "skipped": 3, "duplicates": 0}
    turns = [(turn, role, text) for _, turn, role, _, text in lantern_chunks() if turn is not None]
    assert turns == [
        (1, "user", "Here are my lantern notes; when should I trim the wick again?"),
        (2, "assistant", "Trim it again next Sunday, before you light it."),
        (3, "user", "And when is high water tonight?"),
        # The two text blocks around the search round, joined; the round itself is not speech.
        (4, "assistant", "Let me look at the tide tables.\n\nHigh water is at 19:40 tonight."),
        # The owner's file-only message said nothing: the next turn is the assistant's.
        (5, "assistant", "The chart agrees: high water 19:40, low water just before two."),
    ]
    for hidden in NEVER_SPEECH:
        assert not ArchiveChunk.objects.filter(text__contains=hidden).exists(), hidden
        assert not ArchiveDocument.objects.filter(text__contains=hidden).exists(), hidden


def test_older_text_only_messages_are_read_from_their_text(client, upload):
    body = post(client, upload, "conversations.json", export.as_json([export.letters()])).json()
    assert counts(body) == {"conversations": 1, "messages": 2, "skipped": 0, "duplicates": 0}
    letters = ArchiveDocument.objects.get()
    assert list(letters.chunks.values_list("turn", "role", "text")) == [
        (1, "user", "Shall I read you grandmother's letters?"),
        (2, "assistant", "Yes, please read them slowly."),
    ]


def test_speakers_are_the_owner_label_and_the_assistant_name(client, upload):
    """Imported voices kept apart (issue 34): with no name given, Claude's words are labelled "Claude", never
    with Elion's display name."""
    post(client, upload)
    lantern = ArchiveDocument.objects.get(title="Lantern by the sea")
    speakers = {(role, speaker) for _, turn, role, speaker, _ in lantern_chunks() if turn is not None}
    assert speakers == {("user", "AUMA"), ("assistant", "Claude")}
    assert "AUMA said:\nHere are my lantern notes" in lantern.text
    assert "Claude said:\nTrim it again next Sunday" in lantern.text
    assert "Elion Voicefire" not in lantern.text
    ArchiveDocument.objects.all().delete()
    post(client, upload, assistant_name="  Claude   3 Opus ")
    speakers = {speaker for _, turn, role, speaker, _ in lantern_chunks() if role == "assistant"}
    assert speakers == {"Claude 3 Opus"}


def test_documents_say_they_came_from_a_claude_export(client, upload):
    body = post(client, upload).json()
    listed = client.get("/api/archive/documents/").json()["results"]
    assert sorted((d["title"], d["source"]) for d in listed) == [
        ("Lantern by the sea", "claude"), ("Old letters", "claude"),
    ]
    lantern = ArchiveDocument.objects.get(title="Lantern by the sea")
    assert lantern.pk in body["document_ids"]
    assert lantern.metadata == {"claude_conversation_uuid": export.lantern()["uuid"],
                                "created_at": "2024-06-01T20:00:00+00:00", "updated_at": "2024-06-01T20:20:00+00:00"}
    assert lantern.text.startswith("# Lantern by the sea\n\nImported from a Claude.ai export · 2024-06-01 20:00 UTC")
    assert lantern.chunks.get(turn=1).spoken_at.isoformat() == "2024-06-01T20:00:00+00:00"


# --- Attachments ------------------------------------------------------------------------------------


def test_attached_files_text_is_kept_apart_labelled_as_the_file_never_as_the_owners_words(client, upload):
    post(client, upload)
    chunks = lantern_chunks()
    attached = [(position, turn, role, speaker, text) for position, turn, role, speaker, text in chunks
                if speaker.startswith("Attachment")]
    assert [(turn, role, speaker, text) for _, turn, role, speaker, text in attached] == [
        (None, "", "Attachment: lantern-notes.txt", export.NOTES),
        (None, "", "Attachment: tide-chart.pdf", "TIDE CHART high 19:40 low 01:55"),
    ]
    # Each one right after the turn it came with (the chart's message said nothing: after turn 4).
    order = [(turn, speaker) for _, turn, _, speaker, _ in chunks]
    assert order.index((None, "Attachment: lantern-notes.txt")) == order.index((1, "AUMA")) + 1
    assert order.index((None, "Attachment: tide-chart.pdf")) == order.index((4, "Claude")) + 1
    lantern = ArchiveDocument.objects.get(title="Lantern by the sea")
    assert export.NOTES not in lantern.text  # the document's conversation text is the turns only
    assert "Attached files (their text is kept apart from the turns): lantern-notes.txt, tide-chart.pdf" in lantern.text
    # Searchable, and the hit names the file as its speaker.
    (hit,) = client.get("/api/archive/search/", {"q": "wick trimmed"}).json()["results"]
    assert hit["speaker"] == "Attachment: lantern-notes.txt" and hit["document_title"] == "Lantern by the sea"
    tool_answer = json.loads(archive_tools.search_archive({"query": "oil refilled"}, None))
    assert [r["speaker"] for r in tool_answer["results"]] == ["Attachment: lantern-notes.txt"]


def test_continuing_an_imported_conversation_carries_its_turns_not_thinking_tools_or_files(client, upload):
    post(client, upload)
    lantern = ArchiveDocument.objects.get(title="Lantern by the sea")
    response = client.post(f"/api/archive/documents/{lantern.pk}/continue/", "{}", content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY="continue-lantern")
    assert response.status_code == 201, response.content
    bubble = client.get(f"/api/conversations/{response.json()['id']}/messages/").json()["results"][0]["content"]
    assert "Trim it again next Sunday" in bubble and "High water is at 19:40 tonight." in bubble
    for absent in (*NEVER_SPEECH, export.NOTES, "TIDE CHART"):
        assert absent not in bubble, absent


# --- Fault isolation --------------------------------------------------------------------------------


def test_empty_and_corrupted_conversations_are_skipped_and_named_the_rest_imported(client, upload):
    body = post(client, upload).json()
    assert [(p["index"], p["title"], p["reason"], p["file"]) for p in body["problems"]] == [
        (1, "New chat", "nothing was said in it (no text from either side)", "conversations.json"),
        (3, "Corrupted tide", "it has no list of messages (chat_messages)", "conversations.json"),
        (4, "Stray message", "message 2 is not a JSON object", "conversations.json"),
    ]
    assert body["skipped"] == 3
    assert sorted(ArchiveDocument.objects.values_list("title", flat=True)) == ["Lantern by the sea", "Old letters"]


def test_wrong_types_nul_characters_and_deep_nesting_are_problems_not_refusals(client, upload):
    deep = export.letters()
    deep["uuid"], deep["name"] = "deep", "Deep"
    deep["chat_messages"][1]["content"] = [{"type": "tool_use", "input": {"x": "PLACEHOLDER"}}]
    nested = json.dumps(deep).replace('"PLACEHOLDER"', "[" * 100_000 + "]" * 100_000)
    items = [
        "not a conversation",
        {"name": "Sender a number", "chat_messages": [{"sender": 7, "text": "hi"}]},
        {"name": "Content a string", "chat_messages": [{"sender": "human", "content": "hello"}]},
        {"name": "Text a list", "chat_messages": [{"sender": "human", "text": ["hello"]}]},
        {"name": "Nul", "chat_messages": [{"sender": "human", "text": "a\u0000b"}]},
    ]
    data = ("[" + ",".join([*(json.dumps(i) for i in items), nested, json.dumps(export.letters())]) + "]").encode()
    response = post(client, upload, "conversations.json", data)
    assert response.status_code == 200, response.content
    body = response.json()
    assert [(p["index"], p["title"], p["reason"]) for p in body["problems"]] == [
        (0, "", "it is not a JSON object"),
        (1, "Sender a number", "message 1 has no sender"),
        (2, "Content a string", "message 1 has content that is not a list"),
        (3, "Text a list", "message 1 has text that is not a string"),
        (4, "Nul", "it holds a NUL character or an unpaired surrogate"),
        (5, "", "it is nested deeper than 64 levels"),
    ]
    assert counts(body) == {"conversations": 1, "messages": 2, "skipped": 6, "duplicates": 0}


@pytest.mark.parametrize("wrong", WRONG_TYPES)
def test_every_field_of_a_conversation_may_hold_any_type_without_a_5xx(wrong):
    """Each value in the written conversation, replaced by each JSON type: read, or named as a problem."""

    original = export.lantern()
    outcomes = read_outcomes(claude.read_conversation, claude.UnreadableConversation, original, wrong)
    assert outcomes == {"ClaudeConversation", "problem"}


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("conversations.json", b"not json at all", "malformed_claude_export"),
        ("conversations.json", b'"a string"', "malformed_claude_export"),
        ("conversations.json", b"[1, 2, 3]", "malformed_claude_export"),
        ("conversations.json", b"", "empty_file"),
        ("conversations.json", b'[{"chat_messages": [], "n": ' + b"9" * 5000 + b"}]", "malformed_claude_export"),
        ("conversations.json", json.dumps([{"title": "ChatGPT", "mapping": {}}]).encode(), "malformed_claude_export"),
        ("export.zip", make_zip({"users.json": b"[]"}), "missing_conversations_json"),
        ("export.zip", b"PK\x03\x04 damaged", "malformed_claude_export"),
    ],
)
def test_a_file_that_is_not_an_export_is_refused_whole_and_stores_nothing(client, upload, name, data, code):
    response = post(client, upload, name, data)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == code
    assert not ArchiveDocument.objects.exists()


def test_a_chatgpt_export_sent_here_is_refused_with_a_hint(client, upload):
    chatgpt_like = [{"title": "Harbour", "mapping": {"r": {"id": "r", "children": []}}, "current_node": "r"}]
    response = post(client, upload, "conversations.json", json.dumps(chatgpt_like).encode())
    assert response.status_code == 400
    assert "use the ChatGPT import" in response.json()["detail"]


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2024-13-01T00:00:00Z",
                                    "2024-06-01T20:00:00", "x" * 10_000, 1717250000])
def test_times_that_cannot_be_stored_are_left_out_not_a_5xx(client, upload, moment):
    odd = export.letters()
    odd["created_at"] = odd["updated_at"] = odd["chat_messages"][0]["created_at"] = moment
    response = post(client, upload, "conversations.json", export.as_json([odd]))
    assert response.status_code == 200 and response.json()["conversations"] == 1, response.content
    first = ArchiveDocument.objects.get().chunks.get(turn=1)
    if moment == "2024-06-01T20:00:00":  # no offset: read as UTC
        assert first.spoken_at.isoformat() == "2024-06-01T20:00:00+00:00"
    else:
        assert first.spoken_at is None


def test_a_huge_turn_is_stored_in_bounded_chunks(client, upload):
    huge = export.letters()
    huge["chat_messages"][1]["text"] = "wave " * 50_000
    body = post(client, upload, "conversations.json", export.as_json([huge])).json()
    assert body["messages"] == 2
    pieces = ArchiveDocument.objects.get().chunks.filter(turn=2)
    assert pieces.count() > 50 and max(len(p.text) for p in pieces) <= 4_000


def test_a_missing_file_part_is_a_400(client):
    response = client.post(IMPORT, {})
    assert response.status_code == 400 and response.json()["error"] == "missing_file"


# --- De-duplication ---------------------------------------------------------------------------------


def test_reimporting_reports_every_conversation_as_a_duplicate_in_either_shape(client, upload):
    first = post(client, upload).json()
    stored = (ArchiveDocument.objects.count(), ArchiveChunk.objects.count())
    again = post(client, upload).json()
    assert counts(again) == {"conversations": 0, "messages": 0, "skipped": 3, "duplicates": 2}
    alone = post(client, upload, "conversations.json", export.as_json(export.conversations())).json()
    assert counts(alone) == {"conversations": 0, "messages": 0, "skipped": 3, "duplicates": 2}
    assert (ArchiveDocument.objects.count(), ArchiveChunk.objects.count()) == stored
    assert len(first["document_ids"]) == 2 and again["document_ids"] == []


def test_labels_changed_in_settings_do_not_make_a_reimport_new(client, upload):
    post(client, upload)
    changed = client.patch("/api/settings/", {"owner_name": "Auma Sea"}, content_type="application/json")
    assert changed.status_code == 200, changed.content
    assert post(client, upload).json()["duplicates"] == 2


def test_queries_per_imported_conversation_do_not_grow_with_the_export(client, upload):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def lanterns(count, start):
        items = []
        for n in range(start, start + count):
            item = export.lantern()
            item["uuid"], item["name"] = f"c-{n}", f"Lantern {n}"
            items.append(item)
        return export.as_json(items)

    post(client, upload, "conversations.json", lanterns(1, 900))  # the first request creates the settings row
    queries = []
    for count, start in ((2, 0), (4, 100), (8, 200)):
        with CaptureQueriesContext(connection) as captured:
            assert post(client, upload, "conversations.json", lanterns(count, start)).json()["conversations"] == count
        queries.append(len(captured))
    per_conversation = (queries[1] - queries[0]) / 2
    # Two look-ups by content hash, then one transaction (savepoint, document, chunks, release).
    assert per_conversation == 6
    assert queries[2] - queries[1] == 4 * per_conversation


# --- memories.json ----------------------------------------------------------------------------------


def test_memories_json_is_offered_as_suggestions_and_nothing_is_added(client, upload):
    body = post(client, upload).json()
    assert body["memory_suggestions"] == export.SUGGESTIONS
    assert not Memory.objects.exists()
    for suggestion in export.SUGGESTIONS:  # Claude's memory is never speech in the archive either
        assert not ArchiveChunk.objects.filter(text__contains=suggestion["text"][-30:]).exists()


def test_the_suggestions_feed_the_memory_import_preview_and_are_not_offered_again(client, upload):
    suggestions = post(client, upload).json()["memory_suggestions"]
    preview = client.post("/api/memories/import/preview/", {"memories": suggestions}, content_type="application/json")
    assert preview.status_code == 200, preview.content
    assert preview.json()["reaches"] == "new_threads_only"
    assert [(m["text"], m["category"]) for m in preview.json()["memories"]] == [
        (s["text"], s["category"]) for s in export.SUGGESTIONS
    ]
    assert not Memory.objects.exists()  # a preview saves nothing
    # The owner confirms only some of them.
    confirmed = client.post("/api/memories/import/", {"memories": suggestions[:2]}, content_type="application/json")
    assert confirmed.status_code == 201 and confirmed.json() == {"created": 2}
    again = post(client, upload).json()
    assert again["memory_suggestions"] == export.SUGGESTIONS[2:]


def test_the_memory_import_reads_claudes_memories_json_itself(client, upload):
    preview = client.post("/api/memories/import/preview/",
                          {"file": upload("memories.json", export.as_json(export.memories()))})
    assert preview.status_code == 200, preview.content
    assert [(m["text"], m["category"]) for m in preview.json()["memories"]] == [
        (s["text"], s["category"]) for s in export.SUGGESTIONS
    ]


def test_an_unreadable_memories_json_is_a_problem_and_the_conversations_import(client, upload):
    members = {**export.members(), "memories.json": b'[{"conversations_memory": "cut'}
    body = post(client, upload, data=make_zip(members)).json()
    assert body["conversations"] == 2 and body["memory_suggestions"] == []
    (problem,) = [p for p in body["problems"] if p["file"] == "memories.json"]
    assert problem["index"] is None and problem["reason"].startswith("memories.json: The body is not valid JSON")
    assert body["skipped"] == 3  # memories.json is not a conversation


def test_an_export_without_memories_offers_none(client, upload):
    body = post(client, upload, data=make_zip(export.members(with_memories=False))).json()
    assert body["memory_suggestions"] == [] and body["conversations"] == 2
    body = post(client, upload, "conversations.json", export.as_json([export.letters()])).json()
    assert body["memory_suggestions"] == [] and body["duplicates"] == 1


def test_a_memories_json_with_a_byte_order_mark_or_not_utf8(client, upload):
    members = {**export.members(), "memories.json": b"\xef\xbb\xbf" + export.as_json(export.memories())}
    assert post(client, upload, data=make_zip(members)).json()["memory_suggestions"] == export.SUGGESTIONS
    members["memories.json"] = b"\xff\xfe not utf-8"
    body = post(client, upload, data=make_zip(members)).json()
    assert body["memory_suggestions"] == []
    assert [p["reason"] for p in body["problems"] if p["index"] is None] == ["memories.json is not UTF-8 text"]


def test_two_exports_uploaded_together_offer_each_memory_once(client, upload):
    first = upload("a.zip", make_zip(export.members()))
    second = upload("b.zip", make_zip({"conversations.json": export.as_json([export.letters()]),
                                       "memories.json": export.as_json(export.memories())}))
    body = client.post(IMPORT, {"file": [first, second]}).json()
    assert body["memory_suggestions"] == export.SUGGESTIONS
    assert counts(body) == {"conversations": 2, "messages": 7, "skipped": 3, "duplicates": 1}


def test_lone_surrogates_never_reach_the_database(client, upload):
    escaped = export.letters()
    escaped["chat_messages"][0]["text"] = "PLACEHOLDER"
    data = export.as_json([escaped]).replace(b'"PLACEHOLDER"', b'"moon \\ud800 tide"')
    response = post(client, upload, "conversations.json", data)
    assert response.status_code == 200, response.content
    # The C parser replaces it (stored), the pure-Python one keeps it (then the conversation is a problem).
    stored = "".join(ArchiveChunk.objects.values_list("text", flat=True))
    reasons = [p["reason"] for p in response.json()["problems"]]
    assert stored or reasons == ["it holds a NUL character or an unpaired surrogate"]
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in stored)
    raw = export.as_json([escaped]).replace(b'"PLACEHOLDER"', b'"moon \xed\xa0\x80 tide"')
    refused = post(client, upload, "conversations.json", raw)
    assert refused.status_code == 400 and refused.json()["error"] == "malformed_claude_export"
    assert "not UTF-8" in refused.json()["detail"]
