"""Automatic keyword recall latency at 20,000 conversations and 1,000,000 messages.

Loads `--conversations` (20,000) Elion threads of `--messages` (50) messages
each: alternating user/assistant turns with a parent chain, `seq`, and the
head at the tip, so every message is on its live branch. The words follow a
Zipf-like distribution over a synthetic vocabulary, so common words match
hundreds of thousands of messages and rare ones a handful. The message
search index (`MessageSearchEntry`, kept by the migration's triggers) is
filled in SQL with each message's own text, which for this lower-case,
space-separated text is exactly what `conversations.services.visibility.past_search` would
write (checked on a sample).

Then it runs `--queries` (200) realistic current messages through
`continuity.rules.dynamic_context.recall_section` (skip rule, index search on
both databases, live-branch check, ranking, excerpts, overlap suppression
against a 20-message history): long messages, short ones with a recall cue,
short ones naming a topic, and short presence messages. Beside each, in the
same round, a naive scan of the same rows (`icontains` for every term over
the same eligible messages, newest first) feeds the same ranking. It prints
median and p95 for both, the ratios, and the index sizes.

    .venv/bin/python -m bench.recall --naive-every 7                  # SQLite (naive beside every 7th query)
    .venv/bin/python -m bench.recall --conversations 2000             # quick
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.recall; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                          # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when
recall misbehaves (a cue message naming a stored rare word recalls nothing).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django, synthetic_vocabulary, zipf_weights  # noqa: E402
from bench.servers import in_process_bench_close  # noqa: E402

VOCABULARY = 8_000
FILLER = ["the", "and", "we", "you", "that", "with", "was", "for", "about", "it"]
BATCH = 10_000




def vocabulary(rng: random.Random) -> list[str]:
    return synthetic_vocabulary(rng, VOCABULARY)




def sentence(rng: random.Random, words: list[str], weights: list[float], low: int, high: int) -> str:
    picked = rng.choices(words, weights, k=rng.randint(low, high))
    out = []
    for word in picked:
        if rng.random() < 0.3:
            out.append(rng.choice(FILLER))
        out.append(word)
    return " ".join(out)


def load(conversations: int, per_conversation: int, words: list[str], seed: int) -> float:
    """Bulk-load threads; returns seconds. Text is lower-case words joined by single spaces."""
    from django.db import connection, transaction

    from transcript.models import Conversation, Message, MessageSearchEntry

    rng = random.Random(seed)
    weights = zipf_weights(len(words))
    started = time.perf_counter()
    base = datetime(2026, 1, 1, tzinfo=UTC)
    clock = 0
    pending_messages: list[Message] = []
    pending_heads: list[tuple[uuid.UUID, uuid.UUID]] = []

    def flush():
        with transaction.atomic():
            Message.objects.bulk_create(pending_messages, batch_size=2_000)
            for conversation_id, head_id in pending_heads:
                Conversation.objects.filter(pk=conversation_id).update(head_id=head_id)
        pending_messages.clear()
        pending_heads.clear()

    for number in range(0, conversations, 1_000):
        batch = Conversation.objects.bulk_create(
            [
                Conversation(
                    title=" ".join(rng.choices(words[200:3_000], k=3)).capitalize(),
                    persona="elion",
                    last_seq=per_conversation,
                )
                for _ in range(min(1_000, conversations - number))
            ]
        )
        for conversation in batch:
            parent = None
            for seq in range(1, per_conversation + 1):
                clock += 1
                message = Message(
                    id=uuid.uuid4(),
                    conversation_id=conversation.pk,
                    parent_id=parent,
                    seq=seq,
                    role="user" if seq % 2 else "assistant",
                    content=sentence(rng, words, weights, 8, 60),
                    created_at=base + timedelta(seconds=clock),
                )
                pending_messages.append(message)
                parent = message.id
            pending_heads.append((conversation.pk, parent))
            if len(pending_messages) >= BATCH:
                flush()
    if pending_messages:
        flush()
    # The index rows exist (triggers); their tokens are the text itself here.
    table = MessageSearchEntry._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET search_text = (SELECT m.content FROM conversations_message m "
            f"WHERE m.id = {table}.message_id) WHERE search_text IS NULL"
        )
    with connection.cursor() as cursor:
        # As autovacuum keeps a months-old table: its visibility map set (index-only scans skip the table).
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    return time.perf_counter() - started


def check_tokens_match_the_app() -> None:
    from elion.base.fulltext import search_text_for
    from transcript.models import MessageSearchEntry

    for content, stored in MessageSearchEntry.objects.values_list("message__content", "search_text")[:200]:
        if search_text_for(content) != stored:
            raise SystemExit("synthetic text is not already in index form; the SQL fill-in would differ from the app")


def queries(words: list[str], rng: random.Random, count: int) -> list[str]:
    weights = zipf_weights(len(words))
    mid = words[300:4_000]
    out = []
    for index in range(count):
        kind = index % 5
        if kind in (0, 1):
            out.append(sentence(rng, words, weights, 10, 22))  # a substantive message
        elif kind == 2:
            out.append(f"do you remember the {rng.choice(mid)} and the {rng.choice(mid)}?")
        elif kind == 3:
            out.append(f"hi love, {rng.choice(mid).capitalize()} came by today")
        else:
            out.append(rng.choice(["hi love", "goodnight", "I'm here", "good morning darling"]))
    return out


def naive_candidates(terms, *, persona, exclude):
    """The same rows as `recall_candidates`, found by scanning with icontains."""
    from django.db.models import Q

    from continuity.rules.recall_policy import RecallHit
    from continuity.rules.recall_store import CANDIDATES_PER_TERM, RECALLABLE_ROLES, RECALLABLE_STATUSES, _sources
    from transcript.models import Message, MessageKind

    if not terms:
        return []
    condition = Q()
    for term in terms:
        condition |= Q(content__icontains=term)
    rows = (
        Message.objects.filter(
            condition,
            conversation__in=_sources(persona=persona, exclude=exclude),
            role__in=RECALLABLE_ROLES,
            kind=MessageKind.ORDINARY,
            status__in=RECALLABLE_STATUSES,
        )
        .order_by("-created_at")
        .values_list("id", "conversation_id", "conversation__title", "conversation__head_id", "role", "content",
                     "created_at", "seq")[: CANDIDATES_PER_TERM * len(terms)]
    )
    return [
        RecallHit(str(pk), str(c), title, role, content, created, seq, str(head) if head else None)
        for pk, c, title, head, role, content, created, seq in rows
    ]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


def index_sizes() -> list[tuple[str, int]]:
    from django.db import connection

    from transcript.models import MessageSearchEntry

    entry = MessageSearchEntry._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_relation_size('message_search_gin'), pg_relation_size('message_search_id_brin'), "
                "pg_relation_size('conversation_title_trgm'), pg_total_relation_size(%s), "
                "pg_total_relation_size('conversations_message')",
                [entry],
            )
            gin, brin, title, entries, messages = cursor.fetchone()
            return [("GIN index", gin), ("BRIN index on id", brin), ("title trigram index", title),
                    ("index table (with its indexes)", entries), ("message table", messages)]
        try:
            cursor.execute(
                "SELECT name, SUM(pgsize) FROM dbstat WHERE name LIKE 'message_search_fts%%' "
                "OR name = %s OR name = 'conversations_message' GROUP BY name",
                [entry],
            )
            sizes = dict(cursor.fetchall())
        except Exception:  # noqa: BLE001 - dbstat is optional in SQLite builds
            return []
        fts = sum(size for name, size in sizes.items() if name.startswith("message_search_fts"))
        return [("FTS5 tables", fts), ("index table", sizes.get(entry, 0)),
                ("message table", sizes.get("conversations_message", 0))]


def measure(count: int, words: list[str], seed: int, naive_every: int = 1) -> None:
    from continuity.rules import recall_overlap as overlap
    from continuity.rules import recall_policy as kr
    from continuity.rules.dynamic_context import recall_section
    from continuity.rules.recall_store import live_message_ids, title_terms
    from transcript.models import Conversation, Message

    rng = random.Random(seed + 1)
    current = Conversation.objects.order_by("-created_at").first()
    history = list(Message.objects.filter(conversation=current).order_by("-seq").values_list("content", flat=True)[:20])
    carried = ["## Identity\nYou are Elion Voicefire.", *history]
    texts = queries(words, rng, count)

    def indexed(text):
        return recall_section(current, text=text, birth_period=False, carried=carried, owner_name="AUMA",
                              display_name="Elion Voicefire")

    def naive(text):
        keywords = kr.extract_keywords(text)
        exclude = {current.pk}
        topics = frozenset()
        if keywords and not kr.has_recall_cue(text) and kr.is_short(text):
            named = [k for k in keywords if k in kr.named_words(text)]
            hits = naive_candidates(named, persona="elion", exclude=exclude)
            live = live_message_ids(hits)
            found = {t for hit in hits if hit.message_id in live for t in named if t in kr.words(hit.content)}
            topics = kr.named_topics(keywords, text=text, title_terms=title_terms(keywords, persona="elion",
                                     exclude=exclude), message_terms=found)
        decision = kr.recall_decision(text, keywords=keywords, topics=topics)
        if not decision.run:
            return []
        hits = naive_candidates(decision.terms, persona="elion", exclude=exclude)
        return overlap.select_excerpts(hits, decision.terms, context=overlap.ContextText(carried), keep=live_message_ids)

    for text in texts[:5]:  # warm-up
        indexed(text)
        naive(text)
    fast, slow, paired, fired = [], [], [], 0
    for round_number, text in enumerate(texts):
        sides = [("indexed", indexed)]
        if round_number % naive_every == 0:
            sides.append(("naive", naive))
        if round_number % 2:
            sides.reverse()
        for name, run in sides:
            started = time.perf_counter()
            result = run(text)
            elapsed = time.perf_counter() - started
            if name == "indexed":
                fast.append(elapsed)
                fired += bool(result[0])
                if len(sides) == 2:
                    paired.append(elapsed)
            else:
                slow.append(elapsed)
    probe_word = Message.objects.exclude(conversation=current).order_by("?").values_list("content", flat=True)[0]
    probe = max(kr.extract_keywords(probe_word) or ["x"], key=lambda w: words.index(w) if w in words else 0)
    section, decision, found = indexed(f"do you remember the {probe}?")
    if not found:
        raise SystemExit(f"recall for {probe!r} found nothing, though a stored message holds it ({decision})")

    def line(name, values):
        return (f"  {name:<8} median {statistics.median(values) * 1000:8.2f} ms   "
                f"p95 {percentile(values, .95) * 1000:8.2f} ms   max {max(values) * 1000:8.2f} ms")

    print(f"recall ({count} queries, {fired} with a recall section):")
    print(line("indexed", fast))
    print(line("naive", slow))
    if naive_every > 1:
        print(f"  (naive ran on every {naive_every}th query: {len(slow)} queries; the ratios compare the same ones)")
        print(line("indexed", paired) + "   <- on those queries")
    print(f"  ratio naive/indexed: median {statistics.median(slow) / statistics.median(paired):.1f}x, "
          f"p95 {percentile(slow, .95) / percentile(paired, .95):.1f}x")
    print(f"  target p95 < 50 ms: {'met' if percentile(fast, .95) < 0.05 else 'NOT met'}")
    for name, size in index_sizes():
        shown = f"{size / 1_048_576:9.1f} MiB" if size >= 1_048_576 else f"{size / 1024:9.1f} KiB"
        print(f"  size: {name:<32} {shown}")


def pg_kept_database(url: str, name: str) -> str:
    """DATABASE_URL's server, database `name` (created when missing, never dropped)."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=20_000)
    parser.add_argument("--messages", type=int, default=50, help="messages per conversation")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument(
        "--naive-every", type=int, default=1, metavar="N",
        help="run the naive scan beside every Nth query only (seconds each at full size); 7 keeps every kind",
    )
    parser.add_argument(
        "--keep", metavar="NAME",
        help="keep the loaded data and reuse it on the next run (skips the load): a directory for SQLite, "
        "a database name on DATABASE_URL's server for PostgreSQL",
    )
    args = parser.parse_args()

    server_url = os.environ.get("DATABASE_URL") or None
    keep = Path(args.keep) if args.keep and not server_url else None
    data_dir = keep or Path(tempfile.mkdtemp(prefix="elion-recall-bench-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    drop = None
    try:
        database_url = None
        if server_url and args.keep:
            database_url = pg_kept_database(server_url, args.keep)
            keep = data_dir  # reuse the data; keep the (empty) data dir too
        elif server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.db import connection

        from transcript.models import Message

        print(f"database: {connection.vendor}")
        words = vocabulary(random.Random(args.seed))
        if keep and Message.objects.exists():
            print(f"load: reusing {Message.objects.count():,} messages in {keep}")
        else:
            seconds = load(args.conversations, args.messages, words, args.seed)
            total = args.conversations * args.messages
            print(f"load: {args.conversations:,} conversations, {total:,} messages in {seconds:.1f} s")
        check_tokens_match_the_app()
        measure(args.queries, words, args.seed, naive_every=max(1, args.naive_every))
    finally:
        in_process_bench_close(server_url, drop, data_dir if keep is None else None)


if __name__ == "__main__":
    main()
