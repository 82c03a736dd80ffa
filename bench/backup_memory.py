"""Peak resident memory of a full backup of a big instance: streamed, beside the whole zip held in memory.

Builds an instance (SQLite in a fresh data dir, or --database-url) with many
conversations of long messages and megabyte attachment blobs, then, each in a
fresh process (its VmHWM is that process's peak), measures above the same
process's idle peak:

- `stream`: `backup_chunks()` written to a file chunk by chunk (what
  `manage.py backup` and `GET /api/backup/` do);
- `whole`: the same chunks gathered into one bytes object first (what serving
  a synchronous iterator under ASGI, or building the zip in a BytesIO, costs);
- `restore`: `manage.py restore` of the streamed zip into a fresh database
  and data dir.

    .venv/bin/python -m bench.backup_memory [--conversations 200 --messages 400 --blobs 40]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def populate(conversations: int, messages: int, blobs: int) -> None:
    from django.db import transaction

    from transcript.attachments import store
    from transcript.models import Conversation, Message

    rng = os.urandom
    for index in range(conversations):
        with transaction.atomic():
            conversation = Conversation.objects.create(title=f"Conversation {index}")
            rows, parent = [], None
            for seq in range(1, messages + 1):
                row = Message(
                    id=uuid.uuid4(), conversation=conversation, parent_id=parent, seq=seq,
                    role="user" if seq % 2 else "assistant", content=rng(500).hex(),
                )
                rows.append(row)
                parent = row.id
            Message.objects.bulk_create(rows, batch_size=500)
            Conversation.objects.filter(pk=conversation.pk).update(head_id=parent, last_seq=messages)
            if index < blobs:
                data = rng(1 << 20)
                store.write_bytes(store.conversation_store(conversation.pk), data, hashlib.sha256(data).hexdigest())


def child(way: str, path: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from operations.backup.writing import backup_chunks

    idle = _peak_kib()
    started = time.perf_counter()
    if way == "stream":
        with open(path, "wb") as out:
            for chunk in backup_chunks():
                out.write(chunk)
    elif way == "whole":
        data = b"".join(list(backup_chunks()))
        Path(path).write_bytes(data)
        del data
    else:
        with open(os.devnull, "w") as quiet:
            call_command("restore", path, stdout=quiet)
    print(json.dumps({"peak_above_idle_mb": round((_peak_kib() - idle) / 1024, 1),
                      "seconds": round(time.perf_counter() - started, 2)}))


def _run(way: str, path: Path, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.backup_memory", "--child", way, str(path)],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--blobs", type=int, default=40, help="conversations holding one 1 MiB blob each")
    parser.add_argument("--database-url", default=None, help="PostgreSQL URL of an empty database (default SQLite)")
    args = parser.parse_args()

    from bench.common import setup_django

    work = Path(tempfile.mkdtemp(prefix="elion-bench-backup-"))
    source = work / "source"
    source.mkdir()
    setup_django(source, args.database_url)
    populate(args.conversations, args.messages, args.blobs)
    env = {k: v for k, v in os.environ.items() if k not in ("ELION_ATTACHMENT_ROOT", "ELION_SQLITE_PATH")}
    stream, whole = work / "stream.zip", work / "whole.zip"
    results = {"stream": _run("stream", stream, env), "whole": _run("whole", whole, env)}

    target = work / "restored"
    target.mkdir()
    restore_env = {**{k: v for k, v in env.items() if k != "DATABASE_URL"}, "ELION_DATA_DIR": str(target)}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=restore_env, check=True)
    results["restore"] = _run("restore", stream, restore_env)

    rows = args.conversations * (args.messages + 1)
    print(f"instance: {args.conversations} conversations x {args.messages} messages (~1 kB each), "
          f"{args.blobs} blobs of 1 MiB; zip {stream.stat().st_size / 1e6:.1f} MB, about {rows:,} rows")
    print(f"{'way':8} {'peak above idle':>16} {'seconds':>8}")
    for way, figures in results.items():
        print(f"{way:8} {figures['peak_above_idle_mb']:>13.1f} MB {figures['seconds']:>8.2f}")
    ratio = results["whole"]["peak_above_idle_mb"] / max(results["stream"]["peak_above_idle_mb"], 0.1)
    print(f"whole / stream peak: {ratio:.1f}x")


if __name__ == "__main__":
    main()
