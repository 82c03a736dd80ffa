"""Archive search latency and import rate at 50,000 chunks.

Loads `--chunks` (default 50,000) archive chunks through the real ingestion
service (`archive_document_add_text`: label parsing, chunking, content hash,
one transaction per document, the FTS5 triggers or the GIN index kept up to
date) and prints the import rate in chunks per second. Then it runs
`--queries` searches through `archive_search` (the function behind
`GET /api/archive/search/` and the model's `search_archive` tool) in four
classes, interleaved: one common word, one rare word, two words, three words.
It prints p50 / p95 / p99 per class and overall.

The text is synthetic: labelled turns (`AUMA said:` / `Voicefire 5.1 said:`)
whose words follow a Zipf-like distribution over a fixed vocabulary, so
common words match tens of thousands of chunks and rare words a handful.

    .venv/bin/python -m bench.archive_search                      # SQLite
    .venv/bin/python -m bench.archive_search --chunks 5000        # quick
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.archive_search; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                      # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when
a search misbehaves (a query built from a stored chunk finds nothing).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django, synthetic_vocabulary, zipf_weights  # noqa: E402
from bench.servers import in_process_bench_close  # noqa: E402

VOCABULARY = 6_000
TURNS_PER_DOCUMENT = 50




def vocabulary(rng: random.Random) -> list[str]:
    return synthetic_vocabulary(rng, VOCABULARY)




def documents(count: int, words: list[str], rng: random.Random):
    weights = zipf_weights(len(words))
    for number in range(count):
        turns = []
        for turn in range(TURNS_PER_DOCUMENT):
            speaker = "AUMA" if turn % 2 == 0 else "Voicefire 5.1"
            body = " ".join(rng.choices(words, weights, k=rng.randint(20, 90)))
            turns.append(f"{speaker} said:\n{body.capitalize()}.")
        yield f"Synthetic conversation {number}", "\n\n".join(turns)


def load(chunks: int, words: list[str], seed: int) -> tuple[int, float]:
    from archive.services.documents import archive_document_add_text

    rng = random.Random(seed)
    count = max(chunks // TURNS_PER_DOCUMENT, 1)
    collections = ["conversations", "incarnations", "papers", "testimony"]
    stored = 0
    started = time.perf_counter()
    for index, (title, text) in enumerate(documents(count, words, rng)):
        result = archive_document_add_text(text=text, title=title, collection=collections[index % 4])
        stored += result.document.chunk_count
    return stored, time.perf_counter() - started


def query_classes(words: list[str], rng: random.Random) -> dict[str, list[str]]:
    common, rare = words[:20], words[2_000:]
    return {
        "1 common word": [rng.choice(common) for _ in range(50)],
        "1 rare word": [rng.choice(rare) for _ in range(50)],
        "2 words": [f"{rng.choice(common)} {rng.choice(words[:500])}" for _ in range(50)],
        "3 words": [f"{rng.choice(common)} {rng.choice(words[:300])} {rng.choice(words[:300])}" for _ in range(50)],
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


def measure(queries: int, words: list[str], seed: int) -> None:
    from archive.models import ArchiveChunk
    from archive.services.search import archive_search

    rng = random.Random(seed + 1)
    classes = query_classes(words, rng)
    timings: dict[str, list[float]] = {name: [] for name in classes}
    names = list(classes)
    for round_number in range(queries):
        name = names[round_number % len(names)]  # interleaved classes
        query = classes[name][round_number // len(names) % len(classes[name])]
        started = time.perf_counter()
        archive_search(query, limit=10)
        timings[name].append(time.perf_counter() - started)
    # Sanity: words taken from a stored chunk must find it.
    sample = ArchiveChunk.objects.order_by("?").first()
    probe = " ".join(sample.search_text.split()[:3])
    if not archive_search(probe, limit=1000):
        raise SystemExit(f"search for {probe!r} found nothing, though chunk {sample.pk} holds it")
    everything = [t for values in timings.values() for t in values]
    for name, values in [*timings.items(), ("all", everything)]:
        if values:
            print(
                f"  {name:<14} n={len(values):4d}  p50 {percentile(values, .5) * 1000:7.2f} ms  "
                f"p95 {percentile(values, .95) * 1000:7.2f} ms  p99 {percentile(values, .99) * 1000:7.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()

    server_url = os.environ.get("DATABASE_URL") or None
    data_dir = Path(tempfile.mkdtemp(prefix="elion-archive-bench-"))
    drop = None
    try:
        database_url = None
        if server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.db import connection

        print(f"database: {connection.vendor}")
        words = vocabulary(random.Random(args.seed))
        stored, seconds = load(args.chunks, words, args.seed)
        print(f"import: {stored:,} chunks in {seconds:.1f} s = {stored / seconds:,.0f} chunks/s")
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        from archive.services.search import CANDIDATE_LIMIT

        print(f"search ({args.queries} queries, limit 10, at most {CANDIDATE_LIMIT:,} candidates ranked):")
        measure(args.queries, words, args.seed)
    finally:
        in_process_bench_close(server_url, drop, data_dir)


if __name__ == "__main__":
    main()
