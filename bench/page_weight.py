"""How heavy is the chat page on a cold cache, and how fast is an older batch? (issue 34, "Light pages")

Two app trees side by side in one run — this tree and `--baseline DIR` (e.g. `git archive a5a0298 | tar -x -C DIR`)
— each with its own SQLite data dir, filled by its own code (`bench/long_thread_build.py`, run by path: a
2-message thread and a `--long`-message thread), its static files collected as its `make run` does
(`manage.py collectstatic`), served by its own Daphne (no DEBUG, no ELION_TESTING: as `make run` serves).
Debian's chromium (Playwright) opens each chat page in a fresh browser context (a cold cache), the trees
alternating every round, and records:

  bytes     everything transferred for the page until the network is idle (headers + encoded bodies,
            as `request.sizes()` reports them), and the request count;
  load      the navigation's `loadEventEnd` (ms after the navigation started);
  older 50  in the long thread's page, the request "Load earlier messages" makes
            (`/c/<id>/window/?before=<first shown>&limit=50`), timed in the page (fetch until the body is read).

Medians over `--rounds` rounds after one warm-up round. Targets: short thread ≤ 150 KB, long ≤ 250 KB,
load ≤ 1,000 ms, older 50 ≤ 300 ms.

    .venv/bin/python -m bench.page_weight --baseline /tmp/elion-a5a0298 [--rounds 5] [--long 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.long_thread import build  # noqa: E402 - after the path fix above
from bench.servers import ROOT, BenchError, app_env, collect_static, start_daphne, stop_process  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
# No provider is called: the page loads only need the configured provider's binding on the rows.
NO_PROVIDER = "http://127.0.0.1:9/v1"
TARGETS = {"short bytes": 150_000, "long bytes": 250_000, "load": 1000.0, "older": 300.0}
WINDOW_FETCH = """async () => {
  const root = document.querySelector('[data-chat]');
  const first = root.querySelector('.message[data-message-id]');
  const started = performance.now();
  const response = await fetch(`/c/${root.dataset.conversationId}/window/?before=${first.dataset.messageId}&limit=50`,
                               { credentials: 'same-origin', cache: 'no-store' });
  const body = await response.text();
  return { ms: performance.now() - started, status: response.status, bytes: body.length };
}"""


def prepare_tree(name: str, root: Path, tmp: Path, long_length: int) -> tuple[subprocess.Popen, str, dict]:
    """Build a tree's database, collect its static files, start its Daphne: (process, url, threads by label)."""
    data_dir = tmp / name / "data"
    data_dir.mkdir(parents=True)
    env = app_env(data_dir, None, NO_PROVIDER)
    env.pop("ELION_TESTING", None)
    env.pop("DJANGO_DEBUG", None)
    spec = {"seed": 34, "cases": [{"label": "short", "length": 2}, {"label": "long", "length": long_length}]}
    print(f"{name}: building the threads ({root}) …", flush=True)
    built = build(root, env, spec, tmp / f"build-{name}.log")
    print(f"{name}: collectstatic …", flush=True)
    collect_static(root, env)
    process, url = start_daphne(tmp, env, False, log_name=f"daphne-{name}.log", root=root)
    return process, url, {thread["label"]: thread for thread in built["threads"]}


