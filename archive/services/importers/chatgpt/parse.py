"""Reading a ChatGPT data export: `conversations.json`, split `conversations-NNN.json` files, or the export zip.

Each conversation is a tree (`mapping`: node id → `{message, parent,
children}`); edits and regenerations are sibling branches. The branch the
owner last saw ends at `current_node`: walked from there to the root, it is
the document. Every other node of the tree is read too: its turns are kept as
"alternate" turns, numbered along their own branch. Only what was said
between the owner and the assistant is speech: no system or tool messages, no
hidden context (custom instructions are read apart, as a suggestion for
Settings), no messages addressed to a tool. Image parts
(`image_asset_pointer`) are kept as references, resolved against the zip's
files by `ExportFiles.image`.

One conversation that cannot be read is a `ConversationProblem`, never the
end of the import; only a file that is not an export at all (not JSON, not a
list of conversations or one conversation object) is refused whole. Every
field is type-checked where it is read.

The file is parsed as a stream (ijson), one conversation at a time, so
memory stays bounded by the largest conversation, not the file. The files of
the upload (the JSON itself, or the zip's members) are read by
`export_reader`.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import ijson

from archive.services.importers.export_reader import (
    CONVERSATIONS_MEMBER,
    DAMAGED_ZIP,
    AlternateTurn,
    MalformedExport,
    UnreadableConversation,
)
from archive.services.json_values import TOO_DEEP, built_value
from archive.services.parsing import ConversationProblem, Turn
from elion.base.errors import InvalidInput
from elion.base.input_checks import MAX_JSON_DEPTH, text_check

_SPOKEN_CONTENT_TYPES = {"text", "multimodal_text"}
_SPEAKING_ROLES = ("user", "assistant")
# `file-service://file-XYZ` (older exports) or `sediment://file_XYZ` (newer): the id names a zip member.
_IMAGE_POINTER = re.compile(r"^(?:file-service|sediment)://(file[-_][A-Za-z0-9]+)$")
# This many leading items with not one conversation among them: the file is not an export.
NOT_AN_EXPORT_AFTER = 20


@dataclass(frozen=True)
class ImageReference:
    file_id: str  # "file-XYZ" / "file_XYZ"
    turn: int | None  # the turn that showed it (or, for a tool's image, the turn before it)
    branch: str  # "current" | "alternate"


@dataclass(frozen=True)
class ExportedConversation:
    index: int  # 0-based, across every file of the import
    file: str  # the file (or zip member) it came from
    external_id: str
    title: str
    created_at: datetime | None
    updated_at: datetime | None
    # Speaker names are left as roles ("user" / "assistant"); the importer labels them.
    turns: tuple[Turn, ...]
    alternate_turns: tuple[AlternateTurn, ...] = ()
    images: tuple[ImageReference, ...] = ()
    # Custom instructions the export carried as hidden context ("" when none).
    custom_instructions: str = ""


# --- One conversation -----------------------------------------------------------------


def _moment(value: object) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _hidden(message: dict) -> bool:
    """Context the owner never saw as speech: hidden system prompts, custom instructions."""
    metadata = _dict(message.get("metadata"))
    return bool(metadata.get("is_visually_hidden_from_conversation") or metadata.get("is_user_system_message"))


def _role(message: dict) -> str:
    role = _dict(message.get("author")).get("role")
    return role if isinstance(role, str) else ""


def _content(message: dict) -> tuple[str, list]:
    content = _dict(message.get("content"))
    content_type = content.get("content_type")
    parts = content.get("parts")
    return (content_type if isinstance(content_type, str) else "", parts if isinstance(parts, list) else [])


def spoken_text(message: dict) -> tuple[str, str] | None:
    """`(role, text)` for a message the owner saw in the conversation, else None."""
    role = _role(message)
    if role not in _SPEAKING_ROLES or _hidden(message):
        return None
    if message.get("recipient", "all") != "all":  # addressed to a tool (browser, python…)
        return None
    content_type, parts = _content(message)
    if content_type not in _SPOKEN_CONTENT_TYPES:
        return None
    text = "\n".join(part for part in parts if isinstance(part, str)).strip()
    return (role, text) if text else None


def _labelled(pairs: list[tuple[str, object]]) -> str:
    """The non-empty texts, each under its label when there are several."""
    present = [(label, value.strip()) for label, value in pairs if isinstance(value, str) and value.strip()]
    if len(present) == 1:
        return present[0][1]
    return "\n\n".join(f"{label}:\n{value}" for label, value in present)


def custom_instructions(message: dict) -> str:
    """The owner's custom instructions a hidden-context message carries ("" when none)."""
    content = _dict(message.get("content"))
    metadata = _dict(message.get("metadata"))
    if content.get("content_type") == "user_editable_context":
        return _labelled([("About me", content.get("user_profile")), ("How to respond", content.get("user_instructions"))])
    if metadata.get("is_user_system_message"):
        data = _dict(metadata.get("user_context_message_data"))
        labelled = _labelled([("About me", data.get("about_user_message")),
                              ("How to respond", data.get("about_model_message"))])
        if labelled:
            return labelled
        _, parts = _content(message)
        return "\n".join(part for part in parts if isinstance(part, str)).strip()
    return ""


