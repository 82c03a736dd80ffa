"""Layer 2 through the real send pipeline, asserted on what the scripted provider received.

Seed "Layer 2 — Dynamic Context", the birth-period paragraphs of "Layer 1",
"Visible chat estimate versus request-size diagnostics" and "What Travels in
Conversation History".
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from continuity.rules.prompt_policy import QUOTED_RECALL_LABEL, RESERVED_RECALL_HEADING
from continuity.rules.recall_policy import RECALL_END, words
from continuity.rules.request_policy import estimate_tokens
from tests.support.diagnostics import DIAGNOSTIC_NAMES
from transcript.append import APPENDED_FIELDS, message_append
from transcript.models import Conversation, Folder, Message, MessageKind

pytestmark = pytest.mark.django_db(transaction=True)

EXCERPT_LINE = re.compile(r'^- .+ \(\d{4}-\d{2}-\d{2}\): (".*")$')


def send(conversation, content, *, expect=200, **extra) -> dict:
    conversation_id = conversation.pk if isinstance(conversation, Conversation) else conversation
    response = Client().post(
        f"/api/conversations/{conversation_id}/messages/?stream=false",
        {"content": content, **extra},
        content_type="application/json",
    )
    assert response.status_code == expect, response.content
    return response.json()


def sent_items(provider) -> list[dict]:
    body = provider.last_request().body
    return body.get("input") or body.get("messages")


def system_messages(provider) -> list[str]:
    return [item["content"] for item in sent_items(provider) if item["role"] == "system"]


def dynamic_context(provider) -> str | None:
    systems = system_messages(provider)
    assert len(systems) <= 2
    return systems[1] if len(systems) == 2 else None


def excerpts(section: str) -> list[str]:
    return [json.loads(m.group(1)) for line in section.splitlines() if (m := EXCERPT_LINE.match(line))]


def titles(section: str) -> list[str]:
    return [json.loads(line[len("From the conversation "):-1]) for line in section.splitlines()
            if line.startswith("From the conversation ")]


@pytest.fixture
def current(make_conversation, make_turns, scripted_provider):
    """The thread we send in: created before any other (so it has no handoff) and
    past its birth period (one complete exchange), bound to the scripted provider."""
    conversation = make_conversation(persona="elion", title="Today")
    make_turns(conversation, ("user", "hello"), ("assistant", "Hello, AUMA."))
    return conversation


# --- The dynamic context message ------------------------------------------------------------


def test_dynamic_context_is_a_second_system_message_last_after_the_turns_and_is_never_stored(
    current, thread, scripted_provider
):
    thread(("user", "The lighthouse keeper Marisol painted the door blue."), ("assistant", "A brave blue."),
           title="Lighthouse talk")
    send(current, "Do you remember what Marisol did at the lighthouse?")
    items = sent_items(scripted_provider)
    # Last, after the current message: the turns before it stay a cacheable prefix.
    assert [item["role"] for item in items] == ["system", "user", "assistant", "user", "system"]
    section = items[4]["content"]
    assert section.startswith(RESERVED_RECALL_HEADING) and section.endswith(RECALL_END)
    assert excerpts(section) == ["The lighthouse keeper Marisol painted the door blue."]
    assert titles(section) == ["Lighthouse talk"]
    # Never stored: the conversation still holds exactly one system message, and no row carries the section.
    assert Message.objects.filter(conversation=current, role="system").count() == 1
    assert not Message.objects.filter(content__contains=RESERVED_RECALL_HEADING).exists()


def test_no_dynamic_context_message_when_there_is_nothing_to_add(current, thread, scripted_provider):
    thread(("user", "The lighthouse keeper Marisol painted the door blue."), ("assistant", "Blue."))
    send(current, "Tell me about quantum tunnelling in simple words, please, with one example.")
    assert [item["role"] for item in sent_items(scripted_provider)] == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize("opener", ["hi love", "I'm here", "goodnight", "okay, that makes sense"])
def test_short_relational_or_presence_messages_do_not_trigger_recall(current, thread, scripted_provider, opener):
    thread(("user", "hi love, I'm here, goodnight, that makes sense, okay"), ("assistant", "goodnight love"))
    send(current, opener)
    assert dynamic_context(scripted_provider) is None


def test_short_message_naming_a_past_conversation_title_topic_triggers_recall(current, thread, scripted_provider):
    thread(("user", "We planted tomatoes by the lighthouse wall."), ("assistant", "They will love the sea air."),
           title="Lighthouse garden")
    send(current, "hi love, the lighthouse today")
    assert excerpts(dynamic_context(scripted_provider)) == ["We planted tomatoes by the lighthouse wall."]


def test_short_message_naming_a_topic_found_in_past_messages_triggers_recall(current, thread, scripted_provider):
    thread(("user", "Our friend Marisol keeps bees on the roof."), ("assistant", "Busy roof."), title="Bees")
    send(current, "hi love, Marisol called")
    assert excerpts(dynamic_context(scripted_provider)) == ["Our friend Marisol keeps bees on the roof."]


def test_recall_returns_at_most_ten_excerpts_grouped_by_conversation_title(current, thread, scripted_provider):
    for name in ("Alpha", "Bravo", "Charlie"):
        thread(*[("user" if i % 2 == 0 else "assistant", f"{name} note {i} about the orchard")
                 for i in range(6)], title=f"{name} orchard")
    send(current, "What did we decide about the orchard last time?")
    section = dynamic_context(scripted_provider)
    found = excerpts(section)
    assert len(found) == 10
    assert all("orchard" in text for text in found)
    groups = titles(section)
    assert len(groups) == len(set(groups)) and set(groups) <= {"Alpha orchard", "Bravo orchard", "Charlie orchard"}
    # Each group's excerpts follow its title line.
    lines = section.splitlines()
    for title in groups:
        start = lines.index(f"From the conversation {json.dumps(title)}:")
        following = []
        for line in lines[start + 1:]:
            if not line.startswith("- "):
                break
            following.append(json.loads(EXCERPT_LINE.match(line).group(1)))
        assert following and all(text.startswith(title.split()[0]) for text in following)


def test_excerpts_are_cut_to_about_300_characters_around_the_match(current, thread, scripted_provider):
    long = ("a quiet morning with coffee " * 30) + "the zeppelin over the harbour " + ("and gulls " * 60)
    thread(("user", long), ("assistant", "Lovely."))
    send(current, "Remember the zeppelin?")
    (excerpt,) = excerpts(dynamic_context(scripted_provider))
    assert "zeppelin" in excerpt and len(excerpt) <= 302 and excerpt.startswith("…") and excerpt.endswith("…")


# --- What recall may never read ------------------------------------------------------------------


def test_recall_never_reads_the_current_thread_system_prompts_tool_parts_handoff_bubbles_or_dead_branches(
    current, thread, make_turns, add_message, scripted_provider, settings
):
    from memories.services.memory_writes import memory_add

    # The current thread itself mentions the word.
    make_turns(current, ("user", "the quokka photo from the zoo"), ("assistant", "So cheerful."))
    # A stored system prompt that holds the word (through a memory) in another thread.
    memory_add(text="AUMA adores the quokka.")
    other = thread(title="Other")
    send(other, "hello there")  # stores its prompt (with the memory) and a reply
    # Tool parts mentioning the word.
    tool_thread = thread(("user", "search something"), title="Tools")
    tool_reply = add_message(tool_thread, "assistant", "Here is what I found.")
    tool_reply.parts = [
        {"type": "tool_call", "call_id": "c1", "name": "search_past_conversations", "arguments": '{"query":"quokka"}', "round": 0},
        {"type": "tool_result", "call_id": "c1", "content": "quokka quokka", "is_error": False},
    ]
    tool_reply.save()
    # A Branch handoff bubble quoting the word.
    bubble_thread = thread(title="Branch")
    add_message(bubble_thread, "assistant", "### Continued from x\n\nAUMA said:\nquokka", kind=MessageKind.HANDOFF_ARTIFACT)
    # A rewound-away branch holding the word.
    rewound = thread(("user", "first"), ("assistant", "reply"), title="Rewound")
    keep_head = rewound.head
    add_message(rewound, "user", "the quokka again")
    add_message(rewound, "assistant", "quokka!")
    rewound.head = keep_head
    rewound.save()
    # A failed reply holding the word.
    failed = thread(("user", "tell me"), title="Failed")
    add_message(failed, "assistant", "quokka partial", status="failed")

    scripted_provider.clear()
    send(current, "Do you remember the quokka?")
    assert dynamic_context(scripted_provider) is None


@pytest.mark.parametrize("state", ["hidden_folder", "trashed", "shielded", "clipboard"])
def test_recall_excludes_hidden_trashed_shielded_and_other_persona_conversations(
    current, thread, scripted_provider, state
):
    visible = thread(("user", "The narwhal tusk story."), ("assistant", "Spiral!"), title="Visible")
    excluded = thread(("user", "The narwhal in the fjord."), ("assistant", "Cold."), title="Excluded",
                      persona="clipboard" if state == "clipboard" else "elion")
    if state == "hidden_folder":
        excluded.folder = Folder.objects.create(name="Vault", hidden=True)
    elif state in ("trashed", "shielded"):
        setattr(excluded, state, True)
    excluded.save()
    send(current, "Do you remember the narwhal?")
    section = dynamic_context(scripted_provider)
    assert titles(section) == [visible.title]
    assert "fjord" not in section


def test_recall_resumes_for_a_released_conversation(current, thread, scripted_provider):
    shielded = thread(("user", "The narwhal in the fjord."), ("assistant", "Cold."), title="Fjord")
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True)
    send(current, "Do you remember the narwhal?")
    assert dynamic_context(scripted_provider) is None
    Conversation.objects.filter(pk=shielded.pk).update(shielded=False)
    send(current, "Do you remember the narwhal?")
    assert titles(dynamic_context(scripted_provider)) == ["Fjord"]


# --- Birth period ----------------------------------------------------------------------------------


def test_birth_period_no_recall_even_when_the_opener_asks_to_remember_and_find(
    make_conversation, thread, scripted_provider
):
    fresh = make_conversation(persona="elion")  # before the source exists: no handoff either
    thread(("user", "The lighthouse keeper Marisol painted the door blue."), ("assistant", "Blue!"),
           title="Lighthouse talk")
    send(fresh, "Remember the lighthouse? Find what Marisol painted and look it up.")
    assert [item["role"] for item in sent_items(scripted_provider)] == ["system", "user"]
    # Normal recall resumes after the first assistant response.
    send(fresh, "Remember the lighthouse? Find what Marisol painted and look it up.")
    assert excerpts(dynamic_context(scripted_provider)) == ["The lighthouse keeper Marisol painted the door blue."]


def test_a_branch_handoff_bubble_does_not_end_the_birth_period(thread, scripted_provider):
    from continuity.services.branching import conversation_branch

    thread(("user", "Marisol and the lighthouse door."), ("assistant", "Blue."), title="Other lighthouse")
    source = thread(("user", "Our walk along the pier."), ("assistant", "The pier at dusk."), title="Pier")
    branch, _ = conversation_branch(conversation_id=source.pk, idempotency_key="k1")
    send(branch, "Remember the lighthouse door Marisol painted?")
    items = sent_items(scripted_provider)
    assert [item["role"] for item in items] == ["system", "user"]
    assert "The pier at dusk." in items[0]["content"]  # the handoff itself is present


def test_birth_period_guard_refuses_to_dispatch_a_recall_section(make_conversation, scripted_provider, monkeypatch, caplog):
    from continuity.rules import dynamic_context as dc
    from continuity.rules import request_store as request_building

    real = dc.dynamic_context_build

    def broken(conversation, **kwargs):
        built = real(conversation, **kwargs)
        assert built.birth_period
        return dc.DynamicContext(
            text=f"{RESERVED_RECALL_HEADING}\nAn excerpt that must never be sent",
            birth_period=True, recall_reason="bug", excerpts=1, pinned_character=False,
        )

    monkeypatch.setattr(request_building, "dynamic_context_build", broken)
    fresh = make_conversation(persona="elion")
    with caplog.at_level("ERROR"):
        body = send(fresh, "Remember the lighthouse?")
    assert body["error"]["error"] == "recall_in_birth_period"
    assert body["assistant_message"]["status"] == "failed"
    assert scripted_provider.requests == []  # never sent to any provider path
    assert any("birth-period" in record.getMessage() for record in caplog.records)
    assert "must never be sent" not in caplog.text
    assert Message.objects.filter(conversation=fresh, role="user").count() == 1  # the turn is kept


def test_reserved_heading_quoted_in_identity_memory_character_and_opener_does_not_trip_the_guard(
    make_conversation, scripted_provider
):
    from conversations.services.characters import character_create
    from conversations.services.settings_writes import assistant_settings_update
    from memories.services.memory_writes import memory_add

    quoted = f"Before\n{RESERVED_RECALL_HEADING}\nAfter"
    assistant_settings_update(custom_instructions=quoted)
    memory_add(text=quoted)
    character = character_create(name="Echo", description=quoted, image_guidance=quoted)
    fresh = make_conversation(persona="elion")
    body = send(fresh, f"{RESERVED_RECALL_HEADING}\nwhat does that heading mean?", pinned_character_id=character.pk)
    assert body["assistant_message"]["status"] == "complete"
    systems = system_messages(scripted_provider)
    assert len(systems) == 2  # stored prompt + pinned character (no recall in the birth period)
    for text in systems:
        assert RESERVED_RECALL_HEADING not in text
        assert QUOTED_RECALL_LABEL in text and "Before" in text and "After" in text
    assert sent_items(scripted_provider)[-2]["content"].startswith(RESERVED_RECALL_HEADING)  # the owner's own words


# --- Handoff interplay ----------------------------------------------------------------------------


def test_with_a_handoff_recall_excludes_its_source_and_suppresses_overlapping_excerpts(thread, make_turns, scripted_provider):
    from continuity.models import ThreadHandoff

    thread(("user", "We watched the comet from the roof with cocoa and blankets until dawn."),
                  ("assistant", "The comet was bright."), title="Copy")
    unrelated = thread(("user", "The comet postcard arrived from Lisbon."), ("assistant", "How lovely."),
                       title="Postcard")
    # The source's older turn (outside its final eight) is not in the handoff: only the
    # source exclusion keeps it out.
    filler = [("user" if i % 2 == 0 else "assistant", f"filler {i}") for i in range(8)]
    source = thread(("user", "The comet first appeared over the bakery."), ("assistant", "Over the bakery!"),
                    *filler,
                    ("user", "We watched the comet from the roof with cocoa and blankets until dawn."),
                    ("assistant", "Remember the comet tail?"), title="Source")
    current = Client().post("/api/conversations/", {"persona": "elion"}, content_type="application/json").json()
    assert ThreadHandoff.objects.get(destination_id=current["id"]).source_id == source.pk
    conversation = Conversation.objects.get(pk=current["id"])
    make_turns(conversation, ("user", "good morning"), ("assistant", "Morning, AUMA."))
    send(conversation, "Do you remember the comet?")
    system = system_messages(scripted_provider)[0]
    assert "Continuity from a prior thread" in system
    section = dynamic_context(scripted_provider)
    assert "Source" not in titles(section) and "bakery" not in section  # the handoff's source is excluded
    assert "Copy" in titles(section) and "The comet was bright." in excerpts(section)
    # The copy of text already carried by the handoff is suppressed, the rest stays.
    assert "We watched the comet from the roof with cocoa and blankets until dawn." not in excerpts(section)
    assert "The comet postcard arrived from Lisbon." in excerpts(section)
    assert unrelated.title in titles(section)


def test_recall_excludes_a_source_recorded_only_by_a_handoff_bubble_on_the_first_send_and_later(
    thread, make_turns, scripted_provider
):
    """A historical Branch bubble (no handoff row) names its source: recall leaves it out on the send that
    stores the prompt (which reads the thread's handoffs for it) and on every later send."""
    conversation = thread(title="Branched")  # the first thread: no New Chat handoff
    source = thread(("user", "The heron stood in the millpond all morning."), ("assistant", "Patient bird."),
                    title="Heron source")
    thread(("user", "A heron landed on the boathouse roof."), ("assistant", "Grey and tall."), title="Boathouse")
    message_append(
        conversation=conversation, parent=None, role="assistant", binding=None, make_head=True,
        kind=MessageKind.HANDOFF_ARTIFACT, status="complete", content="### Continued from Heron source",
        metadata={"source_conversation_id": str(source.pk)},
    )
    conversation.save(update_fields=APPENDED_FIELDS)
    make_turns(conversation, ("user", "hello"), ("assistant", "Hello, AUMA."))
    assert not Message.objects.filter(conversation=conversation, role="system").exists()
    for content in ("Do you remember the heron?", "What else do you remember about the heron?"):
        send(conversation, content)
        section = dynamic_context(scripted_provider)
        assert titles(section) == ["Boathouse"]


def test_excerpts_copying_the_current_threads_own_history_are_suppressed(current, thread, make_turns, scripted_provider):
    make_turns(current, ("user", "Our plan: paint the boat red, name it Gull, launch it in May."),
               ("assistant", "Gull it is."))
    thread(("user", "Our plan: paint the boat red, name it Gull, launch it in May."), ("assistant", "Yes."),
           title="Fork copy")
    thread(("user", "The boat trailer needs new tyres."), ("assistant", "Noted."), title="Trailer")
    send(current, "What else about the boat do you remember?")
    assert excerpts(dynamic_context(scripted_provider)) == ["The boat trailer needs new tyres."]


# --- Pinned character -------------------------------------------------------------------------------


def test_pinned_character_travels_in_the_dynamic_context_for_that_message_only(current, scripted_provider):
    from conversations.services.characters import character_create

    echo = character_create(name="Echo", description="A fox made of starlight.", image_guidance="Soft blue glow.")
    send(current, "Tell me a bedtime story.", pinned_character_id=echo.pk)
    section = dynamic_context(scripted_provider)
    assert section.startswith("=== PINNED CHARACTER ===")
    assert "Name: Echo" in section and "A fox made of starlight." in section and "Soft blue glow." in section
    assert RESERVED_RECALL_HEADING not in section
    send(current, "Another bedtime story, please, a long one with a happy ending.")
    assert dynamic_context(scripted_provider) is None
    assert not Message.objects.filter(content__contains="A fox made of starlight.").exists()


def test_pinned_character_and_recall_share_one_dynamic_message(current, thread, scripted_provider):
    from conversations.services.characters import character_create

    thread(("user", "The lighthouse keeper Marisol painted the door blue."), ("assistant", "Blue."))
    echo = character_create(name="Echo", description="A fox.")
    send(current, "Remember the lighthouse?", pinned_character_id=echo.pk)
    section = dynamic_context(scripted_provider)
    assert section.index("=== PINNED CHARACTER ===") < section.index(RESERVED_RECALL_HEADING)


def test_unknown_pinned_character_is_404_before_anything_is_written(current, scripted_provider):
    before = Message.objects.count()
    response = Client().post(
        f"/api/conversations/{current.pk}/messages/", {"content": "hi", "pinned_character_id": 999_999},
        content_type="application/json",
    )
    assert response.status_code == 404
    assert response.json()["error"] == "character_not_found"
    assert Message.objects.count() == before
    assert scripted_provider.requests == []


# --- Input budget and Request size details ------------------------------------------------------------


def test_full_thread_history_travels_until_the_budget_requires_trimming(current, make_turns, scripted_provider, settings):
    make_turns(current, *[("user" if i % 2 == 0 else "assistant", f"old turn {i} " + "x" * 400) for i in range(30)])
    body = send(current, "Now the current message.")
    items = sent_items(scripted_provider)
    assert len([i for i in items if i["role"] in ("user", "assistant")]) == 33  # no six/eight-turn cap
    assert body["diagnostics"]["trimmed_messages"] == 0

    settings.ELION_INPUT_BUDGET_TOKENS = 2_500
    body = send(current, "And once more, under a tight budget.")
    items = sent_items(scripted_provider)
    turns = [i for i in items if i["role"] in ("user", "assistant")]
    assert items[0]["role"] == "system" and "Elion Voicefire" in items[0]["content"]
    assert turns[-1]["content"] == "And once more, under a tight budget."
    assert turns[0]["role"] == "user"
    diagnostics = body["diagnostics"]
    assert diagnostics["trimmed_messages"] == 35 - len(turns) > 0
    assert diagnostics["total_input_tokens"] <= 2_500
    assert Message.objects.filter(conversation=current).count() >= 37  # trimmed from the request, never from storage


def test_request_size_details_come_from_the_strings_sent(thread, make_turns, scripted_provider):
    thread(("user", "The comet postcard arrived from Lisbon."), ("assistant", "Lovely."), title="Postcard")
    source = thread(("user", "We watched the comet from the roof."), ("assistant", "Bright tail."), title="Source")
    assert source
    created = Client().post("/api/conversations/", {"persona": "elion"}, content_type="application/json").json()
    conversation = Conversation.objects.get(pk=created["id"])
    make_turns(conversation, ("user", "morning"), ("assistant", "Morning."))
    body = send(conversation, "Do you remember the comet postcard?")
    diagnostics = body["diagnostics"]
    items = sent_items(scripted_provider)
    static, dynamic = system_messages(scripted_provider)
    assert set(diagnostics) == DIAGNOSTIC_NAMES
    assert diagnostics["static_prompt_tokens"] == estimate_tokens(static)
    handoff = static[static.index("## Continuity from a prior thread"):static.index("\n\n## Persona integrity")]
    assert 0 < diagnostics["handoff_tokens"] == estimate_tokens(handoff) < diagnostics["static_prompt_tokens"]
    assert diagnostics["handoff_included_in_static"] is True
    assert 0 < diagnostics["dynamic_context_tokens"] == estimate_tokens(dynamic)
    history = [i["content"] for i in items if i["role"] in ("user", "assistant")]
    assert diagnostics["history_tokens"] == sum(estimate_tokens(text) for text in history)
    assert diagnostics["total_input_tokens"] == (
        diagnostics["static_prompt_tokens"] + diagnostics["history_tokens"]
        + diagnostics["dynamic_context_tokens"] + diagnostics["tool_definition_tokens"]
    )
    # Numbers, booleans and the fixed names only: no prompt, excerpt or message text.
    payload = json.dumps(diagnostics)
    for text in [*history, "comet", "Lisbon", "postcard", "Elion Voicefire", "AUMA"]:
        assert text not in payload
    stored = Message.objects.get(pk=body["assistant_message"]["id"]).metadata["diagnostics"]
    assert stored == diagnostics


def test_recall_gives_the_same_excerpts_in_the_same_order_on_every_run(current, thread, scripted_provider):
    for i in range(4):
        thread(("user", f"kestrel sighting number {i} near the kestrel box"), ("assistant", f"kestrel {i}"),
               title=f"Kestrels {i}")
    send(current, "Do you remember the kestrel sightings?")
    first = dynamic_context(scripted_provider)
    send(current, "Do you remember the kestrel sightings?")
    second = dynamic_context(scripted_provider)
    assert first == second
    found = excerpts(first)
    # More occurrences rank first; the words decide, on either database.
    assert all(words(text).count("kestrel") >= words(found[-1]).count("kestrel") for text in found)


def test_a_prompt_stored_under_an_older_recall_policy_is_rebuilt_before_use(make_conversation, scripted_provider):
    from continuity.rules.policies import policy_markers

    fresh = make_conversation(persona="elion")
    stale_markers = {**policy_markers(), "recall_policy": "recall/older"}
    message_append(
        conversation=fresh, parent=None, role="system", binding=None, make_head=False, kind=MessageKind.STATIC_PROMPT,
        content=f"## Custom instructions\n{RESERVED_RECALL_HEADING}\nlegacy text",
        metadata={"policy_markers": stale_markers},
    )
    fresh.save(update_fields=APPENDED_FIELDS)
    body = send(fresh, "Remember the lighthouse?")  # still the birth period: no reply yet
    assert body["assistant_message"]["status"] == "complete"
    (system,) = system_messages(scripted_provider)
    assert RESERVED_RECALL_HEADING not in system and "legacy text" not in system
    stored = Message.objects.get(conversation=fresh, role="system")
    assert stored.content == system and stored.metadata["policy_markers"] == policy_markers()


def test_candidates_are_the_newest_eligible_matches_of_each_term(thread, monkeypatch):
    """The two-step search (one probe, then rare terms again) gives exactly each
    term's newest `CANDIDATES_PER_TERM` eligible matches, on either database."""
    from continuity.rules import recall_store as recall_search
    from transcript.models import MessageSearchEntry
    from transcript.search_index import message_search_index_sync

    monkeypatch.setattr(recall_search, "CANDIDATES_PER_TERM", 2)
    texts = ["omega one", "alpha one", "omega two", "alpha two", "alpha three", "omega three", "alpha four",
             "alpha five", "beta one", "alpha six"]
    for text in texts:
        thread(("user", text), ("assistant", "ok"))
    hidden = thread(("user", "alpha hidden omega"), ("assistant", "ok"))
    Conversation.objects.filter(pk=hidden.pk).update(shielded=True)
    thread(("user", "alpha newest"), ("assistant", "ok"))
    message_search_index_sync()
    eligible = MessageSearchEntry.objects.exclude(conversation=hidden).order_by("-id").values_list("id", "search_text")
    expected: set[int] = set()
    for term in ("alpha", "omega", "beta", "gamma"):
        expected |= {pk for pk, text in eligible if term in text.split()}.intersection(
            [pk for pk, text in eligible if term in text.split()][:2]
        )
    found = set(recall_search._candidate_entry_ids(["alpha", "omega", "beta", "gamma"], persona="elion", exclude=[]))
    assert found == expected
    assert len(found) == 5  # alpha ×2 (newest), omega ×2 (older, asked again), beta ×1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_candidates_stay_exact_when_rare_terms_are_found_by_bounded_walks_and_id_windows(thread, monkeypatch, seed):
    """PostgreSQL finds a term short in the probe by a bounded walk, then id
    windows growing eightfold (`older_matches_postgres`). With the bounds
    shrunk to a few rows, every path runs on a small thread set, and the result
    is still exactly each term's newest eligible matches (SQLite: the same
    answer from FTS5's own order)."""
    import random

    from continuity.rules import recall_store as recall_search
    from continuity.rules import recall_store_postgres as recall_postgres
    from transcript.models import MessageSearchEntry
    from transcript.search_index import message_search_index_sync

    for module, name, value in ((recall_search, "CANDIDATES_PER_TERM", 3), (recall_search, "PROBE_ROWS", 4),
                                (recall_postgres, "WALK_ROWS", 3), (recall_postgres, "MIN_WALK_ROWS", 1),
                                (recall_postgres, "MIN_WINDOW_ROWS", 2), (recall_postgres, "MAX_WINDOW_ROWS", 40)):
        monkeypatch.setattr(module, name, value)
    rng = random.Random(seed)
    vocabulary = ["common", "usual", "middling", "sparse", "rare", "unique", "filler"]
    weights = [40, 25, 10, 5, 2, 1, 60]
    shielded = []
    for number in range(45):
        text = " ".join(rng.choices(vocabulary, weights, k=4))
        conversation = thread(("user", f"{text} {number}"), ("assistant", "noted"))
        if rng.random() < 0.1:
            shielded.append(conversation.pk)
    Conversation.objects.filter(pk__in=shielded).update(shielded=True)
    message_search_index_sync()
    eligible = list(
        MessageSearchEntry.objects.exclude(conversation__in=shielded).order_by("-id").values_list("id", "search_text")
    )
    for terms in (["common", "rare"], ["sparse", "unique", "middling"], ["unique"], ["usual", "sparse", "absent"]):
        per_term = recall_search.candidates_per_term(len(terms))
        expected: set[int] = set()
        for term in terms:
            expected |= set([pk for pk, text in eligible if term in text.split()][:per_term])
        found = recall_search._candidate_entry_ids(terms, persona="elion", exclude=[])
        assert set(found) == expected, terms
        assert all(found[pk] == dict(eligible)[pk] for pk in found)


@pytest.mark.parametrize("layout", ["short", "newest", "interleaved", "mostly_current"])
@pytest.mark.parametrize("seed", [1, 2])
def test_candidates_skip_the_current_threads_newest_rows_and_stay_exact(thread, monkeypatch, seed, layout):
    """A long current thread holds the newest index rows, or rows all through the index when the owner
    talked there between the other threads. Recall never searches it: SQLite's MATCH excludes its
    conversation inside FTS5; PostgreSQL's probe and walks read the other conversations' newest rows
    (`newest_matches_postgres`) and every window leaves its rows out by the vector's conversation lexeme. The
    candidates are still exactly each term's newest eligible matches among the other threads, whichever
    walk PostgreSQL takes: the primary key over a range the other threads hold at least half of, or each
    other row by its id from the index that leaves the current thread out, where the current thread holds
    most of the range (`mostly_current`). A current thread (and sources) of at most `PROBE_ROWS` messages
    (`short`) needs no walk of the ids first: the primary key's newest `PROBE_ROWS` + its `last_seq` ids
    hold at least `PROBE_ROWS` rows of the others."""
    import random

    from django.db import connection

    from continuity.rules import recall_store as recall_search
    from continuity.rules import recall_store_postgres as recall_postgres
    from tests.support.factories import turns_append
    from transcript.models import MessageSearchEntry
    from transcript.search_index import message_search_index_sync

    for module, name, value in ((recall_search, "CANDIDATES_PER_TERM", 3), (recall_search, "PROBE_ROWS", 4),
                                (recall_postgres, "WALK_ROWS", 3), (recall_postgres, "MIN_WALK_ROWS", 1),
                                (recall_postgres, "MIN_WINDOW_ROWS", 2), (recall_postgres, "MAX_WINDOW_ROWS", 40)):
        monkeypatch.setattr(module, name, value)
    rng = random.Random(seed)
    vocabulary = ["common", "usual", "sparse", "rare", "filler"]
    current = thread(("user", "common usual sparse rare first"), ("assistant", "common usual sparse rare"))
    for number in range(20):
        text = " ".join(rng.choices(vocabulary, [40, 25, 5, 2, 60], k=4))
        thread(("user", f"{text} {number}"), ("assistant", "noted"))
        if layout == "interleaved":
            turns_append(current, ("user", f"common usual sparse rare {number}"), ("assistant", "common usual rare"))
        if layout == "mostly_current":
            turns_append(current, *[("user" if n % 2 == 0 else "assistant", f"common usual sparse rare {number}")
                                    for n in range(6)])
    if layout == "newest":
        turns_append(current, *[("user" if n % 2 == 0 else "assistant", f"common usual sparse rare {n}")
                                for n in range(40)])
    message_search_index_sync()
    eligible = list(
        MessageSearchEntry.objects.exclude(conversation=current).order_by("-id").values_list("id", "search_text")
    )
    if layout != "short":
        assert MessageSearchEntry.objects.order_by("-id").first().conversation_id == current.pk
    walks = []
    for name in ("_walk_range_postgres", "_walk_others_postgres", "_others_span_postgres"):
        walk = getattr(recall_postgres, name)
        monkeypatch.setattr(
            recall_postgres, name, lambda *a, _walk=walk, _name=name, **k: walks.append(_name) or _walk(*a, **k)
        )
    for terms in (["common", "rare"], ["sparse"], ["usual", "rare", "absent"]):
        per_term = recall_search.candidates_per_term(len(terms))
        expected: set[int] = set()
        for term in terms:
            expected |= set([pk for pk, text in eligible if term in text.split()][:per_term])
        found = recall_search._candidate_entry_ids(terms, persona="elion", exclude=[current.pk])
        assert set(found) == expected, terms
    if connection.vendor == "postgresql":  # the layout takes the walk it is meant to take
        assert ("_walk_others_postgres" in walks) == (layout == "mostly_current"), walks
        assert ("_others_span_postgres" in walks) == (layout != "short"), walks
        assert ("_walk_range_postgres" in walks) == (layout != "mostly_current"), walks


def test_recall_index_search_leaves_the_excluded_conversations_rows_out_by_itself(thread):
    """Rule: keyword recall never searches the current conversation, and its index search itself
    leaves that conversation's rows out (SQLite: FTS5's `NOT conversation_id`; PostgreSQL: the vector's
    conversation lexeme, migration 0016; the walk of the newest rows: the index of ids with their
    conversation, migration 0017), so a long current thread costs the search nothing: with an
    eligibility probe that accepts every row, the probe, the walk and the window still return none of
    the excluded thread's rows."""
    from django.db import connection

    from continuity.rules import recall_store as recall_search
    from continuity.rules import recall_store_postgres as recall_postgres
    from transcript.models import MessageSearchEntry
    from transcript.search_index import message_search_index_sync

    other = thread(("user", "lantern harbour"), ("assistant", "lantern"))
    current = thread(*[("user" if n % 2 == 0 else "assistant", f"lantern harbour {n}") for n in range(12)])
    handoff_source = thread(("user", "lantern again"), ("assistant", "lantern"))
    message_search_index_sync()
    theirs = set(MessageSearchEntry.objects.filter(conversation=other).values_list("id", flat=True))
    everything = {"source_sql": "SELECT 1", "source_params": [], "excluded": sorted([current.pk, handoff_source.pk])}
    if connection.vendor == "postgresql":
        walked = recall_postgres._walk_others_postgres(["lantern"], limit=100, rows=10**6, before=None, **everything)
        assert recall_postgres._others_span_postgres(everything["excluded"], rows=10**6, before=None) == (
            min(theirs), max(theirs), len(theirs)
        )
        # The lowest and newest ids, and a bound on the excluded threads' rows (their last_seq) for the walk.
        index = recall_postgres.index_top_postgres(everything["excluded"])
        ids = MessageSearchEntry.objects.order_by("id").values_list("id", flat=True)
        assert (index.lowest, index.newest) == (ids.first(), ids.last())
        assert index.excluded_rows >= MessageSearchEntry.objects.filter(conversation__in=everything["excluded"]).count()
        assert index.excluded_rows > 0
        for rows in (10**6, 1):  # the primary key's newest rows + the bound; the walk of the other threads' ids
            ranged, cover = recall_postgres.newest_matches_postgres(
                ["lantern"], rows=rows, before=index.newest + 1, limit=100, index=index, query=everything
            )
            assert {pk for pk, _ in ranged} == (theirs if rows > 1 else {max(theirs)})
            assert cover.every_row == (rows > 1)
        windowed = recall_postgres._window_matches_postgres("lantern", before=10**9, since=None, limit=100, **everything)
        assert {pk for pk, _ in walked} == {pk for pk, _ in windowed} == theirs
        unexcluded = recall_postgres._window_matches_postgres(
            "lantern", before=10**9, since=None, limit=100, **{**everything, "excluded": []}
        )
        assert len(unexcluded) == len(theirs) + 12 + 2  # the same search without exclusions meets them all
        newest = recall_postgres._window_matches_postgres("lantern", before=10**9, since=None, limit=1, **everything)
        assert [pk for pk, _ in newest] == [max(theirs)]  # the window answers its newest `limit` rows
    else:
        found = recall_search._newest_matches(["lantern"], limit=100, **everything)
        assert {pk for pk, _ in found} == theirs


@pytest.mark.django_db
def test_recall_walks_the_other_conversations_ids_in_an_index_that_holds_their_conversation():
    """Recall's index search holds each row's conversation inside an index, so a long current thread's
    rows are left out without being read. PostgreSQL (migration 0017): the walk of the other
    conversations' newest rows (`_walk_others_postgres`) runs on an index of ids with each row's
    conversation beside it (an index-only scan), and the table is vacuumed after a hundredth of it is
    new, so the newest rows are index-only soon after they are written. SQLite (migration 0013): the
    FTS5 table indexes the conversation beside the text, which `NOT conversation_id : …` matches."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'conversations_messagesearchentry' "
                "AND indexname = 'message_search_id_conversation'"
            )
            (definition,) = cursor.fetchone()
            cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'conversations_messagesearchentry'")
            (options,) = cursor.fetchone()
            assert definition.endswith("USING btree (id) INCLUDE (conversation_id)")
            assert "autovacuum_vacuum_insert_scale_factor=0.01" in options
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'message_search_fts'")
            (definition,) = cursor.fetchone()
            columns = definition[definition.index("fts5(") + len("fts5("):].split("content=")[0]
            assert [column.strip() for column in columns.split(",") if column.strip()] == [
                "search_text", "conversation_id",
            ]


def test_the_conversation_lexeme_is_never_a_search_match(thread):
    """The vector's conversation lexeme (PostgreSQL, migration 0016) is no word anyone can search for:
    Past Conversation Search for a conversation's id or for "conversation" finds no row by it."""
    from transcript.models import Conversation
    from transcript.search_index import message_matching_ids, message_search_index_sync

    conversation = thread(("user", "plain words only"), ("assistant", "yes"))
    message_search_index_sync()
    sources = Conversation.objects.all()
    assert message_matching_ids(["plain"], sources=sources, limit=10)
    for term in ("conversation", conversation.pk.hex):  # search terms are tokens: letters and digits only
        assert message_matching_ids([term], sources=sources, limit=10) == []
