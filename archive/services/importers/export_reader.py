"""What both export readers (`chatgpt`, `claude`) share: the files of one upload (the JSON file itself, or
the zip's members) read through size caps, what a damaged zip raises, and the shapes both read into.

The zip is never extracted to disk: members are read through size caps, and an implausible compression
ratio is refused. Images beside the conversations (a ChatGPT export's) are found by their file id and
given only as a sniffed image type.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from archive.services.parsing import Turn
from elion.base.errors import InvalidInput, ServiceError
from elion.base.uploads import image_mime, too_large

CONVERSATIONS_MEMBER = "conversations.json"
_SPLIT_MEMBER = re.compile(r"^conversations-(\d+)\.json$")
# A member's base name starting with a file id: `file-XYZ-photo.png`, `file_XYZ.webp`, `file-XYZ`.
_MEMBER_FILE_ID = re.compile(r"^(file[-_][A-Za-z0-9]+)(?![A-Za-z0-9])")


class MalformedExport(InvalidInput):
    code = "malformed_chatgpt_export"


class UnreadableConversation(Exception):
    """One conversation that cannot be read; the import goes on without it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnreadableImage(Exception):
    """An image the conversation showed that the export does not hold in readable form."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# What a damaged zip member raises while it is opened or read: a bad header or CRC (BadZipFile), cut or
# corrupt deflate data (zlib.error, EOFError), an unknown compression method (NotImplementedError), a
# stream that ends early (OSError), or bytes that are no UTF-8 (UnicodeDecodeError, a ValueError).
DAMAGED_ZIP = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError)


@dataclass(frozen=True)
class ExportLimits:
    max_json_bytes: int
    max_members: int
    max_image_bytes: int = 10 * 1024**2


@dataclass(frozen=True)
class AlternateTurn:
    """A turn on a branch the owner left; `number` counts the turns of its own branch from the root."""

    number: int
    turn: Turn


# --- The files of an export -----------------------------------------------------------


def _unsafe_member(name: str) -> bool:
    if not name or name.startswith(("/", "\\")) or "\\" in name or "\x00" in name:
        return True
    if ":" in name.split("/", 1)[0]:  # a drive letter such as C:
        return True
    return ".." in name.split("/")


# Text JSON compresses about 5-15:1; far beyond that the member is a zip bomb, not an export.
MAX_COMPRESSION_RATIO = 100
RATIO_CHECKED_ABOVE = 1024**2  # small members may compress as well as they like


class _Limited(io.RawIOBase):
    """A read-only view of `inner` that refuses to give more than `limit` bytes (the declared size is not trusted)."""

    def __init__(self, inner: BinaryIO, limit: int, what: str) -> None:
        self.inner, self.left, self.limit, self.what = inner, limit, limit, what

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:
        data = self.inner.read(min(len(buffer), self.left + 1))
        if len(data) > self.left:
            raise too_large(self.what, self.limit)
        self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)


def _json_members(members: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """`conversations.json` (the shallowest), else every `conversations-NNN.json` in number order.

    An index file beside split members (`conversations.json.index`,
    `export_manifest.json`) is not a member of either kind and is left alone.
    """
    single = [m for m in members if posixpath.basename(m.filename) == CONVERSATIONS_MEMBER]
    if single:
        return [min(single, key=lambda m: m.filename.count("/"))]
    split = [(match, m) for m in members if (match := _SPLIT_MEMBER.match(posixpath.basename(m.filename)))]
    return [m for _, m in sorted(split, key=lambda pair: (int(pair[0].group(1)), pair[1].filename))]


def _member_checked(member: zipfile.ZipInfo, limit: int) -> zipfile.ZipInfo:
    name = posixpath.basename(member.filename)
    if member.flag_bits & 0x1:
        raise InvalidInput("The zip is encrypted.", code="zip_encrypted")
    if member.file_size > limit:
        raise too_large(name, limit)
    if member.file_size > RATIO_CHECKED_ABOVE and member.file_size > MAX_COMPRESSION_RATIO * max(member.compress_size, 1):
        raise InvalidInput(
            f"{name} unpacks to {member.file_size // max(member.compress_size, 1):,} times its packed "
            "size, which no real export does; nothing was imported.",
            code="zip_implausible_ratio",
        )
    return member


def _image_members(members: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
    """Each file id's member, wherever it sits (`dalle-generations/`, `user-…/`, the top)."""
    found: dict[str, zipfile.ZipInfo] = {}
    for member in sorted(members, key=lambda m: (m.filename.count("/"), m.filename)):
        match = _MEMBER_FILE_ID.match(posixpath.basename(member.filename))
        if match and not member.is_dir():
            found.setdefault(match.group(1), member)
    return found


