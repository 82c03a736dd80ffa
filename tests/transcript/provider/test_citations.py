"""Citations (issue "GPT-5.5 the way the Responses API means it"): the provider's `url_citation` annotations
become `"citations": [{"url", "title", "start", "end"}]` on the message (offsets into the reply's text),
rendered as numbered source links under the reply; only http and https links are kept. Real `openai` SDK
against the scripted provider, which sends the annotations as the Responses API does.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.support.factories import sent_and_answered as send
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply
from transcript.citations import citations_clean
from transcript.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Bees dance to share directions. Hives vote on new homes."
DANCE = {"url": "https://example.org/bees/dance", "title": "The waggle dance", "start": 0, "end": 31}
VOTE = {"url": "http://example.net/swarm?x=1", "title": "Swarm decisions", "start": 32, "end": 56}


def test_citations_are_kept_on_the_message_with_offsets_into_the_reply(scripted_provider):
    scripted_provider.script(ScriptedReply(text=TEXT, citations=[DANCE, VOTE]))
    conversation = thread()
    body = send(conversation, "How do bees decide?")
    assert body["assistant_message"]["citations"] == [DANCE, VOTE]
    listed = Client().get(f"/api/conversations/{conversation.pk}/messages/").json()["results"]
    assert listed[-1]["citations"] == [DANCE, VOTE]
    assert TEXT[DANCE["start"]:DANCE["end"]] == "Bees dance to share directions."


def test_citations_after_a_tool_round_point_into_the_whole_reply(scripted_provider):
    first = "Let me look. "
    scripted_provider.script(
        ScriptedReply(text=first, tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "call_c1"}]),
        ScriptedReply(text=TEXT, citations=[DANCE]),
    )
    body = send(thread(), "Look it up")
    (citation,) = body["assistant_message"]["citations"]
    content = body["assistant_message"]["content"]
    assert content == first + TEXT
    assert content[citation["start"]:citation["end"]] == "Bees dance to share directions."


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", "data:text/html,<b>x</b>", "ftp://example.org/file", "https://user:pw@example.org/",
    "https:///no-host", "https://example.org/\u0000nul", "//example.org/relative", "https://example.org/" + "a" * 3000,
])
def test_citations_keep_only_http_and_https_links(scripted_provider, url):
    scripted_provider.script(ScriptedReply(text=TEXT, citations=[{**DANCE, "url": url}, VOTE]))
    body = send(thread(), "Sources?")
    assert body["assistant_message"]["citations"] == [VOTE]


def test_citations_offsets_are_clamped_and_titles_made_printable():
    kept = citations_clean([{"url": "https://a.example/", "title": "Ti\u0007tle\n", "start": -5, "end": 999}], 10)
    assert kept == [{"url": "https://a.example/", "title": "Title", "start": 0, "end": 10}]


def test_citations_are_numbered_source_links_under_the_reply_on_the_page(scripted_provider):
    scripted_provider.script(ScriptedReply(text=TEXT, citations=[DANCE, VOTE, {**DANCE, "start": 5, "end": 9}]))
    conversation = thread()
    body = send(conversation, "How do bees decide?")
    page = Client().get(f"/c/{conversation.pk}/").content.decode()
    bubble = page[page.index(f'id="message-{body["assistant_message"]["id"]}"'):]
    sources = bubble[bubble.index("data-sources"):bubble.index("</ol>")]
    assert sources.count("data-source-link") == 2  # one per link, in first-cited order
    assert sources.index("The waggle dance") < sources.index("Swarm decisions")
    assert 'href="https://example.org/bees/dance"' in sources and 'rel="noopener noreferrer nofollow"' in sources
    fragment = Client().get(
        f"/c/{conversation.pk}/messages/{body['assistant_message']['id']}/fragment/"
    )
    assert fragment.status_code == 200 and b"data-source-link" in fragment.content


def test_a_reply_without_citations_has_none(scripted_provider):
    scripted_provider.script(ScriptedReply(text="No sources needed."))
    conversation = thread()
    body = send(conversation, "Hi")
    assert body["assistant_message"]["citations"] == []
    assert "data-sources" not in Client().get(f"/c/{conversation.pk}/").content.decode()
    assert "citations" not in Message.objects.get(pk=body["assistant_message"]["id"]).metadata


def export(conversation, fmt: str) -> str:
    response = Client().get(f"/api/conversations/{conversation.pk}/export/", {"format": fmt})
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def test_citations_are_kept_in_the_markdown_and_json_exports(scripted_provider):
    scripted_provider.script(ScriptedReply(text=TEXT, citations=[DANCE, VOTE], reasoning=["Sorting the sources."]))
    conversation = thread()
    send(conversation, "How do bees decide?")
    markdown = export(conversation, "markdown")
    assert "Sources:\n1. The waggle dance <https://example.org/bees/dance>\n2. Swarm decisions <http://example.net/swarm?x=1>" in markdown
    assert "Sorting the sources." not in markdown  # reasoning is never in the Markdown export
    (reply,) = [m for m in json.loads(export(conversation, "json"))["messages"] if m["role"] == "assistant"]
    assert reply["citations"] == [DANCE, VOTE]
    # the JSON export keeps the reasoning items and the message output item, verbatim
    assert [p["type"] for p in reply["parts"]] == ["reasoning", "output_item"]
    assert reply["parts"][0]["summary"] == ["Sorting the sources."] and reply["parts"][0]["encrypted_content"]