def image_ids(message: dict) -> list[str]:
    """File ids of the images a visible user, assistant or tool message showed (a tool draws generated images)."""
    if _role(message) not in (*_SPEAKING_ROLES, "tool") or _hidden(message):
        return []
    content_type, parts = _content(message)
    if content_type != "multimodal_text":
        return []
    found = []
    for part in parts:
        part = _dict(part)
        pointer = part.get("asset_pointer")
        if part.get("content_type") == "image_asset_pointer" and isinstance(pointer, str):
            match = _IMAGE_POINTER.match(pointer)
            if match:
                found.append(match.group(1))
    return found


def _node(mapping: dict, node_id: object) -> dict:
    if not isinstance(node_id, str):
        raise UnreadableConversation("it names a message node that is not a string id")
    node = mapping.get(node_id)
    if not isinstance(node, dict):
        raise UnreadableConversation("it refers to a message node that is missing")
    return node


def current_path(mapping: dict, current_node: object) -> list[str]:
    """Node ids from the root to `current_node`, in order."""
    if current_node is None:
        raise UnreadableConversation("it names no current message (current_node)")
    path: list[str] = []
    seen: set[str] = set()
    node_id = current_node
    while node_id is not None:
        node = _node(mapping, node_id)
        if node_id in seen:
            raise UnreadableConversation("its message tree has a cycle")
        seen.add(node_id)
        path.append(node_id)
        node_id = node.get("parent")
    path.reverse()
    return path


def _message(node: dict) -> dict | None:
    message = node.get("message")
    return message if isinstance(message, dict) else None


def _children(node: dict) -> list[str]:
    children = node.get("children")
    return [c for c in children if isinstance(c, str)] if isinstance(children, list) else []


def _roots(mapping: dict) -> list[str]:
    return [
        node_id for node_id, node in mapping.items()
        if isinstance(node, dict) and (not isinstance(node.get("parent"), str) or node["parent"] not in mapping)
    ]


def _tree_walk(mapping: dict) -> Iterator[tuple[str, dict, int]]:
    """`(node id, message, turns said before it on its branch)` for every reachable node with a message, depth first."""
    seen: set[str] = set()
    pending: list[tuple[str, int]] = [(root, 0) for root in reversed(_roots(mapping))]
    while pending:
        node_id, before = pending.pop()
        node = mapping.get(node_id)
        if node_id in seen or not isinstance(node, dict):
            continue
        seen.add(node_id)
        message = _message(node)
        said = before + (1 if message is not None and spoken_text(message) is not None else 0)
        if message is not None:
            yield node_id, message, before
        pending.extend((child, said) for child in reversed(_children(node)))


def _turn(role: str, text: str, message: dict) -> Turn:
    return Turn(speaker=role, role=role, text=text, spoken_at=_moment(message.get("create_time")))


