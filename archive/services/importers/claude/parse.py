"""Reading a Claude.ai data export: the export zip or its `conversations.json`, then `projects.json`.

`conversations.json` is a list of conversations `{uuid, name, created_at,
updated_at, account, chat_messages}`; what each message says (and the text of
the files attached to it) is read by `messages`. The text of an attached file
is stored as chunks labelled with the file's name, outside every turn (so no
handoff or label reading can take it for the owner's words). Files without
extracted text (`files`) are not in the export at all.

`projects.json` (a list of projects `{uuid, name, description,
prompt_template, docs: [{uuid, filename, content, created_at}], created_at,
updated_at}`) is read after the conversations, one project at a time, each a
`ClaudeProject` or a `ConversationProblem` (numbered after the conversations):
its documents are archive material, never speech, and its `prompt_template`
is custom instructions the owner may take. A `projects.json` that cannot be
read is a problem, never a refusal: the conversations are the export.
`users.json` is not read; `memories.json` is read apart (`memories`).

**Branches.** Newer exports give each message a `uuid` and a
`parent_message_uuid` (the root's parent is `ROOT_PARENT`): an edited or
retried message is a sibling under the same parent. The branch the owner last
saw ends at the conversation's `current_leaf_message_uuid` (when it names a
message of the file), else at the newest leaf (by `created_at`, then list
order); walked from there to the root, it is the document. Every other
message's turn is an alternate turn, numbered along its own branch, as the
ChatGPT reader does. A message whose parent is not in the file starts a branch
of its own from the root (nothing it said is lost) and the conversation notes
it (`ClaudeConversation.notes`, reported as a problem when it is stored).
Messages without `parent_message_uuid` (older exports) are read in list order.

One conversation that cannot be read (not an object, no `chat_messages` list,
a message of the wrong shape, text nested deeper than anyone writes, a NUL or
a lone surrogate) is a `ConversationProblem`; only a file that is not an
export at all is refused whole. The file is parsed as a stream of basic JSON
events, one conversation at a time, and each conversation is built without
recursion and only to `MAX_JSON_DEPTH` levels: a deeper one is read to its
end unbuilt and named as a problem.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import ijson

from archive.services.importers.claude.messages import (
    ATTACHMENT_NAME_MAX,
    AttachmentText,
    Said,
    flat_text,
    iso_moment,
    message_said,
)
from archive.services.importers.export_reader import DAMAGED_ZIP, AlternateTurn, UnreadableConversation
from archive.services.json_values import TOO_DEEP, built_value
from archive.services.parsing import ConversationProblem, Turn
from elion.base.errors import InvalidInput
from elion.base.input_checks import MAX_JSON_DEPTH, text_check

CONVERSATIONS_MEMBER = "conversations.json"
PROJECTS_MEMBER = "projects.json"
# The parent of a conversation's first message.
ROOT_PARENT = "00000000-0000-4000-8000-000000000000"
# This many leading items with not one conversation among them: the file is not an export.
NOT_AN_EXPORT_AFTER = 20


class MalformedClaudeExport(InvalidInput):
    code = "malformed_claude_export"


@dataclass(frozen=True)
class ClaudeConversation:
    index: int  # 0-based, across every file of the import
    file: str
    external_id: str
    title: str
    created_at: datetime | None
    updated_at: datetime | None
    # Speaker names are left as roles ("user" / "assistant"); the importer labels them.
    turns: tuple[Turn, ...]
    attachments: tuple[AttachmentText, ...] = ()
    # Turns on the branches the owner left (edits, retries), and the text of files attached on them.
    alternate_turns: tuple[AlternateTurn, ...] = ()
    alternate_attachments: tuple[AttachmentText, ...] = ()
    # What was read with a fallback (a parent missing from the file); reported when it is stored.
    notes: tuple[str, ...] = ()


def top_level_items(stream: io.BufferedReader, file: str) -> Iterator[object]:
    """Each item of the file's top-level list (or the one object it holds), built one at a time."""
    events = iter(ijson.basic_parse(stream, use_float=True))
    event, value = next(events)
    if event == "start_map":
        yield built_value(event, value, events)
        return
    if event != "start_array":
        raise MalformedClaudeExport(f"{file} must hold a list of conversations.")
    for event, value in events:
        if event == "end_array":
            return
        yield built_value(event, value, events)


