"""Builds the long threads `bench/long_thread.py` measures, inside one app tree's own code.

Run by path, never imported from the tree being measured, so that the same
builder can fill the database of another source tree (`--baseline`):

    cd TREE && ELION_DATA_DIR=... [DATABASE_URL=...] OPENAI_BASE_URL=... \\
        python /path/to/this/bench/long_thread_build.py --spec '{...}'

The current directory is the app tree whose code runs (its `manage.py`
beside it): it migrates that tree's schema, then builds every thread of the
spec through that tree's services, so whatever a message write records in
that tree (binding, search index rows, and any column a later change adds to
`message_append`) is recorded here too:

- `conversation_create` for each thread, all created before any message is
  written, so no thread's New Chat handoff captures another bench thread;
- `message_append` for every message, one transaction per thread, user and
  assistant turns alternating (200–600 characters of prose, seeded), the
  parent chain and seq as a real thread has, the provider binding the server
  computes, head at the last (assistant) message. No stored static prompt:
  the bench's first, unmeasured send stores it, as a real first send does;
- image attachments through `attachment_upload` (a real blob in the upload
  store, type sniffed from the bytes) and `attachments_commit` (the manifest,
  the blob copied into the conversation's store), on user turns spread evenly
  over the thread; each image is `--image-bytes` of random bytes behind a PNG
  signature, so no two share a blob;
- the rows dated as a thread of months has them (`spread_over_months`);
- then the search index is tokenised (`message_search_index_sync`, as a
  running app's would be) and `ANALYZE` runs (PostgreSQL: `VACUUM ANALYZE`, the
  visibility map autovacuum keeps for a months-old table).

The last line of stdout is `BUILT <json>`: each thread's id, original head,
live-branch length and image count, and the build timings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_WORDS = [
    "morning", "light", "garden", "tea", "quiet", "letter", "river", "memory", "walk", "music", "rain", "window",
    "book", "friend", "promise", "story", "evening", "candle", "ocean", "forest", "road", "home", "laughter",
    "question", "answer", "dream", "voice", "silence", "thread", "season", "winter", "summer", "autumn", "spring",
    "coffee", "kitchen", "stars", "moon", "notebook", "poem", "song", "city", "bridge", "train", "journey",
    "tomorrow", "yesterday", "today", "careful", "gentle", "bright", "slow", "warm", "honest", "curious", "patient",
    "small", "wide", "deep", "open", "simple", "strange", "familiar", "remember", "because", "maybe", "little",
    "together", "always", "sometimes", "across", "under", "over", "through",
]


def prose(rng: random.Random, lo: int = 200, hi: int = 600) -> str:
    """Sentences of common words, between `lo` and `hi` characters long."""
    target = rng.randint(lo, hi)
    sentences: list[str] = []
    length = 0
    while length < target:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 16))]
        sentence = " ".join(words).capitalize() + rng.choice(".?!")
        sentences.append(sentence)
        length += len(sentence) + 1
    return " ".join(sentences)[:hi]


def image_payload(rng: random.Random, size: int) -> bytes:
    """`size` bytes a sniffer takes for a PNG: the signature, then random bytes."""
    return PNG_SIGNATURE + rng.randbytes(size - len(PNG_SIGNATURE))


def image_turns(user_turns: int, images: int) -> set[int]:
    """Which user turns (0-based) carry an image: `images` of them, spread evenly."""
    if images > user_turns:
        raise ValueError(f"{images} images need at least as many user turns (have {user_turns})")
    return {i * user_turns // images for i in range(images)}


def build_thread(conversation, case: dict, binding, seed: int) -> dict:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import transaction

    from transcript.append import APPENDED_FIELDS, message_append
    from transcript.attachments.manifests import attachments_commit
    from transcript.attachments.upload import attachment_upload

    rng = random.Random(f"{seed}:{case['label']}")
    length = case["length"]
    with_image = image_turns(length // 2, case.get("images", 0)) if case.get("images") else set()
    started = time.perf_counter()
    uploads = {}
    for turn in sorted(with_image):
        # Uploads first (outside the thread's transaction, as the app uploads before a send).
        uploads[turn] = attachment_upload(
            upload=SimpleUploadedFile(f"photo-{turn:04d}.png", image_payload(rng, case["image_bytes"])),
            conversation_id=conversation.id,
        )
    upload_seconds = time.perf_counter() - started
    parent = None
    with transaction.atomic():
        for index in range(length):
            user = index % 2 == 0
            parent = message_append(
                conversation=conversation,
                parent=parent,
                role="user" if user else "assistant",
                binding=binding,
                make_head=True,
                content=prose(rng),
            )
            if user and index // 2 in uploads:
                attachments_commit(message=parent, attachment_ids=(uploads[index // 2].id,))
        conversation.save(update_fields=APPENDED_FIELDS)
    spread_over_months(conversation)
    return {
        "label": case["label"],
        "conversation_id": str(conversation.id),
        "head_id": str(conversation.head_id),
        "live_messages": length,
        "images": len(uploads),
        "image_bytes": case.get("image_bytes", 0) if uploads else 0,
        "seconds": time.perf_counter() - started,
        "upload_seconds": upload_seconds,
    }


def spread_over_months(conversation) -> None:
    """Date the thread's rows as a thread of months is: one turn every 10 minutes up to an hour ago.

    Built in seconds, every row would be stamped "now", as no long thread is;
    a process that keeps a conversation's rows and asks only for what changed
    recently (the tree cache before issue 40) would then read them all again.
    """
    import datetime

    from django.db import transaction
    from django.utils import timezone

    from transcript.models import Message

    newest = timezone.now() - datetime.timedelta(hours=1)
    rows = list(Message.objects.filter(conversation=conversation).order_by("-seq").values_list("pk", flat=True))
    with transaction.atomic():
        for steps, pk in enumerate(rows):
            when = newest - datetime.timedelta(minutes=10 * steps)
            Message.objects.filter(pk=pk).update(created_at=when, updated_at=when)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help='JSON: {"seed": N, "cases": [{"label", "length", ...}]}')
    args = parser.parse_args(argv)
    spec = json.loads(args.spec)
    for case in spec["cases"]:
        if case["length"] < 2 or case["length"] % 2:
            raise SystemExit(f"thread length {case['length']}: give an even number ≥ 2 (the head is a reply)")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from conversations.services.threads.thread_writes import conversation_create
    from transcript.provider.binding import configured_provider
    from transcript.search_index import message_search_index_sync

    started = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    migrate_seconds = time.perf_counter() - started
    binding = configured_provider().binding()
    conversations = [
        conversation_create(title=f"Long thread bench: {case['label']}") for case in spec["cases"]
    ]
    built = []
    for conversation, case in zip(conversations, spec["cases"], strict=True):
        built.append(build_thread(conversation, case, binding, spec["seed"]))
        print(f"  built {case['label']}: {built[-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
    started = time.perf_counter()
    message_search_index_sync()
    index_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        # A months-old thread's rows have been vacuumed by autovacuum in a running app, so the visibility
        # map marks their pages all-visible (index-only scans skip the table there); a table just built
        # has no map yet. PostgreSQL vacuums (and analyzes) here to be that table. SQLite is left without
        # planner statistics, as the app leaves it (it never runs ANALYZE): an ANALYZE here once hid a
        # query plan that read a whole thread where the app's database has no statistics.
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE")
    analyze_seconds = time.perf_counter() - started
    result = {
        "vendor": connection.vendor,
        "threads": built,
        "migrate_seconds": migrate_seconds,
        "index_seconds": index_seconds,
        "analyze_seconds": analyze_seconds,
    }
    connection.close()
    print("BUILT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    # The tree being measured (the current directory) comes first on the path, not this file's directory.
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    sys.path.insert(0, os.getcwd())
    sys.exit(main())
