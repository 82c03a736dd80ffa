"""A Claude.ai data export written from its documented shape, with the quirks real exports have.

`conversations.json` is a list of conversations `{uuid, name, created_at,
updated_at, account: {uuid}, chat_messages}`; a message is `{uuid, text,
content, sender, created_at, updated_at, attachments, files}`, where `content`
is a list of blocks: `text` (speech), `thinking`, `tool_use`, `tool_result`
and others. The flat `text` of a newer message repeats its speech and holds
placeholders for the blocks a client cannot show; older exports have `text`
only. `memories.json` is a list with one object holding
`conversations_memory` (Markdown) and `project_memories` (a text per project).

The quirks: thinking before a reply, a web search round between two text
blocks, an owner's message that is only an attached file, attachments with
and without extracted text, a block type no one knows, an old text-only
conversation, a conversation with no messages, one whose messages are not a
list, and one whose second message is not an object.
"""

from __future__ import annotations

import json

ACCOUNT = {"uuid": "5f0c7a2e-0000-4000-8000-0000000000aa"}
PLACEHOLDER = "\n```\nThis block is not supported on your current device yet.\n```\n"

THOUGHT = "THINKING the owner sounds tired tonight; answer gently."
TOOL_QUERY = "TOOLQUERY harbour tide tables"
TOOL_RESULT = "TOOLRESULT high water at 19:40"
NOTES = "LANTERN NOTES: wick trimmed on Sunday, oil refilled on Wednesday."
MEMORY_WORK = "AUMA keeps a lighthouse journal and writes every morning."
MEMORY_HOME = "AUMA lives by the sea with a brass lantern."
MEMORY_LIST = "- likes walking at dusk\n- prefers short answers"
MEMORY_GARDEN = "The garden project: planting lavender along the north wall."


def block_text(text, *, citations=None):
    return {"type": "text", "text": text, "start_timestamp": "2024-06-01T20:00:01.000000Z",
            "stop_timestamp": "2024-06-01T20:00:02.000000Z", "citations": citations or []}


def thinking(text):
    return {"type": "thinking", "thinking": text, "summaries": [{"summary": "Considering the mood."}],
            "cut_off": False, "start_timestamp": "2024-06-01T20:00:00.500000Z"}


def tool_use(name, query):
    return {"type": "tool_use", "name": name, "input": {"query": query}, "message": "Searching the web",
            "integration_name": None, "display_content": None}


def tool_result(name, text):
    return {"type": "tool_result", "name": name, "is_error": False,
            "content": [{"type": "knowledge", "title": "Tides", "url": "https://tides.example.invalid/",
                         "text": text, "metadata": {"type": "webpage_metadata"}}]}


def message(uuid, sender, at, *, content=None, text=None, attachments=(), files=()):
    body = {
        "uuid": uuid, "sender": sender, "created_at": at, "updated_at": at,
        "attachments": list(attachments), "files": list(files),
    }
    if content is not None:
        body["content"] = content
        body["text"] = text if text is not None else "".join(
            b["text"] if b["type"] == "text" else PLACEHOLDER for b in content if b["type"] != "thinking"
        )
    else:
        body["text"] = text
    return body


def attachment(name, extracted, size=None):
    return {"file_name": name, "file_size": size or len(extracted), "file_type": "txt",
            "extracted_content": extracted, "created_at": "2024-06-01T20:00:00.000000Z"}


def lantern():
    """Thinking, a web search between two text blocks, attachments, a file-only message."""
    return {
        "uuid": "c1a0de00-0000-4000-8000-000000000001", "name": "Lantern by the sea",
        "created_at": "2024-06-01T20:00:00.000000Z", "updated_at": "2024-06-01T20:20:00.000000Z",
        "account": ACCOUNT,
        "chat_messages": [
            message("m1", "human", "2024-06-01T20:00:00.000000Z",
                    content=[block_text("Here are my lantern notes; when should I trim the wick again?")],
                    attachments=[attachment("lantern-notes.txt", NOTES)],
                    files=[{"file_name": "lantern-photo.jpg"}]),
            message("m2", "assistant", "2024-06-01T20:00:05.000000Z",
                    content=[thinking(THOUGHT), block_text("Trim it again next Sunday, before you light it.")]),
            message("m3", "human", "2024-06-01T20:05:00.000000Z",
                    content=[block_text("And when is high water tonight?")]),
            message("m4", "assistant", "2024-06-01T20:05:09.000000Z",
                    content=[
                        thinking("THINKING I should search for the tide tables."),
                        block_text("Let me look at the tide tables."),
                        tool_use("web_search", TOOL_QUERY),
                        tool_result("web_search", TOOL_RESULT),
                        {"type": "token_budget", "remaining": 12000},
                        block_text("High water is at 19:40 tonight."),
                    ]),
            # Only a file: no words of the owner's own, and an attachment without extracted text.
            message("m5", "human", "2024-06-01T20:10:00.000000Z", content=[],
                    text="", attachments=[attachment("tide-chart.pdf", "TIDE CHART high 19:40 low 01:55"),
                                          attachment("empty.txt", "")]),
            message("m6", "assistant", "2024-06-01T20:10:04.000000Z",
                    content=[block_text("The chart agrees: high water 19:40, low water just before two.")]),
        ],
    }


