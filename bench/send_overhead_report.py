"""`bench/send_overhead.py --profile`: where the app's time goes, stage by stage, from the server-side hooks'
traces (`bench/send_hooks.py`) joined to the client's samples on one clock."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench.servers import ms, percentile

STAGES = (
    ("client → ASGI app", "client_start", "asgi_in"),
    ("ASGI → request_started receivers ran", "asgi_in", "request_started"),
    ("request_started → OwnerAccessMiddleware", "request_started", "owner_middleware"),
    ("OwnerAccessMiddleware → SendView.post", "owner_middleware", "view_start"),
    ("SendView.post → send_prepare (csrf, lookup, parse)", "view_start", "prepare_start"),
    ("send_prepare body", "prepare_start", "prepare_body_end"),
    ("send_prepare COMMIT", "prepare_body_end", "prepare_end"),
    ("prepared → stream_reply called (hop back, task start)", "prepare_end", "stream_call"),
    ("stream_reply → first provider delta (SDK + provider)", "stream_call", "provider_first_delta"),
    ("provider delta → emit", "provider_first_delta", "emit_first_delta"),
    ("emit → client has the delta (queue, SSE, Daphne)", "emit_first_delta", "client_first"),
)


def profile_report(samples: list[dict], sdk_samples: list[dict], trace_file: Path) -> list[str]:
    traces = {}
    if trace_file.exists():
        for line in trace_file.read_text().splitlines():
            trace = json.loads(line)
            traces[trace["conversation"]] = trace
    rows = []
    joined = []
    for sample in samples:
        trace = traces.get(sample["conversation"])
        if trace:
            joined.append({**trace, "client_start": sample["start"], "client_first": sample["first"]})
    if not joined:
        return ["(no server traces)"]
    rows.append(f"server traces joined: {len(joined)}")
    rows.append(f"{'stage':60} {'median ms':>10} {'p95 ms':>8}")
    for label, a, b in STAGES:
        deltas = [t[b] - t[a] for t in joined if a in t and b in t]
        if deltas:
            rows.append(f"{label:60} {ms(statistics.median(deltas)):>10} {ms(percentile(deltas, 95)):>8}")
    cpu = [t["cpu_to_first_delta"] for t in joined if "cpu_to_first_delta" in t]
    sdk_cpu = [s["cpu"] for s in sdk_samples]
    if cpu and sdk_cpu:
        rows.append(
            f"CPU, less disturbed by other load: Daphne process from request arrival to first delta "
            f"{ms(statistics.median(cpu))} ms median; bench process for B (SDK request → first delta) "
            f"{ms(statistics.median(sdk_cpu))} ms; difference {ms(statistics.median(cpu) - statistics.median(sdk_cpu))} ms"
        )
    sub = sorted({k for t in joined for k in t if k.startswith(("prepare.", "db.", "middleware.", "client_lookup"))})
    rows.append("accumulated per send (inclusive wall time; nested stages overlap; db.statements is a count):")
    for key in sub:
        values = [t.get(key, 0.0) for t in joined]
        if key.startswith("db.statements"):
            rows.append(f"  {key:58} {statistics.median(values):>10.0f} {percentile(values, 95):>8.0f}")
        else:
            rows.append(f"  {key:58} {ms(statistics.median(values)):>10} {ms(percentile(values, 95)):>8}")
    return rows
