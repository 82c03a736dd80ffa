"""Uploads sent in pieces: an export of hundreds of megabytes reaches the server in bounded requests.

Daphne holds a request's whole body in memory before the app sees it
(django/daphne#483): one 100 MB upload raised its peak RSS from 127 MB to
1.36 GB. So the import page sends an export as pieces of at most
`ELION_UPLOAD_PIECE_BYTES` (8 MiB), each its own request, appended in order to
one file under `ELION_IMPORT_DIR/pieces/`; a background import then starts
from the assembled files (`piece_files`). A piece carries the offset it
starts at, so a piece sent twice (a retry after a lost answer) is refused
without changing the file, and the sender asks where to go on
(`piece_upload_state`). Uploads left unfinished for a day are removed when
the next one begins.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.files import File

from elion.base.errors import Conflict, InvalidInput, NotFound
from elion.base.input_checks import text_check
from elion.base.rows import id_or_not_found
from elion.base.uploads import FileTooLarge, too_large

COPY_BYTES = 1024 * 1024
NAME_MAX = 300
ABANDONED_SECONDS = 24 * 3600


def _root() -> Path:
    return Path(settings.ELION_IMPORT_DIR) / "pieces"


def _folder(upload_id: object) -> Path:
    key = id_or_not_found(upload_id, kind="uuid", missing="No upload has that id.", code="upload_not_found")
    folder = _root() / str(key)
    if not (folder / "meta.json").is_file():
        raise NotFound("No upload has that id.", code="upload_not_found")
    return folder


def _state(folder: Path) -> dict:
    meta = json.loads((folder / "meta.json").read_text())
    received = (folder / "data").stat().st_size
    return {"upload_id": folder.name, "name": meta["name"], "size": meta["size"], "received": received}


def _abandoned_remove() -> None:
    root = _root()
    if not root.is_dir():
        return
    cutoff = time.time() - ABANDONED_SECONDS
    for folder in root.iterdir():
        data = folder / "data"
        if data.is_file() and data.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)


def piece_upload_create(*, name: object, size: object) -> dict:
    """A new, empty upload of `size` bytes named `name`: its id and how much it has received (0)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name must be the file's name, a non-empty string.", code="invalid_name")
    text_check(name, "name")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"name must be at most {NAME_MAX} characters.", code="invalid_name")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise InvalidInput("size must be the file's size in bytes, a positive integer.", code="invalid_size")
    if size > settings.ELION_ARCHIVE_IMPORT_MAX_BYTES:
        raise too_large("The export", settings.ELION_ARCHIVE_IMPORT_MAX_BYTES)
    _abandoned_remove()
    folder = _root() / str(uuid.uuid4())
    folder.mkdir(parents=True, mode=0o700)
    (folder / "data").touch(mode=0o600)
    (folder / "meta.json").write_text(json.dumps({"name": name, "size": size}))
    return _state(folder)


def piece_upload_state(upload_id: object) -> dict:
    return _state(_folder(upload_id))


def piece_append(*, upload_id: object, offset: object, length: object, body: BinaryIO) -> dict:
    """Append the piece `body` (`length` bytes) at `offset`, which must be where the upload ends now.

    409 `upload_offset_mismatch` (with where it ends) for any other offset: a
    piece sent twice is refused, never appended twice. Pieces of one upload
    are appended one at a time (a lock on its file).
    """
    folder = _folder(upload_id)
    limit = settings.ELION_UPLOAD_PIECE_BYTES
    try:
        offset = int(str(offset))
        length = int(str(length))
    except ValueError as exc:
        raise InvalidInput("offset and the piece's length must be whole numbers.", code="invalid_offset") from exc
    if offset < 0 or length < 1:
        raise InvalidInput("Send a non-empty piece at a non-negative offset.", code="invalid_offset")
    if length > limit:
        raise FileTooLarge(f"A piece is at most {limit:,} bytes; this one is {length:,}.")
    meta = json.loads((folder / "meta.json").read_text())
    with (folder / "data").open("ab") as out:
        fcntl.flock(out, fcntl.LOCK_EX)
        received = out.seek(0, 2)
        if offset != received:
            raise Conflict(
                f"This upload has {received:,} bytes; send the piece that starts there.",
                code="upload_offset_mismatch",
            )
        if offset + length > meta["size"]:
            raise InvalidInput(
                f"The piece ends past the upload's size ({meta['size']:,} bytes).", code="piece_beyond_size"
            )
        copied = 0
        while copied < length:
            chunk = body.read(min(COPY_BYTES, length - copied))
            if not chunk:
                break
            out.write(chunk)
            copied += len(chunk)
        if copied != length:
            out.truncate(received)
            raise InvalidInput(f"The piece had {copied:,} bytes, not {length:,}.", code="piece_incomplete")
    return _state(folder)


def piece_files(upload_ids: object) -> list[File]:
    """The finished uploads named by `upload_ids`, open, as files an import takes (the caller closes them)."""
    if not isinstance(upload_ids, list) or not upload_ids or len(upload_ids) > 64:
        raise InvalidInput("upload_ids must be a list of 1 to 64 upload ids.", code="invalid_upload_ids")
    states = []
    for upload_id in upload_ids:
        if not isinstance(upload_id, str):
            raise InvalidInput("upload_ids must be a list of 1 to 64 upload ids.", code="invalid_upload_ids")
        states.append((_folder(upload_id), piece_upload_state(upload_id)))
    for _, state in states:
        if state["received"] != state["size"]:
            raise Conflict(
                f"The upload of {state['name']!r} has {state['received']:,} of {state['size']:,} bytes.",
                code="upload_incomplete",
            )
    return [File((folder / "data").open("rb"), name=state["name"]) for folder, state in states]


def piece_uploads_remove(upload_ids: Sequence[str]) -> None:
    for upload_id in upload_ids:
        shutil.rmtree(_root() / str(uuid.UUID(upload_id)), ignore_errors=True)