# --- One conversation -----------------------------------------------------------------


@dataclass
class _Branches:
    turns: list[Turn] = field(default_factory=list)
    attachments: list[AttachmentText] = field(default_factory=list)
    alternate_turns: list[AlternateTurn] = field(default_factory=list)
    alternate_attachments: list[AttachmentText] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _in_list_order(messages: list[dict]) -> _Branches:
    read = _Branches()
    for number, message in enumerate(messages, start=1):
        said = message_said(message, number, len(read.turns))
        if said is None:
            continue
        read.turns += [said.turn] if said.turn else []
        read.attachments += said.attachments
    return read


def _has_tree(messages: list[dict]) -> bool:
    return any(isinstance(m.get("parent_message_uuid"), str) for m in messages)


def _tree_links(messages: list[dict]) -> tuple[dict[str, int], dict[str, str | None], list[str]]:
    """`(uuid → list position, uuid → parent uuid or None for a root, notes)`; UnreadableConversation for a
    message without ids or a uuid given twice."""
    position: dict[str, int] = {}
    for number, message in enumerate(messages, start=1):
        uuid, parent = message.get("uuid"), message.get("parent_message_uuid")
        if not isinstance(uuid, str) or not uuid or not isinstance(parent, str):
            raise UnreadableConversation(f"message {number} has no uuid or parent_message_uuid")
        if uuid in position:
            raise UnreadableConversation(f"message {number} repeats the uuid of message {position[uuid] + 1}")
        position[uuid] = number - 1
    parents: dict[str, str | None] = {}
    missing = 0
    for uuid, at in position.items():
        parent = messages[at]["parent_message_uuid"]
        if parent != ROOT_PARENT and parent not in position:
            missing += 1
        parents[uuid] = parent if parent in position else None
    notes = [f"{missing} message(s) answer a message missing from the export; each is read as the start of "
             "a branch"] if missing else []
    return position, parents, notes


def _current_leaf(raw: dict, messages: list[dict], position: dict[str, int], parents: dict[str, str | None]) -> str:
    named = raw.get("current_leaf_message_uuid")
    if isinstance(named, str) and named in position:
        return named
    with_children = {parent for parent in parents.values() if parent is not None}
    leaves = [uuid for uuid in position if uuid not in with_children]
    oldest = datetime.min.replace(tzinfo=UTC)
    return max(leaves, key=lambda uuid: (iso_moment(messages[position[uuid]].get("created_at")) or oldest, position[uuid]))


def _path_to(leaf: str, parents: dict[str, str | None]) -> list[str]:
    """The uuids from the root to `leaf` (the tree has no cycle: `_in_tree_order` checked)."""
    path: list[str] = []
    node: str | None = leaf
    while node is not None:
        path.append(node)
        node = parents[node]
    path.reverse()
    return path


def _in_tree_order(raw: dict, messages: list[dict]) -> _Branches:
    """The current branch's turns, then every other message's, each numbered along its own branch."""
    position, parents, notes = _tree_links(messages)
    children: dict[str | None, list[str]] = {}
    for uuid in position:  # in list order
        children.setdefault(parents[uuid], []).append(uuid)
    walked: list[tuple[str, int, Said | None]] = []  # (uuid, turns said before it on its branch, what it said)
    pending: list[tuple[str, int]] = [(root, 0) for root in reversed(children.get(None, []))]
    while pending:  # depth first, siblings in list order, without recursion
        uuid, before = pending.pop()
        said = message_said(messages[position[uuid]], position[uuid] + 1, before)
        walked.append((uuid, before, said))
        spoke = said is not None and said.turn is not None
        pending.extend((child, before + spoke) for child in reversed(children.get(uuid, [])))
    if len(walked) < len(position):  # every parent is in the file, yet some never reach a root
        raise UnreadableConversation("its message tree has a cycle")
    read = _Branches(notes=notes)
    on_path = set(_path_to(_current_leaf(raw, messages, position, parents), parents))
    for uuid, before, said in walked:
        if said is None:
            continue
        if uuid in on_path:  # the walk meets the path's messages root first, in order
            read.turns += [said.turn] if said.turn else []
            read.attachments += said.attachments
            continue
        if said.turn is not None:
            read.alternate_turns.append(AlternateTurn(before + 1, said.turn))
        read.alternate_attachments += said.attachments
    return read


