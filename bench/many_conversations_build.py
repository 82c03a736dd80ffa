"""The states `bench/many_conversations.py` measures: 100 / 1,000 / 10,000 conversations, 50 memories.

Built once per size, in a child process running this file in the tree under test (`--build`, with that
tree first on the path), and kept in a cache directory between runs: SQLite's file as it is, PostgreSQL's
database (built in a fresh database on the given server, then dropped) as a `pg_dump -Fc` (`elion.dump`),
restored per run (`bench/many_conversations.py`).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

MEMORIES = 50
MESSAGES = 6  # per conversation: three user/assistant pairs
HELD_BY_ALL = 0.9  # the share of snapshots holding every memory (the others hold 40 of them)


def build(size: int, data_dir: Path, seed: int, messages_each: int = MESSAGES, database_url: str | None = None
          ) -> None:
    """The state for `size` conversations, in `data_dir` (SQLite) or the database `database_url` names (run in
    the tree under test: `--build`)."""
    from bench.common import setup_django, synthetic_vocabulary, zipf_weights

    setup_django(data_dir, database_url)
    from django.db import connection, transaction

    from continuity.models import ThreadHandoff
    from continuity.rules.prompt_store import prompt_inputs_many, prompt_metadata, static_prompt_built
    from elion.base.assistant_settings import assistant_settings_get
    from memories.models import ConversationMemorySnapshot, SnapshotMembership
    from memories.services.memory_writes import memory_add
    from transcript.models import Conversation, Folder, Message, MessageKind, Role
    from transcript.models.messages import branch_columns_under
    from transcript.search_index import message_search_index_sync

    rng = random.Random(seed)
    words = synthetic_vocabulary(rng, 3_000)
    weights = zipf_weights(len(words))

    def text(count: int) -> str:
        return " ".join(rng.choices(words, weights, k=count))

    memories = [memory_add(text=f"Memory {i}: " + text(rng.randint(20, 40))).pk for i in range(MEMORIES)]
    folder = Folder.objects.create(name="Old chats")
    with transaction.atomic():
        conversations = Conversation.objects.bulk_create(
            [
                Conversation(title=text(3).title(), last_seq=messages_each + 1, folder=folder if i % 10 == 5 else None)
                for i in range(size)
            ],
            batch_size=2_000,
        )
        messages, heads = [], {}
        for conversation in conversations:
            parent = None
            for seq in range(2, messages_each + 2):
                # With its branch columns, as the app's append writes them (a bulk insert skips the append).
                role, content = Role.USER if seq % 2 == 0 else Role.ASSISTANT, text(rng.randint(15, 60))
                parent = Message(conversation=conversation, seq=seq, parent=parent, role=role, content=content,
                                 **branch_columns_under(parent, role=role, content=content))
                messages.append(parent)
            heads[conversation.pk] = parent
        Message.objects.bulk_create(messages, batch_size=2_000)
        for conversation in conversations:
            conversation.head = heads[conversation.pk]
        Conversation.objects.bulk_update(conversations, ["head"], batch_size=2_000)
        ConversationMemorySnapshot.objects.bulk_create(
            [ConversationMemorySnapshot(conversation=c, provenance="captured") for c in conversations], batch_size=2_000
        )
        SnapshotMembership.objects.bulk_create(
            [
                SnapshotMembership(conversation=c, memory_id=m)
                for c in conversations
                for m in (memories if rng.random() < HELD_BY_ALL else rng.sample(memories, 40))
            ],
            batch_size=5_000,
        )
        # Every chat after the first began as a New Chat from the one before it.
        by_conversation: dict = {}
        for message in messages:
            by_conversation.setdefault(message.conversation_id, []).append(str(message.pk))
        # What a capture records: the final eight (all of a six-message thread).
        by_conversation = {pk: ids[-8:] for pk, ids in by_conversation.items()}
        ThreadHandoff.objects.bulk_create(
            [
                ThreadHandoff(destination=c, source=prior, source_message_ids=by_conversation[prior.pk],
                              handoff="AUMA said:\n" + text(20))
                for prior, c in zip(conversations, conversations[1:], strict=False)
            ],
            batch_size=2_000,
        )
    settings_row = assistant_settings_get()
    for start in range(0, size, 1_000):
        part = conversations[start : start + 1_000]
        with transaction.atomic():
            inputs = prompt_inputs_many(part, settings_row=settings_row)
            prompts = []
            for conversation in part:
                built = static_prompt_built(inputs[conversation.pk])
                prompts.append(Message(
                    conversation=conversation, seq=1, role=Role.SYSTEM, kind=MessageKind.STATIC_PROMPT,
                    content=built.text, metadata=prompt_metadata(built),
                ))
            Message.objects.bulk_create(prompts, batch_size=1_000)
    while message_search_index_sync():  # both databases: PostgreSQL's vector is generated from search_text
        pass
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    connection.close()


def state_dir(cache: Path, root: Path, size: int, seed: int, messages_each: int = MESSAGES, *,
              server_url: str | None = None) -> Path:
    """The built state for `size` under the tree `root` (built once, by a child process in that tree): the data
    dir, with SQLite's `elion.sqlite3`, or with `server_url` (a PostgreSQL server) PostgreSQL's `elion.dump`."""
    name = f"{root.name}-{size}" if messages_each == MESSAGES else f"{root.name}-{size}x{messages_each}"
    if server_url is None:
        target = cache / name
        if (target / "elion.sqlite3").exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        _built(target, None, root, size, seed, messages_each)
        return target
    from bench.servers import pg_create_database, pg_drop_database, pg_dump_file

    target = cache / f"postgres-{name}"
    if (target / "elion.dump").exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    database_url, created = pg_create_database(server_url)
    if created is None:
        raise SystemExit("building a PostgreSQL state needs a fresh database; the server refused to create one")
    try:
        _built(partial, database_url, root, size, seed, messages_each)
        pg_dump_file(database_url, partial / "elion.dump")
    finally:
        pg_drop_database(server_url, created)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def _built(data_dir: Path, database_url: str | None, root: Path, size: int, seed: int, messages_each: int) -> None:
    """Run the builder in a child process in the tree `root`."""
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ELION_SQLITE_PATH", "ELION_TESTING")}
    command = [sys.executable, str(Path(__file__).resolve()), "--build", str(size), "--data-dir", str(data_dir),
               "--root", str(root), "--seed", str(seed), "--messages", str(messages_each)]
    if database_url:
        command += ["--database-url", database_url]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"building {size} conversations failed:\n{done.stderr[-4000:]}")
    print(f"  built {size:,} conversations in {time.perf_counter() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=int, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--messages", type=int, default=MESSAGES)
    parser.add_argument("--database-url", default=None, help="build in this PostgreSQL database (default SQLite)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root))
    build(args.build, args.data_dir, args.seed, args.messages, args.database_url)


if __name__ == "__main__":
    main()
