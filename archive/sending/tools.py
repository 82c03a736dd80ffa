"""The Archive's tools for the model: `search_archive` (only offered when Archive access is on; results cite the
document title, collection and chunk) and `list_library` / `read_library_file` (the Library, a page at a time).

Their definitions are neutral (`conversations.sending.tool_offer`); `ARCHIVE_TOOLS` is what
`archive.apps.ArchiveConfig.ready` adds (`archive_tools_add`) to the send's table of tools
(`conversations.sending.tool_loop.TOOLS`).
"""

from __future__ import annotations

import json

from archive.models import ArchiveCollection
from archive.services.library import access_library_file, library_file_repr, library_files, library_page
from archive.services.search import archive_search
from conversations.sending.tool_loop import (
    ARCHIVE_SEARCH_LIMIT,
    Tool,
    ToolContext,
    ToolInputError,
    int_arg,
    text_arg,
    tools_add,
)
from elion.base.errors import ServiceError


def search_archive(args: dict, context: ToolContext) -> str:
    query = text_arg(args, "query")
    collection = args.get("collection")
    if collection is not None and collection not in ArchiveCollection.values:
        raise ToolInputError(f"collection must be one of {', '.join(ArchiveCollection.values)}.")
    limit = int_arg(args, "limit", ARCHIVE_SEARCH_LIMIT, 1, ARCHIVE_SEARCH_LIMIT)
    hits = archive_search(query, limit=limit, collections=[collection] if collection else None)
    results = [
        {
            "cite_as": f"{hit.document_title} ({hit.collection}), chunk {hit.chunk}",
            "document_title": hit.document_title,
            "collection": hit.collection,
            "chunk": hit.chunk,
            "speaker": hit.speaker,
            "excerpt": hit.excerpt,
            "branch": hit.branch,
        }
        for hit in hits
    ]
    return json.dumps({"query": query, "results": results}, ensure_ascii=False)


def list_library(args: dict, context: ToolContext) -> str:
    files = [
        {k: v for k, v in library_file_repr(f).items() if k in ("id", "name", "kind", "characters")}
        for f in library_files()
    ]
    return json.dumps({"files": files}, ensure_ascii=False)


def read_library_file(args: dict, context: ToolContext) -> str:
    file_id = int_arg(args, "file_id", -1, 0)
    try:
        page = library_page(access_library_file(file_id), offset=int_arg(args, "offset", 0, 0))
    except ServiceError as exc:
        raise ToolInputError(exc.detail) from exc
    return json.dumps(page, ensure_ascii=False)


ARCHIVE_TOOLS = (
    Tool("search_archive", search_archive),
    Tool("list_library", list_library),
    Tool("read_library_file", read_library_file),
)


def archive_tools_add() -> None:
    """Add `ARCHIVE_TOOLS` to the send's table of tools (called by `archive.apps.ArchiveConfig.ready`)."""
    tools_add(ARCHIVE_TOOLS)
