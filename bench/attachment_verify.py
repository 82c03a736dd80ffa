"""What a send pays to verify and project a thread's attachments: re-hashing every blob vs trusting its identity.

Builds one thread whose live branch carries 200 image attachments of 1 MB
each (a PNG signature then random bytes: they are hashed and encoded as
bytes), 10 per user turn, through the real upload and send services. Then,
interleaved round by round in one run, it times a send's attachment work,
`attachments_preverify` (before the lock) plus `attachment_parts_verified`
over the live branch's manifests (under it), four ways:

- old:   every blob read, size and sha256 checked, base64-encoded, every send
         (the code before identities, rebuilt here from the store's helpers);
- new:   a stat() per blob against its recorded identity, the data URL from the
         process-local cache (the steady state of every send after the first);
- new, cold cache: identities trusted, the cache emptied first: each blob read
         and encoded again, not hashed (a fresh process, or a cache too small);
- new, first check: identities and cache dropped: the full check plus
         recording the identities (once per blob, and after any change).

It prints each way's median and its ratio to the old way, and the statements
each way sends.

    .venv/bin/python -m bench.attachment_verify                    # SQLite
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.attachment_verify; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                     # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when
the ways disagree on the request parts they build.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django  # noqa: E402
from bench.servers import in_process_bench_close  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WAYS = ("old", "new", "new_cold_cache", "new_first_check")


def image_bytes(rng: random.Random, size: int) -> bytes:
    return PNG_SIGNATURE + rng.randbytes(size - len(PNG_SIGNATURE))


def build_thread(images: int, size: int, per_turn: int, seed: int) -> UUID:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from conversations.sending.commands import SendCommand
    from conversations.sending.prepare import send_prepare
    from conversations.services.threads.thread_writes import conversation_create
    from transcript.attachments.upload import attachment_upload
    from transcript.models import Message, MessageStatus

    rng = random.Random(seed)
    conversation = conversation_create(persona="elion", title="Photo album")
    for first in range(0, images, per_turn):
        uploads = [
            attachment_upload(
                upload=SimpleUploadedFile(f"photo-{n}.png", image_bytes(rng, size)), conversation_id=conversation.id
            )
            for n in range(first, min(first + per_turn, images))
        ]
        send_prepare(SendCommand(
            conversation_id=conversation.id, content=f"photos {first}+", attachment_ids=tuple(u.id for u in uploads)
        ))
        conversation.refresh_from_db()
        Message.objects.filter(pk=conversation.head_id).update(
            status=MessageStatus.COMPLETE, content="Lovely.", lease_expires_at=None
        )
    return conversation.id


def preverify_old(conversation_id: UUID) -> dict:
    """The pre-lock verification as it was before identities: read, hash and encode every blob."""
    from transcript.attachments import store
    from transcript.attachments.projection import attachment_part
    from transcript.models import MessageAttachment

    conversation_store = store.conversation_store(conversation_id)
    parts = {}
    for entry in MessageAttachment.objects.filter(message__conversation_id=conversation_id).select_related(
        "attachment"
    ):
        attachment = entry.attachment
        data = store.read_verified(conversation_store, attachment.sha256, attachment.size)
        parts[attachment.id] = attachment_part(attachment, data)
    return parts


def preverify_new(conversation_id: UUID) -> dict:
    from transcript.attachments.projection import attachments_preverify

    return attachments_preverify(conversation_id=conversation_id, attachment_ids=()).parts


def projected(conversation_id: UUID, preverify: Callable[[UUID], dict]) -> dict:
    """A send's attachment work: the pre-lock verification, then the live branch's parts under the lock."""
    from transcript.attachments.manifests import manifests_for
    from transcript.attachments.projection import attachment_parts_verified
    from transcript.models import Conversation, Message, Role
    from transcript.tree import walk_to_root

    verified = preverify(conversation_id)
    conversation = Conversation.objects.get(pk=conversation_id)
    tree = {m.id: m for m in Message.objects.filter(conversation_id=conversation_id).exclude(role=Role.SYSTEM)}
    branch = walk_to_root(tree, conversation.head_id)
    manifests = manifests_for(m for m in branch if m.role == Role.USER)
    return attachment_parts_verified(conversation_id, manifests, verified=verified)


def run_way(way: str, conversation_id: UUID) -> tuple[float, int, dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from transcript.attachments.encoded_cache import encoded_blobs
    from transcript.models import AttachmentBlobIdentity

    if way in ("new_cold_cache", "new_first_check"):
        encoded_blobs.clear()
    if way == "new_first_check":
        AttachmentBlobIdentity.objects.filter(conversation_id=conversation_id).delete()
    preverify = preverify_old if way == "old" else preverify_new
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        parts = projected(conversation_id, preverify)
        elapsed = time.perf_counter() - started
    return elapsed, len(queries), parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--size-mb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    size = int(args.size_mb * 1024 * 1024)

    server_url = os.environ.get("DATABASE_URL") or None
    data_dir = Path(tempfile.mkdtemp(prefix="elion-attachments-"))
    drop = None
    try:
        database_url = None
        if server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.conf import settings
        from django.db import connection

        settings.ELION_ATTACHMENTS_PER_MESSAGE = 10
        print(f"database: {connection.vendor}; {args.images} images of {size:,} bytes, 10 per user turn; "
              f"encoded cache bound {settings.ELION_ATTACHMENT_ENCODED_CACHE_BYTES:,} bytes")
        conversation_id = build_thread(args.images, size, 10, args.seed)
        reference = None
        for way in WAYS:  # warm-up, and every way must build the same parts
            _, _, parts = run_way(way, conversation_id)
            reference = reference or parts
            if parts != reference:
                raise SystemExit(f"{way} built other request parts than the old way")
        results: dict[str, list[tuple[float, int]]] = {way: [] for way in WAYS}
        for round_number in range(args.rounds):
            order = list(WAYS) if round_number % 2 == 0 else list(reversed(WAYS))
            for way in order:
                elapsed, statements, _ = run_way(way, conversation_id)
                results[way].append((elapsed, statements))
            # Leave the steady state behind whichever way ran last.
            run_way("new", conversation_id)

        old_median = statistics.median(t for t, _ in results["old"])
        print(f"{'way':<18}{'median ms':>12}{'min ms':>10}{'max ms':>10}{'statements':>12}{'old / way':>12}")
        for way in WAYS:
            times = [t for t, _ in results[way]]
            median = statistics.median(times)
            statements = ", ".join(str(s) for s in sorted({s for _, s in results[way]}))
            print(f"{way:<18}{median * 1000:>12.2f}{min(times) * 1000:>10.2f}{max(times) * 1000:>10.2f}"
                  f"{statements:>12}{old_median / median:>11.1f}x")
        from transcript.attachments.encoded_cache import encoded_blobs

        print(f"encoded cache after the run: {len(encoded_blobs)} data URLs, {encoded_blobs.held_bytes:,} bytes")
        new_median = statistics.median(t for t, _ in results["new"])
        print(f"a send after the first: {new_median * 1000:.2f} ms instead of {old_median * 1000:.2f} ms "
              f"({old_median / new_median:.0f}x less)")
    finally:
        in_process_bench_close(server_url, drop, data_dir)


if __name__ == "__main__":
    main()