@dataclass
class ExportFiles:
    """One uploaded file: its conversation JSON files, and (for a zip) the images beside them."""

    name: str
    limits: ExportLimits
    archive: zipfile.ZipFile | None = None
    source: BinaryIO | None = None
    members: list[zipfile.ZipInfo] = field(default_factory=list)
    images: dict[str, zipfile.ZipInfo] = field(default_factory=dict)

    @property
    def json_names(self) -> list[str]:
        return [m.filename for m in self.members] if self.archive is not None else [self.name]

    @contextlib.contextmanager
    def open_json(self, name: str) -> Iterator[io.BufferedReader]:
        """The bytes of one conversations file as a stream, capped at the limit."""
        label = posixpath.basename(name) or "conversations.json"
        if self.archive is None:
            assert self.source is not None
            self.source.seek(0)
            yield io.BufferedReader(_Limited(self.source, self.limits.max_json_bytes, label))
            return
        member = next(m for m in self.members if m.filename == name)
        try:
            inner = self.archive.open(member)
        except DAMAGED_ZIP as exc:
            raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc
        with inner:
            yield io.BufferedReader(_Limited(inner, self.limits.max_json_bytes, label))

    @contextlib.contextmanager
    def open_other(self, basename: str) -> Iterator[io.BufferedReader | None]:
        """Another JSON member of the zip (the shallowest named `basename`, such as Claude.ai's
        `projects.json`) as a stream capped at the limit; None when the upload has none. Raises
        InvalidInput when it is encrypted, too large or implausibly packed, UnreadableConversation when
        it is damaged: the caller decides what that costs."""
        found = [m for m in self.archive.infolist() if posixpath.basename(m.filename) == basename] if (
            self.archive is not None) else []
        if not found:
            yield None
            return
        member = _member_checked(min(found, key=lambda m: m.filename.count("/")), self.limits.max_json_bytes)
        assert self.archive is not None
        try:
            inner = self.archive.open(member)
        except DAMAGED_ZIP as exc:
            raise UnreadableConversation(f"{basename} is damaged in the zip") from exc
        with inner:
            yield io.BufferedReader(_Limited(inner, self.limits.max_json_bytes, basename))

    def image(self, file_id: str) -> tuple[str, str, bytes]:
        """`(name, mime, bytes)` of the image `file_id`; UnreadableImage saying why not."""
        member = self.images.get(file_id)
        if member is None:
            raise UnreadableImage(f"image {file_id} is not in the export")
        name = posixpath.basename(member.filename)
        try:
            _member_checked(member, self.limits.max_image_bytes)
            assert self.archive is not None
            with self.archive.open(member) as inner:
                data = _Limited(inner, self.limits.max_image_bytes, name).read()
        except ServiceError as exc:  # encrypted, too large, an implausible ratio
            raise UnreadableImage(f"image {name}: {exc.detail}") from exc
        except DAMAGED_ZIP as exc:
            raise UnreadableImage(f"image {name} is damaged in the zip") from exc
        mime = image_mime(data)
        if mime is None:
            raise UnreadableImage(f"{name} is not a PNG, JPEG, GIF or WebP image")
        return name, mime, data


@contextlib.contextmanager
def export_files(stream: BinaryIO, limits: ExportLimits, name: str = CONVERSATIONS_MEMBER) -> Iterator[ExportFiles]:
    """The conversation files of one upload: the JSON file itself, or the zip's members."""
    stream.seek(0)
    if not zipfile.is_zipfile(stream):
        yield ExportFiles(name=posixpath.basename(name) or CONVERSATIONS_MEMBER, limits=limits, source=stream)
        return
    stream.seek(0)
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise MalformedExport("The zip file is damaged and cannot be read.", code="bad_zip") from exc
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_members:
            raise InvalidInput(
                f"The zip lists {len(members):,} files; at most {limits.max_members:,} are accepted.",
                code="zip_too_many_members",
            )
        unsafe = next((m.filename for m in members if _unsafe_member(m.filename)), None)
        if unsafe is not None:
            raise InvalidInput(
                f"The zip contains an unsafe path ({unsafe[:80]!r}); nothing was imported.", code="zip_unsafe_path"
            )
        json_members = [_member_checked(m, limits.max_json_bytes) for m in _json_members(members)]
        if not json_members:
            raise MalformedExport(
                "The zip has no conversations.json (nor conversations-000.json…); is it a ChatGPT data export?",
                code="missing_conversations_json",
            )
        yield ExportFiles(
            name=name, limits=limits, archive=archive, members=json_members, images=_image_members(members)
        )
