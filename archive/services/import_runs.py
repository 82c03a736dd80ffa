"""Running one import of an export, whatever app made it: two streamed passes, one transaction a conversation.

An importer (a "kind": ChatGPT, Claude.ai) gives `read(files, stack)`: every
item of the upload (its conversations, and for Claude.ai its projects), in
order, one at a time, each either a `ReadConversation` (which knows how to
store itself) or a `ConversationProblem`, and between them any `ReadOffer`
(something the export carries for the owner to take, such as memories, read in
the first pass only). Nothing of the export is held beyond the item being
read, so memory stays bounded by the largest conversation, not the file. An
importer whose answer says more than the counts gives its own `ImportSummary`
subclass (`summary_type`).

The first pass only reads: it counts the conversations (`total`, for
progress), lists the unreadable ones and finds the custom instructions to
offer. A file that is damaged or not an export raises while it is read, so it
stores nothing. The second pass stores each conversation in its own
transaction, with the progress row beside it (`ImportProgress.advanced`), so
a crash or a cancel leaves no half-stored conversation and a resumed run starts
exactly where the last committed one ended. Storing is idempotent per
conversation (content hash), so even a run from the start only adds what is
missing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO, Protocol

from django.db import transaction

from archive.services.parsing import ConversationProblem

# At most this many problems are listed in one answer (`skipped` still counts every conversation not imported).
PROBLEMS_LISTED = 1_000


@dataclass
class ImportSummary:
    """What an import did, conversation by conversation; `as_dict` is the answer every importer gives."""

    conversations: int = 0  # imported as new documents
    messages: int = 0  # turns on the current branches of those documents
    alternate_messages: int = 0  # turns on their other branches
    skipped: int = 0  # conversations not imported: nothing said, or unreadable (then also in problems)
    duplicates: int = 0  # already in the archive
    document_ids: list[int] = field(default_factory=list)
    problems: list[ConversationProblem] = field(default_factory=list)
    # Custom instructions the export carried, offered for Settings (None when none, or already the same).
    custom_instructions_suggestion: str | None = None

    def problem(self, problem: ConversationProblem, *, skipped: bool) -> None:
        self.skipped += 1 if skipped else 0
        if len(self.problems) < PROBLEMS_LISTED:
            self.problems.append(problem)

    def counts(self) -> dict:
        """The counts that move conversation by conversation: what a job writes with each one (`from_dict`
        reads them back)."""
        return {name: getattr(self, name) for name in SUMMARY_COUNTS}

    def offers(self) -> dict:
        """What the first pass found for the owner to take (custom instructions): a job writes it once, so a
        conversation's progress write stays the same size whatever the export offers."""
        return {"custom_instructions_suggestion": self.custom_instructions_suggestion}

    def as_dict(self) -> dict:
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "alternate_messages": self.alternate_messages,
            "skipped": self.skipped,
            "duplicates": self.duplicates,
            "document_ids": self.document_ids,
            "problems": [problem.as_dict() for problem in sorted(self.problems, key=lambda p: p.index)],
            "custom_instructions_suggestion": self.custom_instructions_suggestion,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ImportSummary:
        """A summary `counts` and `offers` (with `problems`, `document_ids`) wrote, such as a job's, to go on from."""
        return cls(**cls.fields_from_dict(data))

    @classmethod
    def fields_from_dict(cls, data: dict) -> dict:
        return {
            **{name: int(data.get(name) or 0) for name in SUMMARY_COUNTS},
            "document_ids": [int(pk) for pk in data.get("document_ids") or []],
            "problems": [ConversationProblem(p["index"], p.get("file", ""), p.get("title", ""), p["reason"])
                         for p in data.get("problems") or []],
            "custom_instructions_suggestion": data.get("custom_instructions_suggestion"),
        }


SUMMARY_COUNTS = ("conversations", "messages", "alternate_messages", "skipped", "duplicates")


@dataclass(frozen=True)
class ImportFile:
    """One uploaded file, as a seekable binary stream (Django's upload, or the job's saved copy)."""

    name: str
    stream: BinaryIO
    size: int | None = None


