"""The steps both export importers share: the upload check, the export limits, the custom-instructions
suggestion, the imported assistant's label, an export's parsed items as `import_runs` takes them, and the
synchronous import of an upload."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from archive.models import IMPORTED_ASSISTANT_NAMES
from archive.services.documents import DocumentResult
from archive.services.import_runs import ImportFile, ImportReader, ImportSummary, ReadConversation, import_run
from archive.services.importers.export_reader import ExportLimits
from archive.services.parsing import ConversationProblem
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import InvalidInput
from elion.base.uploads import closing_upload, too_large


def custom_instructions_suggestion(instructions: str) -> str | None:
    """The custom instructions an export carried, unless Settings already hold exactly them."""
    suggestion = instructions.strip()
    if not suggestion or suggestion == assistant_settings_get().custom_instructions.strip():
        return None
    return suggestion


def export_limits() -> ExportLimits:
    """The bounds an export is read within (JSON size, member count, image size), from settings."""
    return ExportLimits(
        max_json_bytes=settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES,
        max_members=settings.ELION_ARCHIVE_IMPORT_MAX_MEMBERS,
        max_image_bytes=settings.ELION_ATTACHMENT_MAX_BYTES,
    )


def imported_assistant_name(source: str, assistant_name: object = "") -> str:
    """The label of an imported export's assistant: the name the owner gave, else its source's own
    ("ChatGPT", "Claude"); never the display name of Elion (`IMPORTED_ASSISTANT_NAMES`)."""
    return " ".join(str(assistant_name or "").split())[:60] or IMPORTED_ASSISTANT_NAMES[source]


class ParsedItem(Protocol):
    """What an export's readers read besides problems (a conversation, a project): one archive document each."""

    @property
    def index(self) -> int: ...

    @property
    def created_at(self) -> datetime | None: ...

    @property
    def updated_at(self) -> datetime | None: ...


class ParsedConversation(Protocol):
    """A conversation an export's reader parsed: its current branch's turns and its other branches' turns."""

    @property
    def turns(self) -> Sequence[object]: ...

    @property
    def alternate_turns(self) -> Sequence[object]: ...


def stored_conversation_counted(summary: ImportSummary, result: DocumentResult, conversation: ParsedConversation) -> bool:
    """Count what storing one parsed conversation did: a duplicate (a concurrent import stored it first), or
    one more conversation with its turns. False for a duplicate."""
    if result.duplicate:
        summary.duplicates += 1
        return False
    summary.conversations += 1
    summary.messages += len(conversation.turns)
    summary.alternate_messages += len(conversation.alternate_turns)
    return True


def export_items_read(
    items: Iterable[ParsedItem | ConversationProblem],
    next_index: int,
    *,
    store: Callable[[ParsedItem], Callable[[ImportSummary], int | None]],
    instructions: Callable[[ParsedItem], str] = lambda item: "",
) -> Generator[ReadConversation | ConversationProblem, None, int]:
    """An export's parsed items (conversations or projects) as `import_runs` takes them, one at a time:
    a problem as it is, anything else as a `ReadConversation` that stores itself with `store(item)`,
    carrying `instructions(item)`. Returns the index after the last item (`next_index` when none)."""
    for item in items:
        next_index = item.index + 1
        if isinstance(item, ConversationProblem):
            yield item
            continue
        yield ReadConversation(
            index=item.index,
            store=store(item),
            custom_instructions=instructions(item),
            moment=item.updated_at or item.created_at,
        )
    return next_index


def import_files_check(uploads: Sequence[UploadedFile | None], missing: str) -> list[UploadedFile]:
    """The uploaded files of one import, within the size limit; 400/413 saying why not."""
    uploads = [upload for upload in uploads if upload is not None]
    if not uploads:
        raise InvalidInput(missing, code="missing_file")
    if sum(upload.size or 0 for upload in uploads) > settings.ELION_ARCHIVE_IMPORT_MAX_BYTES:
        raise too_large("The export", settings.ELION_ARCHIVE_IMPORT_MAX_BYTES)
    return uploads


def uploads_import(
    uploads: Sequence[UploadedFile | None], reader: Callable[[], ImportReader], *, missing: str,
    summary_type: type[ImportSummary] = ImportSummary,
) -> ImportSummary:
    """Import one export's uploaded files at once with the reader `reader()` builds (its options are
    checked before the files); every upload is closed afterwards, whatever happens.

    Every file is read through once before anything is stored, so a damaged file or one that is not an
    export stores nothing; a conversation that cannot be read is skipped and named in `problems`. Both
    passes stream, and each conversation is stored before the next is read: memory is bounded by the
    largest conversation, not the export."""
    with contextlib.ExitStack() as stack:
        for upload in uploads:
            stack.enter_context(closing_upload(upload))
        read = reader()
        files = [ImportFile(u.name or "", u, u.size) for u in import_files_check(uploads, missing)]
        return import_run(read, files, suggestion=custom_instructions_suggestion, summary_type=summary_type)
