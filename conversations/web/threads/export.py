"""Conversation exports: Markdown with speaker labels, and JSON, streamed.

Exports carry the live branch, including Branch / Fresh Chat handoff bubbles
(they are history), but never the stored static prompt.

Both are produced piece by piece from `live_branch_batches` (a batch of rows
and its attachment manifests at a time), so memory stays bounded whatever the
thread length; the bytes are the same as when the whole export was built in
memory first. One function renders one message (`markdown_message`,
`json_message`): a new per-message field goes there. The JSON export also
lists the artifacts born in the conversation, each with its versions.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator

from rest_framework.renderers import JSONRenderer

from artifacts.services import artifacts_export
from continuity.rules.labels import speaker_label
from continuity.web.conversation_shape import conversation_repr
from conversations.web.serializers import message_repr
from elion.base.assistant_settings import assistant_settings_get
from transcript.attachments.manifests import manifests_for
from transcript.branch_window import live_branch_batches
from transcript.citations import sources_numbered
from transcript.models import Attachment, Conversation, Message, MessageStatus, Role
from transcript.models.messages import APP_EVENT_KINDS
from transcript.siblings import Siblings, siblings_for

EXPORT_BATCH = 200
SPOKEN_ROLES = (Role.USER, Role.ASSISTANT)
# The API's own JSON rendering (compact, UTF-8, U+2028/U+2029 escaped): the
# streamed export is byte for byte what rendering the whole object gave.
_render_json = JSONRenderer().render


def markdown_message(message: Message, label: str, attachments: list[Attachment]) -> str:
    """One turn: a blank line, the speaker label, the text, one line per attachment, then its numbered sources.

    Reasoning and tool parts are never in the Markdown export (they are not speech); the JSON export keeps them.
    A refusal and a cut-off reply say so on a line of their own.
    """
    lines = ["", label, message.content]
    metadata = message.metadata or {}
    if metadata.get("refusal"):
        lines.append("[Declined: the model refused to answer this.]")
    if message.status == MessageStatus.INCOMPLETE:
        lines.append(f"[Cut off by the provider: {metadata.get('incomplete_reason') or 'unknown'}]")
    lines += [
        f"[{'Generated image' if attachment.generated else 'Attachment'}: {attachment.name} ({attachment.mime})]"
        for attachment in attachments
    ]
    sources = sources_numbered(message.metadata)
    if sources:
        lines += ["", "Sources:"]
        lines += [f"{source['number']}. {source['title']} <{_autolink(source['url'])}>" for source in sources]
    return "\n".join(lines) + "\n"


def _autolink(url: str) -> str:
    """A safe link as a Markdown autolink holds it (no spaces or angle brackets inside)."""
    return url.replace(" ", "%20").replace("<", "%3C").replace(">", "%3E")


def _rstripped(pieces: Iterable[str]) -> Iterator[str]:
    """`"".join(pieces).rstrip()`, streamed: trailing whitespace is held back until more text follows."""
    held = ""
    for piece in pieces:
        text = piece.rstrip()
        if text:
            yield held + text
            held = piece[len(text):]
        else:
            held += piece


def export_markdown_chunks(conversation: Conversation) -> Generator[str, None, None]:
    """The Markdown export: a title line, then each spoken turn of the live branch, ending in one newline.

    The branch is walked when this is called (`live_branch_batches`), so a broken tree is refused before
    the first byte is streamed."""
    batches = live_branch_batches(conversation, roles=SPOKEN_ROLES, batch_size=EXPORT_BATCH)
    return _markdown_chunks(conversation, batches)


def _markdown_chunks(conversation: Conversation, batches: Iterator[list[Message]]) -> Generator[str, None, None]:
    settings_row = assistant_settings_get()
    labels = {
        role: speaker_label(
            role, conversation.persona, owner_name=settings_row.owner_name, display_name=settings_row.display_name
        )
        for role in SPOKEN_ROLES
    }

    def pieces() -> Iterator[str]:
        yield f"# {conversation.display_title}\n"
        for batch in batches:
            manifests = manifests_for(batch)
            # An app event (a check-in's trigger) is nobody's speech: the Markdown export leaves it out.
            yield "".join(
                markdown_message(m, labels[m.role], manifests.get(m.id, [])) for m in batch if m.kind not in APP_EVENT_KINDS
            )

    yield from _rstripped(pieces())
    yield "\n"


def json_message(message: Message, attachments: list[Attachment], siblings: Siblings) -> bytes:
    """One message of the JSON export: its API representation and its stored parts (tool calls and
    results, reasoning items), which the API leaves out and a faithful copy keeps."""
    return _render_json({**message_repr(message, attachments, siblings), "parts": message.parts or []})


def export_json_chunks(conversation: Conversation) -> Generator[bytes, None, None]:
    """The JSON export `{"conversation": {…}, "messages": [every live-branch message]}`, streamed; the branch
    is walked when this is called, as for `export_markdown_chunks`."""
    return _json_chunks(conversation, live_branch_batches(conversation, batch_size=EXPORT_BATCH))


def _json_chunks(conversation: Conversation, batches: Iterator[list[Message]]) -> Generator[bytes, None, None]:
    yield b'{"conversation":' + _render_json(conversation_repr(conversation)) + b',"messages":['
    separator = b""
    for batch in batches:
        manifests, siblings = manifests_for(batch), siblings_for(conversation.id, batch)
        yield separator + b",".join(json_message(m, manifests.get(m.id, []), siblings[m.id]) for m in batch)
        separator = b","
    yield b'],"artifacts":' + _render_json(artifacts_export(conversation.id)) + b"}"