@dataclass(frozen=True)
class ReadConversation:
    """One readable conversation of an export; `store` adds it to the archive unless it is there
    (counting it in the summary) and answers the new document's id, or None."""

    index: int  # 0-based, across every file of the import
    store: Callable[[ImportSummary], int | None]
    custom_instructions: str = ""
    moment: datetime | None = None  # when it was last updated, to find the newest instructions


@dataclass(frozen=True)
class ReadOffer:
    """Something an export carries besides its items that the owner may take (memories to review): `add`
    reads it into the summary in the first pass, while the export is open; the import never stores it."""

    add: Callable[[ImportSummary], None]


Item = ReadConversation | ConversationProblem | ReadOffer


class ImportReader(Protocol):
    def __call__(self, files: Sequence[ImportFile], stack: contextlib.ExitStack) -> Iterator[Item]: ...


class ImportStopped(Exception):
    """The run no longer holds its job (cancelled, or taken over): the current conversation is rolled back."""


class ImportProgress(Protocol):
    def counted(self, total: int, summary: ImportSummary) -> None:
        """After the first pass: every conversation counted, the unreadable ones listed."""

    def proceed(self) -> None:
        """Before each conversation, outside any transaction: raise ImportStopped to stop."""

    def advanced(self, done: int, summary: ImportSummary, document_id: int | None) -> None:
        """Inside the conversation's transaction, after it was stored: raise ImportStopped to undo it and stop."""


@dataclass(frozen=True)
class Resumption:
    """Where an earlier run of the same import stopped: its counts, and conversations already handled."""

    summary: ImportSummary
    done: int


SuggestionCheck = Callable[[str], str | None]


def _newest_instructions(current: tuple[datetime, int, str] | None, item: ReadConversation) -> (
    tuple[datetime, int, str] | None
):
    if not item.custom_instructions:
        return current
    candidate = (item.moment or datetime.min.replace(tzinfo=UTC), item.index, item.custom_instructions)
    return candidate if current is None or candidate[:2] > current[:2] else current


def import_count(
    read: ImportReader, files: Sequence[ImportFile], suggestion: SuggestionCheck,
    summary_type: type[ImportSummary] = ImportSummary,
) -> tuple[int, ImportSummary]:
    """The first pass: `(items in the export, a summary listing the unreadable ones and what the export
    offers)`; stores nothing."""
    summary = summary_type()
    total = 0
    newest: tuple[datetime, int, str] | None = None
    with contextlib.ExitStack() as stack:
        for item in read(files, stack):
            if isinstance(item, ReadOffer):
                item.add(summary)
                continue
            total = item.index + 1
            if isinstance(item, ConversationProblem):
                summary.problem(item, skipped=True)
            else:
                newest = _newest_instructions(newest, item)
    summary.custom_instructions_suggestion = suggestion(newest[2]) if newest else None
    return total, summary


def import_run(
    read: ImportReader, files: Sequence[ImportFile], *, suggestion: SuggestionCheck,
    progress: ImportProgress | None = None, resumption: Resumption | None = None,
    summary_type: type[ImportSummary] = ImportSummary,
) -> ImportSummary:
    """Import every conversation of an export (see the module's docstring); ImportStopped when the
    progress says so, with everything before the current conversation stored."""
    if resumption is None:
        total, summary = import_count(read, files, suggestion, summary_type)
        done = 0
        if progress is not None:
            progress.counted(total, summary)
    else:
        summary, done = resumption.summary, resumption.done
    with contextlib.ExitStack() as stack:
        for item in read(files, stack):
            if isinstance(item, ReadOffer) or item.index < done:
                continue
            if progress is not None:
                progress.proceed()
            # With progress to record, the conversation and its progress are one transaction; without,
            # each store is its own transaction already.
            with transaction.atomic() if progress is not None else contextlib.nullcontext():
                document_id = item.store(summary) if isinstance(item, ReadConversation) else None
                if document_id is not None:
                    summary.document_ids.append(document_id)
                if progress is not None:
                    progress.advanced(item.index + 1, summary, document_id)
    return summary
