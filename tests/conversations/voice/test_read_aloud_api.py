"""Read aloud (issue 43): `GET …/messages/{id}/speech/` and its segments, through the real openai SDK to
the scripted provider. The speech is kept per (message, text, voice, model, instructions): a replay is
served from the stored blob with no provider request, also after the process forgets everything; it is
made on the conversation's binding; deleting the message deletes its rows and the collector its blobs."""

from __future__ import annotations

import io
import wave

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.services.voice.speech_text import CODE_BLOCK_SAID
from elion.models import AssistantSettings
from tests.support.scripted_audio import ScriptedSpeech
from transcript.attachments import store
from transcript.attachments.gc import attachment_garbage_collect
from transcript.models import Message, MessageSpeech, MessageStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

LONG_REPLY = " ".join(f"This is sentence number {n} of a long reply about the garden." for n in range(40))


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path):
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"


@sync_to_async
def seeded(make_conversation, make_turns, reply: str, status: str = MessageStatus.COMPLETE):
    conversation = make_conversation()
    user, assistant = make_turns(conversation, ("user", "hello"), ("assistant", reply))
    if status != MessageStatus.COMPLETE:
        Message.objects.filter(pk=assistant.pk).update(status=status)
    return conversation, user, assistant


def speech_url(conversation, message) -> str:
    return f"/api/conversations/{conversation.id}/messages/{message.id}/speech/"


def speech_requests(provider):
    return provider.requests_to("/v1/audio/speech")


def seconds_of(data: bytes) -> float:
    with wave.open(io.BytesIO(data)) as audio:
        return audio.getnframes() / audio.getframerate()


async def test_a_reply_is_spoken_with_the_settings_voice_model_and_instructions(
    scripted_provider, make_conversation, make_turns,
):
    await sync_to_async(AssistantSettings.objects.update_or_create)(
        pk=1, defaults={"voice": "cedar", "voice_instructions": "Warm and unhurried."}
    )
    conversation, _, reply = await seeded(make_conversation, make_turns, "The **tomatoes** need water today.")

    response = await AsyncClient().get(speech_url(conversation, reply))

    assert response.status_code == 200
    assert response["Content-Type"] == "audio/wav"
    assert response["ETag"].strip('"') and response["X-Elion-Demo"] == "false"
    assert seconds_of(response.content) > 0
    (request,) = speech_requests(scripted_provider)
    assert request.body == {"model": "gpt-4o-mini-tts", "voice": "cedar", "input": "The tomatoes need water today.",
                            "response_format": "wav", "instructions": "Warm and unhurried."}


async def test_a_replay_makes_no_provider_request_even_after_a_restart(scripted_provider, make_conversation, make_turns):
    conversation, _, reply = await seeded(make_conversation, make_turns, LONG_REPLY)
    client = AsyncClient()
    segments = (await client.get(speech_url(conversation, reply) + "segments/")).json()["segments"]
    assert len(segments) > 2
    first = [await client.get(s["url"]) for s in segments]
    made = len(speech_requests(scripted_provider))
    assert made == len(segments)

    # Nothing of the first requests lives in this process beyond the database and the disk.
    again = [await AsyncClient().get(s["url"]) for s in segments]
    whole = await AsyncClient().get(speech_url(conversation, reply))

    assert len(speech_requests(scripted_provider)) == made
    assert [r.content for r in again] == [r.content for r in first]
    assert [r["ETag"] for r in again] == [r["ETag"] for r in first]
    assert whole.status_code == 200
    assert seconds_of(whole.content) == pytest.approx(sum(seconds_of(r.content) for r in first), rel=1e-3)
    not_modified = await AsyncClient().get(segments[0]["url"], headers={"If-None-Match": first[0]["ETag"]})
    assert not_modified.status_code == 304


