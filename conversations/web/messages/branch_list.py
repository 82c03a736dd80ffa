"""The message list without `limit`: the whole live branch as `{"results": [...]}`, streamed.

The branch is read in segments of `LIST_BATCH` messages (`live_branch_batches`:
one walk from the head notes where each segment ends, then each segment is
read by a bounded walk as the body is written), and each segment's versions
and attachment manifests are read for it alone. So the process holds one
segment at a time, whatever the thread's length, and the bytes are what
rendering the whole list at once gave (the API's own JSON renderer, one
message at a time, joined by commas: compact JSON has no other separators).
A branch of at most one segment is answered whole, as before (with its
length); a longer one streams (`conversations.web.threads.api.streamed_response`:
under Daphne one piece at a time on the request's thread).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from itertools import chain

from django.http import HttpResponse, StreamingHttpResponse
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from conversations.services.message_selectors import messages_shown
from conversations.web import serializers as s
from conversations.web.threads.api import streamed_response
from transcript.branch_window import live_branch_batches
from transcript.models import Conversation, Message

LIST_BATCH = 200
JSON = "application/json"
_render_json = JSONRenderer().render


def branch_list_response(request: Request, conversation: Conversation) -> HttpResponse | StreamingHttpResponse:
    """The whole live branch: answered whole when it fits one segment, streamed otherwise.

    The branch is walked first, so a broken tree is refused (`BrokenTree`, 409)
    before the first byte."""
    batches = live_branch_batches(conversation, batch_size=LIST_BATCH)
    first, second = next(batches, None), next(batches, None)
    if second is None:
        return HttpResponse(b"".join(_chunks(conversation, iter([first] if first else []))), content_type=JSON)
    return streamed_response(request, _chunks(conversation, chain([first, second], batches)), JSON)


def _chunks(conversation: Conversation, batches: Iterator[list[Message]]) -> Generator[bytes, None, None]:
    yield b'{"results":['
    separator = b""
    for batch in batches:
        rendered = s.messages_repr(messages_shown(conversation, batch))
        yield separator + b",".join(_render_json(item) for item in rendered)
        separator = b","
    yield b"]}"
