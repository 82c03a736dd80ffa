"""Claude.ai conversations with edits and retries (issue 21): the branch the owner saw is the document,
every other branch's turns are kept, searchable and marked alternate, as ChatGPT's are."""

from __future__ import annotations

import json

import pytest

from archive.models import ArchiveDocument
from archive.sending import tools as archive_tools
from archive.services.importers.claude import parse as claude
from tests.archive import claude_export as export
from tests.support.json_fields import WRONG_TYPES, read_outcomes

pytestmark = pytest.mark.django_db

IMPORT = "/api/archive/import/claude/"


def post(client, upload, *conversations):
    response = client.post(IMPORT, {"file": upload("conversations.json", export.as_json(list(conversations)))})
    assert response.status_code == 200, response.content
    return response.json()


def chunks(title: str, branch: str) -> list[tuple]:
    document = ArchiveDocument.objects.get(title=title)
    return list(document.chunks.filter(branch=branch).values_list("turn", "role", "speaker", "text"))


def test_an_edit_in_the_middle_keeps_the_newest_branch_as_the_document_and_the_other_as_alternate(client, upload):
    body = post(client, upload, export.edited())
    assert (body["conversations"], body["messages"], body["alternate_messages"]) == (1, 4, 3)
    assert chunks("Heron on the pier", "current") == [
        (1, "user", "AUMA", "A heron stood on the pier this morning."),
        (2, "assistant", "Claude", "Herons fish at first light."),
        (3, "user", "AUMA", "EDITEDASK how long does a heron live?"),
        (None, "", "Attachment: pier-notes.txt", "PIERNOTES tide low at eight"),
        (4, "assistant", "Claude", "EDITEDREPLY about fifteen years."),
    ]
    # The original branch, numbered along itself; its file is the edit's too, so it is kept once.
    assert chunks("Heron on the pier", "alternate") == [
        (3, "user", "AUMA", "ORIGINALASK was it grey or white?"),
        (4, "assistant", "Claude", "ORIGINALREPLY a grey heron, most likely."),
        (5, "user", "AUMA", "ORIGINALTAIL thank you."),
    ]
    heron = ArchiveDocument.objects.get()
    assert "EDITEDREPLY" in heron.text and "ORIGINAL" not in heron.text  # the document is the current branch


def test_a_retried_reply_follows_the_named_current_leaf_even_when_it_is_not_the_last_message(client, upload):
    body = post(client, upload, export.retried())
    assert (body["messages"], body["alternate_messages"]) == (2, 2)
    assert [text for *_, text in chunks("Lighthouse keeper's cat", "current")] == [
        "Name the lighthouse keeper's cat.", "SECONDTRY Wick.",
    ]
    assert chunks("Lighthouse keeper's cat", "alternate") == [
        (2, "assistant", "Claude", "FIRSTTRY Beacon."),
        (2, "assistant", "Claude", "THIRDTRY Fresnel."),
    ]


def test_without_a_named_leaf_the_newest_leaf_wins_then_the_later_in_the_list(client, upload):
    unnamed = export.retried()
    del unnamed["current_leaf_message_uuid"]
    assert claude.read_conversation(unnamed, 0).turns[-1].text == "THIRDTRY Fresnel."
    unnamed["current_leaf_message_uuid"] = "not-in-the-file"  # a leaf the file lacks: the newest, as without
    assert claude.read_conversation(unnamed, 0).turns[-1].text == "THIRDTRY Fresnel."
    for message in unnamed["chat_messages"]:
        message["created_at"] = "2024-07-02T21:00:00Z"  # a tie: the later in the list
    unnamed["chat_messages"][1], unnamed["chat_messages"][3] = unnamed["chat_messages"][3], unnamed["chat_messages"][1]
    assert claude.read_conversation(unnamed, 0).turns[-1].text == "FIRSTTRY Beacon."


