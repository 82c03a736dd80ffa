"""Peak resident memory of reading a ChatGPT export: a zip bomb, an implausible ratio, a large real-shaped export;
and (`--http`) of a real Daphne server sent 300 MiB bodies it must refuse.

Each case runs in a fresh process (its VmHWM is that process's peak), which reads
the upload the way the import does (`export_files` + `parse_conversations`, one conversation at a time)
and prints its peak resident memory above the same process's idle peak.

`--http`: for each case a fresh Daphne (owner protection on, SQLite in a scratch directory) serving
`elion.asgi` (bounds on) and, side by side, `bench.stock_asgi` (Django's handler as Daphne runs it
without them), is sent 300 MiB: a multipart upload with no credentials, the same with the API token
(over the 10 MiB attachment limit), a form post to /login/. Printed: the answer, the server's peak
RSS growth (VmHWM minus the idle VmRSS) and what it still holds after the next request (VmRSS).

    .venv/bin/python -m bench.upload_memory
    .venv/bin/python -m bench.upload_memory --http
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

    from archive.services.importers import export_reader
    from archive.services.importers.chatgpt import parse as chatgpt
    from elion.base.errors import ServiceError

    idle = _peak_kib()
    limits = export_reader.ExportLimits(
        max_json_bytes=settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES, max_members=settings.ELION_ARCHIVE_IMPORT_MAX_MEMBERS
    )
    started = time.perf_counter()
    with open(path, "rb") as upload:
        try:
            if way == "stream":
                with export_reader.export_files(upload, limits, path) as files:
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


HTTP_BODY_MIB = 300
HTTP_CASES = {
    # name: (path, content type, headers)
    "no_credentials": ("/api/attachments/", "multipart/form-data; boundary=b", {}),
    "token_over_limit": ("/api/attachments/", "multipart/form-data; boundary=b", {"Authorization": "Bearer bench"}),
    "login_form": ("/login/", "application/x-www-form-urlencoded", {}),
}
SERVERS = ("bounded", "stock")
APPS = {"bounded": "elion.asgi:application", "stock": "bench.stock_asgi:application"}


def _proc_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _body(content_type: str):
    """300 MiB: a multipart file part, or a form field, one MiB at a time."""
    if content_type.startswith("multipart"):
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'
    else:
        yield b"password="
    for _ in range(HTTP_BODY_MIB):
        yield b"a" * (1024 * 1024)
    if content_type.startswith("multipart"):
        yield b"\r\n--b--\r\n"


def _body_length(content_type: str) -> int:
    return sum(len(piece) for piece in _body(content_type))


def http_case(server: str, case: str, data_dir: str) -> dict:
    import httpx

    from tests.support.live_server import free_port

    port = free_port()
    env = {**os.environ, "ELION_DATA_DIR": data_dir, "ELION_OWNER_PASSWORD": "bench password",
           "ELION_API_TOKEN": "bench", "DJANGO_SETTINGS_MODULE": "elion.settings", "ELION_LOG_LEVEL": "WARNING"}
    env.pop("DATABASE_URL", None)
    process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), APPS[server]],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=600) as client:
            for _ in range(300):
                try:
                    client.get(f"{base}/api/health/")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            idle = _proc_kib(process.pid, "VmRSS")
            path, content_type, headers = HTTP_CASES[case]
            started = time.perf_counter()
            try:
                response = client.post(f"{base}{path}", content=_body(content_type), headers={
                    **headers, "Content-Type": content_type, "Content-Length": str(_body_length(content_type))})
                answer = f"{response.status_code} {response.headers.get('content-type', '-')}"
            except httpx.TransportError as exc:
                answer = f"connection: {type(exc).__name__}"
            seconds = time.perf_counter() - started
            peak = _proc_kib(process.pid, "VmHWM")
            client.get(f"{base}/api/health/")
            after = _proc_kib(process.pid, "VmRSS")
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {"answer": answer, "peak_growth_mb": round((peak - idle) / 1024, 1),
            "held_after_mb": round((after - idle) / 1024, 1), "seconds": round(seconds, 2)}


def http_main() -> None:
    import tempfile

    print(f"{'case':18} {'server':>8} {'peak RSS growth':>16} {'held after':>11} {'seconds':>8}  answer")
    for case in HTTP_CASES:
        growth = {}
        for server in SERVERS:
            with tempfile.TemporaryDirectory(prefix="elion-bench-") as data_dir:
                subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, check=True,
                               env={**os.environ, "ELION_DATA_DIR": data_dir, "DATABASE_URL": ""})
                row = http_case(server, case, data_dir)
            growth[server] = row["peak_growth_mb"]
            print(f"{case:18} {server:>8} {row['peak_growth_mb']:>13} MB {row['held_after_mb']:>8} MB "
                  f"{row['seconds']:>8}  {row['answer']}")
        ratio = growth["stock"] / max(growth["bounded"], 0.1)
        print(f"{'':18} {'ratio':>8} stock/bounded peak growth: {ratio:,.0f}x")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if sys.argv[1:] == ["--http"]:
        http_main()
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