def cold_load(browser, url: str) -> dict:
    """One chat page in a fresh context: bytes and requests until the network is idle, the load event."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    finished = []
    page.on("requestfinished", lambda request: finished.append(request))
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    load = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
    transferred = 0
    for request in finished:
        sizes = request.sizes()
        transferred += sizes["responseBodySize"] + sizes["responseHeadersSize"]
    encodings = sorted({(r.response().headers.get("content-encoding") or "none") for r in finished if r.response()})
    return {"page": page, "context": context, "bytes": transferred, "requests": len(finished), "load": load,
            "encodings": encodings}


def measure(browser, urls: dict[str, str], threads: dict[str, dict], rounds: int) -> dict:
    trees = list(urls)
    samples = {tree: {key: [] for key in ("short bytes", "short requests", "short load", "long bytes",
                                          "long requests", "long load", "older")} for tree in trees}
    encodings = {tree: set() for tree in trees}
    for round_no in range(1 + rounds):
        order = trees if round_no % 2 == 0 else trees[::-1]
        for tree in order:
            for label in ("short", "long"):
                result = cold_load(browser, f"{urls[tree]}/c/{threads[tree][label]['conversation_id']}/")
                try:
                    if round_no:
                        samples[tree][f"{label} bytes"].append(result["bytes"])
                        samples[tree][f"{label} requests"].append(result["requests"])
                        samples[tree][f"{label} load"].append(result["load"])
                        encodings[tree].update(result["encodings"])
                    if label == "long":
                        for _ in range(3):
                            fetched = result["page"].evaluate(WINDOW_FETCH)
                            if fetched["status"] != 200:
                                raise BenchError(f"{tree}: the older batch answered {fetched['status']}")
                            if round_no:
                                samples[tree]["older"].append(fetched["ms"])
                finally:
                    result["context"].close()
        print(f"  round {round_no}/{rounds} done" + (" (warm-up)" if not round_no else ""), flush=True)
    return {tree: {key: statistics.median(values) for key, values in by_key.items()} for tree, by_key in
            samples.items()} | {"encodings": {tree: sorted(found) for tree, found in encodings.items()}}


def report(figures: dict, trees: list[str], args) -> list[str]:
    base, this = trees
    rows = [
        ("short thread: transferred", "short bytes", "KB", TARGETS["short bytes"]),
        ("short thread: requests", "short requests", "", None),
        ("short thread: load event", "short load", "ms", TARGETS["load"]),
        (f"{args.long:,}-message thread: transferred", "long bytes", "KB", TARGETS["long bytes"]),
        (f"{args.long:,}-message thread: requests", "long requests", "", None),
        (f"{args.long:,}-message thread: load event", "long load", "ms", TARGETS["load"]),
        ("older batch of 50 (window fetch)", "older", "ms", TARGETS["older"]),
    ]

    def cell(value: float, unit: str) -> str:
        if unit == "KB":
            return f"{value / 1000:,.1f} KB"
        if unit == "ms":
            return f"{value:,.0f} ms"
        return f"{value:,.0f}"

    lines = [f"| measure (median of {args.rounds}) | {base} | {this} | this ÷ base | target | met |",
             "|---|---|---|---|---|---|"]
    for title, key, unit, target in rows:
        a, b = figures[base][key], figures[this][key]
        ratio = f"{b / a:.2f}×" if a else "—"
        goal = "—" if target is None else (cell(target, unit).replace(".0 KB", " KB"))
        met = "—" if target is None else ("yes" if b <= target else "**no**")
        lines.append(f"| {title} | {cell(a, unit)} | {cell(b, unit)} | {ratio} | ≤ {goal} | {met} |"
                     if target is not None else f"| {title} | {cell(a, unit)} | {cell(b, unit)} | {ratio} | — | — |")
    lines.append("")
    lines.append("Content-Encoding seen: " + "; ".join(
        f"{tree}: {', '.join(figures['encodings'][tree])}" for tree in trees))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, type=Path, help="another app tree (git archive of a commit)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--long", type=int, default=3000, help="messages in the long thread (even)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    trees = {f"baseline ({args.baseline.name})": args.baseline.resolve(), "this tree": ROOT}
    processes = []
    with tempfile.TemporaryDirectory(prefix="elion-page-weight-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            urls, threads = {}, {}
            for index, (tree, root) in enumerate(trees.items()):
                process, urls[tree], threads[tree] = prepare_tree(f"tree{index}", root, tmp, args.long)
                processes.append(process)
            load_before = os.getloadavg()[0]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    figures = measure(browser, urls, threads, args.rounds)
                finally:
                    browser.close()
        finally:
            for process in processes:
                stop_process(process)
    lines = report(figures, list(trees), args)
    lines.append(f"Load average {load_before:.2f} → {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))
    print("RESULT " + json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