def test_search_results_and_the_models_tool_say_which_branch(client, upload):
    post(client, upload, export.edited())
    (left,) = client.get("/api/archive/search/", {"q": "grey heron"}).json()["results"]
    assert left["branch"] == "alternate" and left["document_title"] == "Heron on the pier"
    assert "ORIGINALREPLY" in left["excerpt"]
    (seen,) = client.get("/api/archive/search/", {"q": "fifteen years"}).json()["results"]
    assert seen["branch"] == "current"
    tool_answer = json.loads(archive_tools.search_archive({"query": "ORIGINALTAIL"}, None))
    assert [r["branch"] for r in tool_answer["results"]] == ["alternate"]
    detail = client.get(f"/api/archive/documents/{ArchiveDocument.objects.get().pk}/").json()
    assert [c["branch"] for c in detail["chunk_list"]] == ["current"] * 5 + ["alternate"] * 3


def test_a_parent_missing_from_the_file_starts_a_branch_and_is_named_not_skipped(client, upload):
    body = post(client, upload, export.orphaned())
    assert (body["conversations"], body["skipped"]) == (1, 0)
    assert [(p["index"], p["title"], p["reason"]) for p in body["problems"]] == [
        (0, "Lost message", "1 message(s) answer a message missing from the export; each is read as the start "
                            "of a branch"),
    ]
    # The named leaf's branch starts at the message whose parent is missing; nothing said is lost.
    assert [(turn, text) for turn, _, _, text in chunks("Lost message", "current")] == [
        (1, "AFTERGAP and on rooftops too."),
    ]
    assert [(turn, text) for turn, _, _, text in chunks("Lost message", "alternate")] == [
        (1, "BEFOREGAP where do gulls sleep?"), (2, "BEFOREGAP on the water, often."),
    ]


def test_older_messages_without_parent_ids_stay_in_list_order(client, upload):
    body = post(client, upload, export.letters())
    assert (body["messages"], body["alternate_messages"]) == (2, 0)
    assert [text for *_, text in chunks("Old letters", "current")] == [
        "Shall I read you grandmother's letters?", "Yes, please read them slowly.",
    ]


def test_a_branched_conversation_imported_again_is_a_duplicate(client, upload):
    post(client, upload, export.edited(), export.retried())
    again = post(client, upload, export.edited(), export.retried())
    assert (again["conversations"], again["duplicates"], again["alternate_messages"]) == (0, 2, 0)
    assert ArchiveDocument.objects.count() == 2


def _with(messages_edit):
    chat = export.retried()
    messages_edit(chat["chat_messages"])
    return chat


@pytest.mark.parametrize(("broken", "reason"), [
    (_with(lambda m: m[0].update(parent_message_uuid="r2")), "its message tree has a cycle"),
    (_with(lambda m: m[1].update(parent_message_uuid="r2")), "its message tree has a cycle"),
    (_with(lambda m: m[2].update(uuid="r2")), "message 3 repeats the uuid of message 2"),
    (_with(lambda m: m[2].pop("uuid")), "message 3 has no uuid or parent_message_uuid"),
    (_with(lambda m: m[2].update(parent_message_uuid=None)), "message 3 has no uuid or parent_message_uuid"),
    (_with(lambda m: m[3].update(uuid=7)), "message 4 has no uuid or parent_message_uuid"),
])
def test_a_tree_that_cannot_be_walked_is_a_problem_and_the_rest_imports(client, upload, broken, reason):
    body = post(client, upload, broken, export.edited())
    assert [(p["index"], p["reason"]) for p in body["problems"]] == [(0, reason)]
    assert (body["conversations"], body["skipped"]) == (1, 1)


@pytest.mark.parametrize("wrong", WRONG_TYPES)
def test_every_field_of_a_branched_conversation_may_hold_any_type_without_a_5xx(wrong):
    original = export.edited()
    original["current_leaf_message_uuid"] = "e5"
    outcomes = read_outcomes(claude.read_conversation, claude.UnreadableConversation, original, wrong)
    assert outcomes == {"ClaudeConversation", "problem"}


def test_a_deeply_branched_conversation_is_read_without_recursion():
    chat = export.retried()
    chat["current_leaf_message_uuid"] = "m-19999"
    chat["chat_messages"] = [
        export.branched(f"m-{n}", f"m-{n - 1}" if n else export.ROOT_PARENT, "human" if n % 2 == 0 else "assistant",
                        "2024-07-02T21:00:00Z", f"turn {n}")
        for n in range(20_000)
    ]
    read = claude.read_conversation(chat, 0)
    assert len(read.turns) == 20_000 and read.turns[-1].text == "turn 19999"
