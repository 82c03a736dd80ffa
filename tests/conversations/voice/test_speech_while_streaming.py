"""Talk reads a reply as it streams (issue 43): the segments of a reply still being written are the first
segments of the settled reply, word for word, so the speech made while it streams is the speech a replay
finds (no second provider request). The segmentation at every cut of a few Markdown replies, then the
API on a streaming reply through the real openai SDK to the scripted provider, on both databases."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.services.voice.speech_text import PIECE_LIMIT, SEGMENT_CHARACTERS, speech_segments, speech_text
from transcript.models import Message, MessageSpeech, MessageStatus

REPLIES = [
    " ".join(f"This is sentence number {n} of a long reply about the garden." for n in range(14)),
    "## Steps\n\nRun `make` then see [the docs](https://example.com/x). It is **quick**, e.g. two minutes.\n\n"
    "```sh\nrm -rf /tmp/x\n```\n\n```py\nprint(1)\n```\n\n- water the *tomatoes*\n- feed the snake_case beans\n\n"
    "| plant | month |\n|---|---|\n| kale | May |\n\nIt costs 3.5 dollars. Done!",
    "Yes. " + "word " * 400 + "ends here. And a last one?",
]


@pytest.mark.parametrize("reply", REPLIES, ids=["sentences", "markdown", "long-sentence"])
def test_a_streaming_reply_gives_the_settled_replys_first_segments_at_every_cut(reply):
    settled = speech_segments(speech_text(reply))
    assert all(len(segment) <= SEGMENT_CHARACTERS + PIECE_LIMIT for segment in settled)
    seen = 0
    for cut in range(len(reply) + 1):
        streamed = speech_segments(speech_text(reply[:cut]), finished=False)
        assert streamed == settled[:len(streamed)], reply[:cut]
        assert len(streamed) >= seen  # a segment, once given, stays
        seen = len(streamed)
    assert seen >= len(settled) - 1  # only the segment the reply's end closes waits for the settle


def test_the_first_segment_is_the_first_sentence_and_the_rest_gather_sentences():
    settled = speech_segments(speech_text(REPLIES[0]))
    assert settled[0] == "This is sentence number 0 of a long reply about the garden."
    assert all(len(segment) >= SEGMENT_CHARACTERS for segment in settled[1:-1])
    assert " ".join(settled) == REPLIES[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_speech_made_while_streaming_is_what_the_settled_reply_replays(
    scripted_provider, make_conversation, make_turns, settings, tmp_path,
):
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    reply_text = REPLIES[0]
    half = reply_text[: len(reply_text) // 2]
    conversation = await sync_to_async(make_conversation)()
    _, reply = await sync_to_async(make_turns)(conversation, ("user", "tell me"), ("assistant", half))
    await sync_to_async(Message.objects.filter(pk=reply.pk).update)(status=MessageStatus.STREAMING)
    client = AsyncClient()
    base = f"/api/conversations/{conversation.id}/messages/{reply.id}/speech/"

    live = (await client.get(base + "segments/")).json()
    assert live["complete"] is False
    assert len(live["segments"]) >= 1
    for segment in live["segments"]:  # Talk asks for each finished segment while the reply streams
        response = await client.get(segment["url"])
        assert response.status_code == 200, response.content
    beyond = await client.get(f"{base}?segment={len(live['segments'])}")
    assert (beyond.status_code, beyond.json()["error"]) == (404, "speech_segment_not_found")  # not written yet
    whole = await client.get(base)  # the whole reply only once it has settled
    assert (whole.status_code, whole.json()["error"]) == (409, "speech_unavailable")
    made_while_streaming = len(scripted_provider.requests_to("/v1/audio/speech"))
    assert made_while_streaming == len(live["segments"])

    await sync_to_async(Message.objects.filter(pk=reply.pk).update)(status=MessageStatus.COMPLETE, content=reply_text)
    settled = (await client.get(base + "segments/")).json()
    assert settled["complete"] is True
    assert len(settled["segments"]) > len(live["segments"])
    assert (await client.get(base)).status_code == 200  # the whole settled reply, every segment
    requests = scripted_provider.requests_to("/v1/audio/speech")
    assert len(requests) == len(settled["segments"])  # the streamed segments were not made again
    assert [r.body["input"] for r in requests] == speech_segments(speech_text(reply_text))
    assert await sync_to_async(MessageSpeech.objects.filter(message_id=reply.id).count)() == len(settled["segments"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_reply_with_no_finished_sentence_yet_lists_no_segments(scripted_provider, make_conversation, make_turns):
    conversation = await sync_to_async(make_conversation)()
    _, reply = await sync_to_async(make_turns)(conversation, ("user", "hi"), ("assistant", "Half a sent"))
    await sync_to_async(Message.objects.filter(pk=reply.pk).update)(status=MessageStatus.STREAMING)
    listing = await AsyncClient().get(f"/api/conversations/{conversation.id}/messages/{reply.id}/speech/segments/")
    assert listing.status_code == 200
    assert listing.json()["complete"] is False and listing.json()["segments"] == []