def letters():
    """An older export: messages with only `text`, no content blocks."""
    return {
        "uuid": "c1a0de00-0000-4000-8000-000000000002", "name": "Old letters",
        "created_at": "2023-03-14T09:00:00Z", "updated_at": "2023-03-14T09:05:00Z", "account": ACCOUNT,
        "chat_messages": [
            message("o1", "human", "2023-03-14T09:00:00Z", text="Shall I read you grandmother's letters?"),
            message("o2", "assistant", "2023-03-14T09:00:10Z", text="Yes, please read them slowly."),
        ],
    }


def empty():
    return {"uuid": "c1a0de00-0000-4000-8000-000000000003", "name": "New chat",
            "created_at": "2024-06-02T10:00:00Z", "updated_at": "2024-06-02T10:00:00Z", "account": ACCOUNT,
            "chat_messages": []}


def corrupted():
    return {"uuid": "c1a0de00-0000-4000-8000-000000000004", "name": "Corrupted tide",
            "created_at": "2024-06-03T10:00:00Z", "account": ACCOUNT, "chat_messages": "corrupted"}


def stray_message():
    chat = letters()
    chat["uuid"], chat["name"] = "c1a0de00-0000-4000-8000-000000000005", "Stray message"
    chat["chat_messages"].insert(1, ["not", "a", "message"])
    return chat


def conversations():
    return [lantern(), empty(), letters(), corrupted(), stray_message()]


MEMORIES_TEXT = (
    "**Work context**\n\n" + MEMORY_WORK + "\n\n"
    "**Personal context**\n\n" + MEMORY_HOME + "\n\n" + MEMORY_LIST + "\n"
)


def memories():
    return [{"conversations_memory": MEMORIES_TEXT,
             "project_memories": {"a7d1c2b0-0000-4000-8000-00000000beef": MEMORY_GARDEN},
             "account_uuid": ACCOUNT["uuid"]}]


SUGGESTIONS = [
    {"text": f"Work context: {MEMORY_WORK}", "category": "general"},
    {"text": f"Personal context: {MEMORY_HOME}", "category": "general"},
    {"text": f"Personal context:\n{MEMORY_LIST}", "category": "general"},
    {"text": MEMORY_GARDEN, "category": "project"},
]


def as_json(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=1).encode()


def members(*, with_memories: bool = True) -> dict[str, bytes]:
    """The zip's members as Claude.ai ships them."""
    found = {
        "conversations.json": as_json(conversations()),
        "users.json": as_json([{"uuid": ACCOUNT["uuid"], "full_name": "AUMA", "email_address": "a@example.invalid"}]),
        "projects.json": as_json([{"uuid": "a7d1c2b0-0000-4000-8000-00000000beef", "name": "Garden", "docs": []}]),
    }
    if with_memories:
        found["memories.json"] = as_json(memories())
    return found


# --- Branches (newer exports: `uuid` and `parent_message_uuid` on every message) -------------------------

ROOT_PARENT = "00000000-0000-4000-8000-000000000000"


def branched(uuid, parent, sender, at, text, **kwargs):
    body = message(uuid, sender, at, content=[block_text(text)], **kwargs)
    body["parent_message_uuid"] = parent
    return body