def read_conversation(raw: object, index: int, file: str = CONVERSATIONS_MEMBER) -> ClaudeConversation:
    """One conversation of an export, every branch; UnreadableConversation saying why not."""
    if raw is TOO_DEEP:
        raise UnreadableConversation(f"it is nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(raw, dict):
        raise UnreadableConversation("it is not a JSON object")
    messages = raw.get("chat_messages")
    if not isinstance(messages, list):
        raise UnreadableConversation("it has no list of messages (chat_messages)")
    try:
        text_check(raw, "it")
    except InvalidInput as exc:
        raise UnreadableConversation("it holds a NUL character or an unpaired surrogate") from exc
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            raise UnreadableConversation(f"message {number} is not a JSON object")
    read = _in_tree_order(raw, messages) if _has_tree(messages) else _in_list_order(messages)
    if not read.turns:
        raise UnreadableConversation("nothing was said in it (no text from either side)")
    external_id = raw.get("uuid")
    return ClaudeConversation(
        index=index,
        file=file,
        external_id=external_id if isinstance(external_id, str) else "",
        title=flat_text(raw.get("name"), 250),
        created_at=iso_moment(raw.get("created_at")),
        updated_at=iso_moment(raw.get("updated_at")),
        turns=tuple(read.turns),
        attachments=tuple(read.attachments),
        alternate_turns=tuple(read.alternate_turns),
        alternate_attachments=tuple(read.alternate_attachments),
        notes=tuple(read.notes),
    )


def _problem(raw: object, index: int, file: str, reason: str) -> ConversationProblem:
    title = raw.get("name") if isinstance(raw, dict) and isinstance(raw.get("name"), str) else ""
    # The title of an unreadable conversation is unchecked text: no NUL, no lone surrogate in the answer.
    title = "".join(ch for ch in title if ch != "\x00" and not 0xD800 <= ord(ch) <= 0xDFFF)
    return ConversationProblem(index=index, file=file, title=" ".join(title.split())[:250], reason=reason)


def _conversation_shaped(raw: object) -> bool:
    return isinstance(raw, dict) and isinstance(raw.get("chat_messages"), list)


def _not_claude(file: str, chatgpt_shaped: bool) -> MalformedClaudeExport:
    hint = " It looks like a ChatGPT export: use the ChatGPT import." if chatgpt_shaped else ""
    return MalformedClaudeExport(f"{file} holds no Claude.ai conversations; is it a Claude.ai data export?{hint}")


# --- A whole file ---------------------------------------------------------------------


def parse_conversations(
    stream: io.BufferedReader, *, file: str = CONVERSATIONS_MEMBER, first_index: int = 0
) -> Iterator[ClaudeConversation | ConversationProblem]:
    """Every conversation of one file, read and yielded one at a time; one that cannot be read is a
    ConversationProblem. A file that is damaged or not an export raises MalformedClaudeExport while it
    is read: callers read the whole file before storing anything, so such a file stores nothing."""
    try:
        if not stream.peek(1):
            raise InvalidInput(f"{file} is empty.", code="empty_file")
        if stream.peek(3)[:3] == b"\xef\xbb\xbf":
            stream.read(3)  # a UTF-8 byte order mark
        shaped = items = 0
        chatgpt_shaped = False
        for offset, raw in enumerate(top_level_items(stream, file)):
            items += 1
            shaped += _conversation_shaped(raw)
            chatgpt_shaped = chatgpt_shaped or (isinstance(raw, dict) and isinstance(raw.get("mapping"), dict))
            if not shaped and (chatgpt_shaped or items >= NOT_AN_EXPORT_AFTER):
                raise _not_claude(file, chatgpt_shaped)
            index = first_index + offset
            try:
                yield read_conversation(raw, index, file)
            except UnreadableConversation as exc:
                yield _problem(raw, index, file, exc.reason)
        if items and not shaped:
            raise _not_claude(file, chatgpt_shaped)
    except ijson.JSONError as exc:
        raise MalformedClaudeExport(
            f"{file} is not valid JSON; upload the Claude.ai export zip or its conversations.json."
        ) from exc
    except UnicodeDecodeError as exc:  # before DAMAGED_ZIP, which holds every ValueError
        raise MalformedClaudeExport(f"{file} is not UTF-8 JSON; nothing was imported.") from exc
    except DAMAGED_ZIP as exc:
        # A damaged member surfaces while it streams: zlib errors, CRC mismatches (BadZipFile), a cut stream.
        raise MalformedClaudeExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc



# --- projects.json --------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectDoc:
    """A document the owner placed in a project (its knowledge), with its text."""

    external_id: str
    name: str
    text: str
    created_at: datetime | None


@dataclass(frozen=True)
class ClaudeProject:
    index: int  # 0-based, after every conversation of the import
    file: str
    external_id: str
    name: str
    description: str
    prompt_template: str  # the project's instructions ("" when none)
    docs: tuple[ProjectDoc, ...]
    created_at: datetime | None
    updated_at: datetime | None


def _optional_text(raw: dict, key: str, what: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UnreadableConversation(f"{what} has a {key} that is not a string")
    return value.strip()


def _project_doc(raw: object, number: int) -> ProjectDoc | None:
    """One of a project's docs (None when it holds no text)."""
    if not isinstance(raw, dict):
        raise UnreadableConversation(f"doc {number} is not a JSON object")
    text = _optional_text(raw, "content", f"doc {number}")
    if not text:
        return None
    external_id = raw.get("uuid")
    return ProjectDoc(
        external_id=external_id if isinstance(external_id, str) else "",
        name=flat_text(raw.get("filename"), ATTACHMENT_NAME_MAX) or f"document {number}",
        text=text,
        created_at=iso_moment(raw.get("created_at")),
    )


def read_project(raw: object, index: int, file: str = PROJECTS_MEMBER) -> ClaudeProject:
    """One project of `projects.json`; UnreadableConversation saying why not."""
    if raw is TOO_DEEP:
        raise UnreadableConversation(f"it is nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(raw, dict):
        raise UnreadableConversation("it is not a JSON object")
    try:
        text_check(raw, "it")
    except InvalidInput as exc:
        raise UnreadableConversation("it holds a NUL character or an unpaired surrogate") from exc
    docs = raw.get("docs")
    if docs is None:
        docs = []
    if not isinstance(docs, list):
        raise UnreadableConversation("its docs are not a list")
    read = [_project_doc(doc, number) for number, doc in enumerate(docs, start=1)]
    external_id = raw.get("uuid")
    return ClaudeProject(
        index=index,
        file=file,
        external_id=external_id if isinstance(external_id, str) else "",
        name=flat_text(raw.get("name"), 250),
        description=_optional_text(raw, "description", "it"),
        prompt_template=_optional_text(raw, "prompt_template", "it"),
        docs=tuple(doc for doc in read if doc is not None),
        created_at=iso_moment(raw.get("created_at")),
        updated_at=iso_moment(raw.get("updated_at")),
    )


def parse_projects(
    stream: io.BufferedReader, *, file: str = PROJECTS_MEMBER, first_index: int = 0
) -> Iterator[ClaudeProject | ConversationProblem]:
    """Every project of `projects.json`, read and yielded one at a time; one that cannot be read is a
    ConversationProblem, and so is a file that stops being readable (the projects before it stay)."""
    index = first_index
    try:
        if not stream.peek(1):
            return
        if stream.peek(3)[:3] == b"\xef\xbb\xbf":
            stream.read(3)  # a UTF-8 byte order mark
        for raw in top_level_items(stream, file):
            try:
                yield read_project(raw, index, file)
            except UnreadableConversation as exc:
                yield _problem(raw, index, file, exc.reason)
            index += 1
    except (MalformedClaudeExport, ijson.JSONError, *DAMAGED_ZIP) as exc:
        # Not JSON, not a list, cut short or damaged in the zip: what was read is kept.
        reason = "is damaged in the zip" if isinstance(exc, DAMAGED_ZIP) and not isinstance(
            exc, UnicodeDecodeError) else "is not a JSON list of projects"
        yield ConversationProblem(index=index, file=file, title="",
                                  reason=f"{file} {reason}; the projects from here on are not imported")
