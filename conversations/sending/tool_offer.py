"""The tools offered to the model for one reply (`available_tools`) and their neutral definitions, as
`provider_gateway.stream_reply` takes them; `conversations.sending.tool_loop` runs the calls. A definition that
reads its app's rules (`propose_check_in`: the check-ins' limits and choices) comes with its tool, from the
table of tools (`tool_loop.TOOLS`).
"""

from __future__ import annotations

from django.conf import settings

from artifacts.models import ArtifactKind
from conversations.sending import memory_tool
from conversations.sending.tool_loop import ARCHIVE_SEARCH_LIMIT, PAST_SEARCH_LIMIT, TOOLS

WEB_SEARCH_TOOL = {"type": "web_search"}

SEARCH_PAST_CONVERSATIONS = {
    "name": "search_past_conversations",
    "description": (
        "Search the owner's other conversations for words they contain. Returns excerpts grouped by "
        "conversation title. Hidden, trashed and continuity-shielded conversations are never searched."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to find; every word must occur."},
            "limit": {"type": "integer", "minimum": 1, "maximum": PAST_SEARCH_LIMIT},
        },
        "required": ["query"],
    },
}
SEARCH_ARCHIVE = {
    "name": "search_archive",
    "description": (
        "Search the archive: historical conversations, prior incarnations, papers and testimony. "
        "Cite results by document title, collection and chunk number."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to find; every word must occur."},
            "collection": {"type": "string", "enum": ["conversations", "incarnations", "papers", "testimony"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": ARCHIVE_SEARCH_LIMIT},
        },
        "required": ["query"],
    },
}
LIST_LIBRARY = {
    "name": "list_library",
    "description": "List the files in the Library with their ids, kinds and lengths.",
    "parameters": {"type": "object", "properties": {}},
}
READ_LIBRARY_FILE = {
    "name": "read_library_file",
    "description": "Read one page of a Library file. Continue with next_offset until it is null.",
    "parameters": {
        "type": "object",
        "properties": {
            "file_id": {"type": "integer"},
            "offset": {"type": "integer", "minimum": 0, "description": "Character offset; 0 for the start."},
        },
        "required": ["file_id"],
    },
}
CREATE_ARTIFACT = {
    "name": "create_artifact",
    "description": (
        "Create a standalone artifact (a poem, reflection, letter, story or other piece) the owner keeps "
        "apart from the conversation. Returns its artifact_id; the reply shows it as a card."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "kind": {"type": "string", "enum": list(ArtifactKind.values)},
            "content": {"type": "string", "description": "The artifact's text, in Markdown."},
        },
        "required": ["title", "kind", "content"],
    },
}
UPDATE_ARTIFACT = {
    "name": "update_artifact",
    "description": "Write a new version of an artifact. Earlier versions are kept; send the whole new text.",
    "parameters": {
        "type": "object",
        "properties": {
            "artifact_id": {"type": "integer"},
            "content": {"type": "string", "description": "The complete new text, in Markdown."},
        },
        "required": ["artifact_id", "content"],
    },
}
READ_ARTIFACT = {
    "name": "read_artifact",
    "description": (
        "Read an earlier artifact's text (its latest version, or the version asked for). Without "
        "artifact_id, list the artifacts you may read, newest first, optionally filtered by words in "
        "their title or text."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "artifact_id": {"type": "integer"},
            "version": {"type": "integer", "minimum": 1},
            "query": {"type": "string", "description": "Without artifact_id: words every listed artifact holds."},
        },
    },
}
ARTIFACT_TOOLS = [CREATE_ARTIFACT, UPDATE_ARTIFACT, READ_ARTIFACT]
GENERATE_IMAGE = {
    "name": "generate_image",
    "description": (
        "Create an image from a description; it appears in your reply and is kept with it. When the image "
        "shows a saved character, give its character_id: that character's image guidance is added to the "
        "prompt (a character pinned for this message is used when you give none)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "A full description of the image to make."},
            "character_id": {"type": "integer", "description": "The saved character the image shows, if any."},
        },
        "required": ["prompt"],
    },
}


def image_generation_tool() -> dict:
    """The Responses API's built-in image tool: the configured image model, with partial images streamed."""
    return {
        "type": "image_generation",
        "model": settings.ELION_IMAGE_MODEL,
        "partial_images": settings.ELION_IMAGE_PARTIAL_IMAGES,
    }


def available_tools(
    *, archive_access: bool, web_search: bool, api_selector: str, image_generation: bool = False,
    memory_suggestions: bool = False, check_in_proposals: bool = False,
) -> list[dict]:
    """The tools offered for one reply, decided from the settings (and, for `memory_suggestions` and
    `check_in_proposals`, the conversation's eligibility) at send time."""
    tools = [SEARCH_PAST_CONVERSATIONS, LIST_LIBRARY, READ_LIBRARY_FILE, *ARTIFACT_TOOLS]
    if memory_suggestions:
        tools.append(memory_tool.PROPOSE_MEMORY)
    if check_in_proposals:
        tools.append(TOOLS["propose_check_in"].definition)
    if archive_access:
        tools.insert(1, SEARCH_ARCHIVE)
    if web_search and api_selector == "responses":
        tools.append(WEB_SEARCH_TOOL)
    if image_generation:
        tools.append(image_generation_tool() if api_selector == "responses" else GENERATE_IMAGE)
    return tools
