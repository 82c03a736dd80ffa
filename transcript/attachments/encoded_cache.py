"""The encoded form of image blobs, kept so a send does not base64 the same bytes again.

An image reaches the model as a `data:<mime>;base64,…` URL (about 4/3 of the
blob's size). Building it for every image on the branch for every send costs
as much as reading the bytes, so the URL is kept here, process-local, keyed
by `(sha256, file identity, mime)`: an entry is only ever asked for after the
blob's identity was checked against its verified record
(`transcript.attachments.verification`), and a changed file has another
identity, so a stale entry can never be served for changed bytes; it just
ages out.

Bounded: least recently used entries are dropped once the URLs held exceed
`ELION_ATTACHMENT_ENCODED_CACHE_BYTES` (default 320 MiB, about 240 images of
1 MB; 0 turns the cache off); a URL larger than the whole bound is not kept.
Each process (each Daphne worker) holds its own; a miss costs a read and an
encode, never a hash. The URLs a send's request holds are the same string
objects as the cached ones, so a send that uses them adds no copy.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.conf import settings

CacheKey = tuple[str, str, str]  # (sha256, file identity, mime)


class EncodedBlobCache:
    """A least-recently-used map of data URLs, bounded by their total length in bytes (ASCII)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[CacheKey, str] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        return self._held

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> str | None:
        with self._lock:
            url = self._entries.get(key)
            if url is not None:
                self._entries.move_to_end(key)
            return url

    def put(self, key: CacheKey, url: str, *, bound: int | None = None) -> None:
        limit = settings.ELION_ATTACHMENT_ENCODED_CACHE_BYTES if bound is None else bound
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._held -= len(previous)
            if len(url) > limit:
                return
            self._entries[key] = url
            self._held += len(url)
            while self._held > limit:
                _, dropped = self._entries.popitem(last=False)
                self._held -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0


# This process's cache.
encoded_blobs = EncodedBlobCache()