async def test_segments_follow_sentences_within_the_input_limit(scripted_provider, make_conversation, make_turns):
    conversation, _, reply = await seeded(make_conversation, make_turns, LONG_REPLY)
    client = AsyncClient()
    for segment in (await client.get(speech_url(conversation, reply) + "segments/")).json()["segments"]:
        await client.get(segment["url"])
    inputs = [r.body["input"] for r in speech_requests(scripted_provider)]
    assert " ".join(inputs) == LONG_REPLY
    assert all(text.endswith(".") and len(text) <= 4096 for text in inputs)
    assert len(inputs[0]) < len(inputs[1])  # a short first segment: playback starts soon


async def test_another_voice_is_another_recording(scripted_provider, make_conversation, make_turns):
    conversation, _, reply = await seeded(make_conversation, make_turns, "Short reply.")
    await AsyncClient().get(speech_url(conversation, reply))
    await AsyncClient().get(speech_url(conversation, reply) + "?voice=sage")
    await AsyncClient().get(speech_url(conversation, reply) + "?voice=sage")
    assert [r.body["voice"] for r in speech_requests(scripted_provider)] == ["marin", "sage"]
    assert await sync_to_async(MessageSpeech.objects.filter(message=reply).count)() == 2


async def test_code_urls_and_markup_are_not_read_literally(scripted_provider, make_conversation, make_turns):
    markdown = "## Steps\n\nRun `make` then see [the docs](https://example.com/x).\n\n```sh\nrm -rf /tmp/x\n```\n\nAll done."
    conversation, _, reply = await seeded(make_conversation, make_turns, markdown)
    await AsyncClient().get(speech_url(conversation, reply))
    said = " ".join(r.body["input"] for r in speech_requests(scripted_provider))
    assert said == f"Steps. Run make then see the docs. {CODE_BLOCK_SAID} All done."


async def test_unknown_ids_are_404_and_a_reply_without_text_is_a_409(scripted_provider, make_conversation, make_turns):
    conversation, user, reply = await seeded(make_conversation, make_turns, "```\nonly code\n```")
    client = AsyncClient()
    assert (await client.get(f"/api/conversations/{conversation.id}/messages/nope/speech/")).status_code == 404
    assert (await client.get(f"/api/conversations/nope/messages/{reply.id}/speech/")).status_code == 404
    _, _, blank = await seeded(make_conversation, make_turns, "   ")
    empty = await client.get(speech_url(await sync_to_async(lambda: blank.conversation)(), blank))
    assert (empty.status_code, empty.json()["error"]) == (409, "speech_unavailable")
    own = await client.get(speech_url(conversation, user))
    assert (own.status_code, own.json()["error"]) == (409, "speech_unavailable")
    assert (await client.get(speech_url(conversation, reply) + "?segment=7")).status_code == 404
    assert (await client.get(speech_url(conversation, reply) + "?segment=x")).status_code == 404
    robot = await client.get(speech_url(conversation, reply) + "?voice=robot")
    assert (robot.status_code, robot.json()["error"]) == (400, "invalid_voice")
    _, _, streaming = await seeded(make_conversation, make_turns, "Half a", MessageStatus.STREAMING)
    live = await client.get(speech_url(await sync_to_async(lambda: streaming.conversation)(), streaming))
    assert (live.status_code, live.json()["error"]) == (409, "speech_unavailable")


async def test_a_provider_error_is_a_502_and_nothing_is_kept(scripted_provider, make_conversation, make_turns):
    conversation, _, reply = await seeded(make_conversation, make_turns, "Short reply.")
    scripted_provider.script_speech(ScriptedSpeech(status=500))
    response = await AsyncClient().get(speech_url(conversation, reply))
    assert (response.status_code, response.json()["error"]) == (502, "provider_error")
    assert response.json()["detail"].startswith("The reply could not be read aloud.")
    assert await sync_to_async(MessageSpeech.objects.count)() == 0