def edited():
    """The owner edited their second message: the edit and its reply are newer, and no current leaf is named,
    so the newest leaf ends the branch the owner saw. The original branch goes on a little."""
    return {
        "uuid": "c1a0de00-0000-4000-8000-0000000000e1", "name": "Heron on the pier",
        "created_at": "2024-07-01T08:00:00Z", "updated_at": "2024-07-01T08:30:00Z", "account": ACCOUNT,
        "chat_messages": [
            branched("e1", ROOT_PARENT, "human", "2024-07-01T08:00:00Z", "A heron stood on the pier this morning."),
            branched("e2", "e1", "assistant", "2024-07-01T08:00:05Z", "Herons fish at first light."),
            branched("e3", "e2", "human", "2024-07-01T08:01:00Z", "ORIGINALASK was it grey or white?",
                     attachments=[attachment("pier-notes.txt", "PIERNOTES tide low at eight")]),
            branched("e4", "e3", "assistant", "2024-07-01T08:01:05Z", "ORIGINALREPLY a grey heron, most likely."),
            branched("e5", "e4", "human", "2024-07-01T08:02:00Z", "ORIGINALTAIL thank you."),
            # The edit of e3 (a sibling under e2), with the same file, and the reply to it.
            branched("e3b", "e2", "human", "2024-07-01T08:20:00Z", "EDITEDASK how long does a heron live?",
                     attachments=[attachment("pier-notes.txt", "PIERNOTES tide low at eight")]),
            branched("e4b", "e3b", "assistant", "2024-07-01T08:20:05Z", "EDITEDREPLY about fifteen years."),
        ],
    }


def retried():
    """The assistant's reply retried twice; the owner went back to the first retry, so the current leaf is
    not the last message in the list (nor the newest)."""
    return {
        "uuid": "c1a0de00-0000-4000-8000-0000000000e2", "name": "Lighthouse keeper's cat",
        "created_at": "2024-07-02T21:00:00Z", "updated_at": "2024-07-02T21:10:00Z", "account": ACCOUNT,
        "current_leaf_message_uuid": "r2b",
        "chat_messages": [
            branched("r1", ROOT_PARENT, "human", "2024-07-02T21:00:00Z", "Name the lighthouse keeper's cat."),
            branched("r2", "r1", "assistant", "2024-07-02T21:00:05Z", "FIRSTTRY Beacon."),
            branched("r2b", "r1", "assistant", "2024-07-02T21:01:00Z", "SECONDTRY Wick."),
            branched("r2c", "r1", "assistant", "2024-07-02T21:02:00Z", "THIRDTRY Fresnel."),
        ],
    }


def orphaned():
    """A reply whose parent is missing from the file (an export that lost a message)."""
    return {
        "uuid": "c1a0de00-0000-4000-8000-0000000000e3", "name": "Lost message",
        "created_at": "2024-07-03T10:00:00Z", "updated_at": "2024-07-03T10:05:00Z", "account": ACCOUNT,
        "current_leaf_message_uuid": "o4",
        "chat_messages": [
            branched("o1", ROOT_PARENT, "human", "2024-07-03T10:00:00Z", "BEFOREGAP where do gulls sleep?"),
            branched("o2", "o1", "assistant", "2024-07-03T10:00:05Z", "BEFOREGAP on the water, often."),
            branched("o4", "o3-missing", "assistant", "2024-07-03T10:05:05Z", "AFTERGAP and on rooftops too."),
        ],
    }


# --- projects.json -------------------------------------------------------------------------------------

LAVENDER = "LAVENDER rows along the north wall, planted in April."
SOIL = "SOILNOTES chalky, drains fast; add compost in autumn."
GARDEN_TEMPLATE = "Answer as a patient gardener who knows chalky soil."


def project_doc(uuid, filename, content, at="2024-05-01T09:00:00Z"):
    return {"uuid": uuid, "filename": filename, "content": content, "created_at": at}


def projects():
    """A project with docs and instructions, an older one with only instructions, and two that cannot be read."""
    return [
        {"uuid": "a7d1c2b0-0000-4000-8000-00000000beef", "name": "Garden", "description": "Planting plans.",
         "prompt_template": GARDEN_TEMPLATE, "is_private": True, "is_starter_project": False,
         "created_at": "2024-05-01T09:00:00Z", "updated_at": "2024-05-02T09:00:00Z",
         "creator": {"uuid": ACCOUNT["uuid"], "full_name": "AUMA"},
         "docs": [project_doc("d1", "lavender.md", LAVENDER), project_doc("d2", "soil.txt", SOIL),
                  project_doc("d3", "empty.txt", "")]},
        {"uuid": "a7d1c2b0-0000-4000-8000-0000000000ld", "name": "Old instructions", "description": "",
         "prompt_template": "OLDER TEMPLATE never offered", "docs": [],
         "created_at": "2023-01-01T09:00:00Z", "updated_at": "2023-01-02T09:00:00Z"},
        {"uuid": "a7d1c2b0-0000-4000-8000-0000000000bd", "name": "Broken project", "docs": "not a list"},
        "not a project",
    ]


def project_members(projects_json: bytes | None = None) -> dict[str, bytes]:
    """The zip with a richer projects.json (or the given bytes)."""
    return {**members(), "projects.json": projects_json if projects_json is not None else as_json(projects())}