def read_conversation(raw: object, index: int, file: str = CONVERSATIONS_MEMBER) -> ExportedConversation:
    """One conversation of an export, every branch; UnreadableConversation saying why not."""
    if not isinstance(raw, dict):
        raise UnreadableConversation("it is not a JSON object")
    mapping = raw.get("mapping")
    if not isinstance(mapping, dict):
        raise UnreadableConversation("it has no message mapping")
    try:
        text_check(raw, "it")
    except InvalidInput as exc:
        raise UnreadableConversation("it holds a NUL character or an unpaired surrogate") from exc
    path = current_path(mapping, raw.get("current_node"))
    on_path = set(path)
    turns: list[Turn] = []
    images: list[ImageReference] = []
    instructions = ""
    for node_id in path:
        message = _message(mapping[node_id])
        if message is None:
            continue
        spoken = spoken_text(message)
        if spoken is not None:
            turns.append(_turn(*spoken, message))
        images += [ImageReference(i, len(turns) or None, "current") for i in image_ids(message)]
        instructions = instructions or custom_instructions(message)
    alternates: list[AlternateTurn] = []
    for node_id, message, before in _tree_walk(mapping):
        instructions = instructions or custom_instructions(message)
        if node_id in on_path:
            continue
        spoken = spoken_text(message)
        if spoken is not None:
            alternates.append(AlternateTurn(before + 1, _turn(*spoken, message)))
        number = before + (1 if spoken is not None else 0)
        images += [ImageReference(i, number or None, "alternate") for i in image_ids(message)]
    external_id = raw.get("conversation_id") or raw.get("id") or ""
    if not isinstance(external_id, str | int) or isinstance(external_id, bool):
        external_id = ""
    title = raw.get("title") if isinstance(raw.get("title"), str) else ""
    return ExportedConversation(
        index=index,
        file=file,
        external_id=str(external_id),
        title=" ".join(title.split())[:250],
        created_at=_moment(raw.get("create_time")),
        updated_at=_moment(raw.get("update_time")),
        turns=tuple(turns),
        alternate_turns=tuple(alternates),
        images=tuple(dict.fromkeys(images)),
        custom_instructions=instructions,
    )


def _problem(raw: object, index: int, file: str, reason: str) -> ConversationProblem:
    title = raw.get("title") if isinstance(raw, dict) and isinstance(raw.get("title"), str) else ""
    # The title of an unreadable conversation is unchecked text: no NUL, no lone surrogate in the answer.
    title = "".join(ch for ch in title if ch != "\x00" and not 0xD800 <= ord(ch) <= 0xDFFF)
    return ConversationProblem(index=index, file=file, title=" ".join(title.split())[:250], reason=reason)


def _conversation_shaped(raw: object) -> bool:
    return isinstance(raw, dict) and isinstance(raw.get("mapping"), dict)


# --- A whole file ---------------------------------------------------------------------


def _top_level_values(event: str, value: object, events: Iterator[tuple[str, object]]) -> Iterator[object]:
    """The file's conversations as values, built one at a time, none deeper than MAX_JSON_DEPTH
    (`archive.services.json_values`): the items of its top-level list, or the one object it is."""
    if event == "start_map":
        yield built_value(event, value, events)
        return
    for event, value in events:
        if event == "end_array":
            return
        yield built_value(event, value, events)


def parse_conversations(
    stream: io.BufferedReader, *, file: str = CONVERSATIONS_MEMBER, first_index: int = 0
) -> Iterator[ExportedConversation | ConversationProblem]:
    """Every conversation of one file (a list of conversations, or one conversation object), read and
    yielded one at a time; a conversation that cannot be read is a ConversationProblem. A file that is
    damaged or not an export raises MalformedExport while it is read: callers read the whole file before
    storing anything, so such a file stores nothing."""
    try:
        if not stream.peek(1):
            raise InvalidInput(f"{file} is empty.", code="empty_file")
        if stream.peek(3)[:3] == b"\xef\xbb\xbf":
            stream.read(3)  # a UTF-8 byte order mark
        events = iter(ijson.basic_parse(stream, use_float=True))
        event, value = next(events)
        if event not in ("start_array", "start_map"):
            raise MalformedExport(f"{file} must hold a list of conversations.")
        single = event == "start_map"
        shaped = items = 0
        for offset, raw in enumerate(_top_level_values(event, value, events)):
            items += 1
            shaped += _conversation_shaped(raw)
            if not shaped and raw is not TOO_DEEP and (single or items >= NOT_AN_EXPORT_AFTER):
                raise MalformedExport(f"{file} holds no ChatGPT conversations; is it a ChatGPT data export?")
            index = first_index + offset
            if raw is TOO_DEEP:
                yield _problem(raw, index, file, f"it is nested deeper than {MAX_JSON_DEPTH} levels")
                continue
            try:
                yield read_conversation(raw, index, file)
            except UnreadableConversation as exc:
                yield _problem(raw, index, file, exc.reason)
        if items and not shaped:
            raise MalformedExport(f"{file} holds no ChatGPT conversations; is it a ChatGPT data export?")
    except ijson.JSONError as exc:
        raise MalformedExport(
            f"{file} is not valid JSON; upload the ChatGPT export zip or its conversations.json."
        ) from exc
    except DAMAGED_ZIP as exc:
        # A damaged member surfaces while it streams: zlib errors, CRC mismatches (BadZipFile), a cut stream.
        raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc
