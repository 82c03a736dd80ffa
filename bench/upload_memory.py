"""Peak resident memory of reading a ChatGPT export: a zip bomb, an implausible ratio, a large real-shaped export.

Each case runs in a fresh process (its VmHWM is that process's peak), which reads
the upload the way the import does (`export_files` + `parse_conversations`, one conversation at a time)
and prints its peak resident memory above the same process's idle peak.

    .venv/bin/python -m bench.upload_memory
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("zip_of_braces", "json_of_braces", "implausible_ratio", "large_export")
WAYS = ("stream", "whole")  # this code; the earlier way (read every byte, then json.loads), for comparison


def _zip(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


def _conversation(index: int, messages: int) -> dict:
    mapping, parent = {}, None
    for turn in range(messages):
        node = f"c{index}-m{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        mapping[node] = {
            "id": node, "parent": parent, "children": [],
            "message": {
                "author": {"role": role}, "create_time": 1_700_000_000 + turn, "recipient": "all",
                "content": {"content_type": "text", "parts": [f"Turn {turn} of conversation {index}. " * 12]},
            },
        }
        if parent:
            mapping[parent]["children"].append(node)
        parent = node
    return {"id": f"conv-{index}", "title": f"Conversation {index}", "create_time": 1_700_000_000,
            "mapping": mapping, "current_node": parent}


def upload_for(case: str) -> tuple[bytes, str]:
    if case == "zip_of_braces":
        return _zip("conversations.json", b"[" + b"{}," * 10_000_000 + b"{}]"), "export.zip"
    if case == "json_of_braces":
        return b"[" + b"{}," * 10_000_000 + b"{}]", "conversations.json"
    if case == "implausible_ratio":
        return _zip("conversations.json", b'[{"title": "' + b"a" * 300_000_000 + b'"}]'), "export.zip"
    data = json.dumps([_conversation(i, 40) for i in range(2_000)]).encode()
    return _zip("conversations.json", data), "export.zip"


def _peak_kib() -> int:
    """This process's peak resident memory (VmHWM, KiB). Not ru_maxrss: that one carries over the
    parent's peak through fork and exec, and the parent has just built a large payload."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(case: str, way: str, path: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
    import django

    django.setup()
    from django.conf import settings

    from archive import chatgpt
    from elion.errors import ServiceError

    idle = _peak_kib()
    limits = chatgpt.ExportLimits(
        max_json_bytes=settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES, max_members=settings.ELION_ARCHIVE_IMPORT_MAX_MEMBERS
    )
    started = time.perf_counter()
    with open(path, "rb") as upload:
        try:
            if way == "stream":
                with chatgpt.export_files(upload, limits, path) as files:
                    count = 0
                    for name in files.json_names:
                        with files.open_json(name) as stream:
                            count += sum(1 for _ in chatgpt.parse_conversations(stream, file=name))
                    outcome = f"accepted: {count:,} conversations"
            else:
                is_zip = zipfile.is_zipfile(upload)
                upload.seek(0)
                data = zipfile.ZipFile(upload).read("conversations.json") if is_zip else upload.read()
                outcome = f"parsed: {len(json.loads(data)):,} items"
        except ServiceError as exc:
            outcome = f"refused: {exc.code}"
    peak = _peak_kib()
    print(json.dumps({"outcome": outcome, "peak_above_idle_mb": round((peak - idle) / 1024, 1),
                      "seconds": round(time.perf_counter() - started, 2)}))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    import tempfile

    print(f"{'case':18} {'upload bytes':>12} {'way':>6} {'peak above idle':>16} {'seconds':>8}  outcome")
    env = {**os.environ, "ELION_DATA_DIR": os.environ.get("ELION_DATA_DIR", tempfile.mkdtemp(prefix="elion-bench-"))}
    for case in CASES:
        payload, _name = upload_for(case)
        with tempfile.NamedTemporaryFile(suffix=".upload") as file:
            file.write(payload)
            file.flush()
            peaks = {}
            for way in WAYS:
                out = subprocess.run(
                    [sys.executable, "-m", "bench.upload_memory", "--child", case, way, file.name],
                    cwd=ROOT, env=env, capture_output=True, text=True, check=True,
                ).stdout.strip().splitlines()[-1]
                row = json.loads(out)
                peaks[way] = row["peak_above_idle_mb"]
                print(f"{case:18} {len(payload):>12,} {way:>6} {row['peak_above_idle_mb']:>13} MB {row['seconds']:>8}  {row['outcome']}")
            # A peak below 0.1 MB is shown as 0.1 so the ratio stays finite.
            ratio = peaks["whole"] / max(peaks["stream"], 0.1)
            print(f"{'':18} {'':>12} {'ratio':>6} whole/stream peak: {ratio:,.0f}x")


if __name__ == "__main__":
    main()