async def test_a_drifted_binding_fails_closed_before_any_text_leaves(
    scripted_provider, make_conversation, make_turns, settings,
):
    conversation, _, reply = await seeded(make_conversation, make_turns, "Short reply.")
    settings.ELION_MODEL = "gpt-5.5-mini"
    response = await AsyncClient().get(speech_url(conversation, reply))
    assert (response.status_code, response.json()["error"]) == (409, "provider_mismatch")
    assert speech_requests(scripted_provider) == []


async def test_without_a_key_the_demo_speaks_on_the_machine(make_conversation, make_turns, settings):
    settings.OPENAI_API_KEY = None
    conversation, _, reply = await seeded(make_conversation, make_turns, "Short reply.")
    response = await AsyncClient().get(speech_url(conversation, reply))
    assert response.status_code == 200
    assert response["X-Elion-Demo"] == "true"
    assert response.content.startswith(b"RIFF") and seconds_of(response.content) > 0.1


async def test_deleting_the_message_deletes_its_speech(scripted_provider, make_conversation, make_turns):
    conversation, _, reply = await seeded(make_conversation, make_turns, "Short reply.")
    await AsyncClient().get(speech_url(conversation, reply))
    row = await sync_to_async(MessageSpeech.objects.get)(message=reply)
    blob = store.blob_path(store.conversation_store(conversation.id), row.sha256)
    assert blob.exists()

    await sync_to_async(Message.objects.filter(pk=reply.pk).delete)()
    await sync_to_async(attachment_garbage_collect)(grace_seconds=0)

    assert await sync_to_async(MessageSpeech.objects.count)() == 0
    assert not blob.exists()


async def test_the_collector_keeps_the_speech_of_a_living_reply(scripted_provider, make_conversation, make_turns):
    conversation, _, reply = await seeded(make_conversation, make_turns, "Short reply.")
    await AsyncClient().get(speech_url(conversation, reply))
    await sync_to_async(attachment_garbage_collect)(grace_seconds=0)
    await AsyncClient().get(speech_url(conversation, reply))
    assert len(speech_requests(scripted_provider)) == 1


async def test_voices_and_their_previews(scripted_provider):
    client = AsyncClient()
    listing = (await client.get("/api/voices/")).json()
    assert "marin" in listing["voices"] and listing["voice"] == "marin"
    first = await client.get("/api/voices/cedar/preview/")
    second = await client.get("/api/voices/cedar/preview/")
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert [r.body["voice"] for r in speech_requests(scripted_provider)] == ["cedar"]
    unknown = await client.get("/api/voices/robot/preview/")
    assert (unknown.status_code, unknown.json()["error"]) == (400, "invalid_voice")


async def test_a_stopped_reply_keeps_its_words_readable(scripted_provider, make_conversation, make_turns):
    _, _, reply = await seeded(make_conversation, make_turns, "Half a thought.", MessageStatus.INTERRUPTED)
    conversation = await sync_to_async(lambda: reply.conversation)()
    assert (await AsyncClient().get(speech_url(conversation, reply))).status_code == 200


async def test_a_reply_read_aloud_carries_its_voice_mark_in_the_api_and_on_the_page(
    scripted_provider, make_conversation, make_turns,
):
    conversation, user, reply = await seeded(make_conversation, make_turns, "The tomatoes need water today.")
    client = AsyncClient()
    messages = f"/api/conversations/{conversation.id}/messages/"

    def marks(body: dict) -> dict:
        return {m["id"]: m["read_aloud_at"] for m in body["results"]}

    assert marks((await client.get(messages)).json()) == {str(user.id): None, str(reply.id): None}
    assert "data-read-aloud-mark" not in (await client.get(f"/c/{conversation.id}/")).content.decode()

    assert (await client.get(speech_url(conversation, reply))).status_code == 200

    first = marks((await client.get(messages)).json())
    assert first[str(user.id)] is None and first[str(reply.id)] is not None
    await client.get(speech_url(conversation, reply))  # a replay: the mark keeps its first time
    assert marks((await client.get(messages)).json()) == first
    page = (await client.get(f"/c/{conversation.id}/")).content.decode()
    assert page.count("data-read-aloud-mark") == 1
