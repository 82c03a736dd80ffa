"""What rendering a streaming reply as Markdown costs the browser, per delta, beside a plain-text update.

The chat page renders the reply so far on each animation frame (static/js/chat/markdown.js:
markdown-it, DOMPurify, highlight.js, keeping the leading blocks that did not change). This bench
streams one long Markdown reply (about 20 KB: prose, lists, tables and fenced code in three languages)
into a bubble in Debian's chromium, delta by delta, and times in the same page, side by side:

* plain: what the page did before, appending the delta as a text node;
* markdown: rendering the whole text so far into the bubble as the live bubble does (`renderInto`
  with its kept blocks), the work of one animation frame when one delta arrived in it;
* markdown, no reuse: the same with nothing kept between renders (every block rebuilt and
  re-decorated each time; highlighting still cached), to show what keeping blocks buys.

Each timing includes the forced layout of the bubble, the browser's own share of a frame. Ratios are
printed against the plain update and against the time between deltas of a fast model (100 deltas/s,
10 ms) and a frame (16.7 ms at 60 Hz): rendering is done at most once a frame, so a ratio below 1
against the frame means the page keeps up however fast the deltas come.

No server is involved: the page and the static files are served to chromium from disk (`page.route`).

    .venv/bin/python -m bench.markdown_stream [--kilobytes 20] [--delta-chars 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import mimetypes
import random
import statistics
from pathlib import Path

from playwright.sync_api import Route, sync_playwright

from tests.conftest import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
ORIGIN = "http://bench.elion.invalid"
CHROMIUM = "/usr/bin/chromium"
FRAME_MS = 1000 / 60
FAST_DELTA_MS = 10.0

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/static/css/elion.css"><link rel="stylesheet" href="/static/css/markdown.css">
<link rel="stylesheet" href="/static/vendor/highlight.js/a11y-light.min.css"></head>
<body><main><div class="messages" data-messages>
<article class="message message-assistant"><div class="message-body plain" data-plain></div></article>
<article class="message message-assistant"><div class="message-body plain" data-live></div></article>
<article class="message message-assistant"><div class="message-body plain" data-fresh></div></article>
</div></main></body></html>"""

MEASURE = """async ([deltas, rounds]) => {
  const { newRendering, renderInto } = await import("/static/js/chat/markdown.js");
  const plainBody = document.querySelector("[data-plain]");
  const liveBody = document.querySelector("[data-live]");
  const freshBody = document.querySelector("[data-fresh]");
  const times = { plain: [], markdown: [], fresh: [] };
  for (let round = 0; round < rounds; round += 1) {
    plainBody.replaceChildren();
    liveBody.replaceChildren();
    liveBody.className = "message-body plain";
    freshBody.replaceChildren();
    const state = newRendering();
    let source = "";
    for (const delta of deltas) {
      source += delta;
      let t = performance.now();
      plainBody.append(document.createTextNode(delta));
      void plainBody.offsetHeight;
      times.plain.push(performance.now() - t);

      t = performance.now();
      renderInto(liveBody, source, state);
      void liveBody.offsetHeight;
      times.markdown.push(performance.now() - t);

      t = performance.now();
      renderInto(freshBody, source, newRendering());
      void freshBody.offsetHeight;
      times.fresh.push(performance.now() - t);
    }
  }
  const same = liveBody.innerHTML === freshBody.innerHTML;
  return { times, same, codeBlocks: liveBody.querySelectorAll("pre > code.hljs").length,
           tables: liveBody.querySelectorAll("table").length };
}"""


def long_reply(kilobytes: int, seed: int = 7) -> str:
    """Markdown of about `kilobytes` KB, shaped like a long technical reply."""
    rng = random.Random(seed)
    words = ["stream", "render", "token", "bubble", "frame", "layout", "parser", "cache", "reply", "delta",
             "model", "block", "table", "fence", "markdown", "browser", "thread", "memory", "owner", "page"]

    def sentence() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(8, 16))).capitalize() + "."

    code = {
        "python": "def window(rows, size):\n    for start in range(0, len(rows), size):\n"
                  "        yield rows[start:start + size]  # a slice per page\n\n"
                  "class Cache(dict):\n    def __missing__(self, key):\n        return None\n",
        "javascript": "export function throttle(fn) {\n  let frame = 0;\n  return (...args) => {\n"
                      "    if (!frame) frame = requestAnimationFrame(() => { frame = 0; fn(...args); });\n  };\n}\n",
        "sql": "SELECT id, role, content\n  FROM conversations_message\n WHERE conversation_id = ?\n"
               " ORDER BY seq DESC\n LIMIT 50;\n",
    }
    parts: list[str] = []
    section = 0
    while sum(len(p) for p in parts) < kilobytes * 1000:
        section += 1
        parts.append(f"## Part {section}: {rng.choice(words)} and {rng.choice(words)}\n\n")
        parts.append(" ".join(sentence() for _ in range(4)) + " Some **bold**, *emphasis* and `inline code`.\n\n")
        parts.append("".join(f"- {sentence()}\n" for _ in range(3)) + "\n")
        language = rng.choice(list(code))
        parts.append(f"```{language}\n{code[language]}```\n\n")
        parts.append("| step | owner | status |\n|:-----|:-----:|-------:|\n")
        parts.append("".join(f"| {rng.choice(words)} | {rng.choice(words)} | {rng.randint(1, 99)}% |\n"
                             for _ in range(4)) + "\n")
        parts.append(f"> {sentence()}\n\n")
    return "".join(parts)


def deltas_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def serve_from_disk(route: Route) -> None:
    path = route.request.url.removeprefix(ORIGIN).split("?", 1)[0]
    if path == "/":
        route.fulfill(status=200, content_type="text/html", body=PAGE)
        return
    file = (ROOT / path.lstrip("/")).resolve()
    if not path.startswith("/static/") or ROOT / "static" not in file.parents or not file.is_file():
        route.fulfill(status=404, body="")
        return
    content_type = "text/javascript" if file.suffix == ".js" else (mimetypes.guess_type(file.name)[0] or "text/plain")
    route.fulfill(status=200, content_type=content_type, body=file.read_bytes())


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p95": ordered[int(0.95 * (len(ordered) - 1))],
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kilobytes", type=int, default=20)
    parser.add_argument("--delta-chars", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    text = long_reply(args.kilobytes)
    deltas = deltas_of(text, args.delta_chars)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.route(f"{ORIGIN}/**", serve_from_disk)
        page.goto(f"{ORIGIN}/")
        result = page.evaluate(MEASURE, [deltas, args.rounds])
        browser.close()

    tail = max(1, len(deltas) // 10)
    print(f"reply: {len(text):,} characters of Markdown in {len(deltas):,} deltas of {args.delta_chars} characters, "
          f"{result['codeBlocks']} highlighted code blocks, {result['tables']} tables; {args.rounds} rounds")
    print(f"kept-block and rebuilt renderings identical: {result['same']}")
    rows = {"plain text node": "plain", "markdown (live)": "markdown", "markdown, no reuse": "fresh"}
    stats = {}
    print(f"{'per delta, ms':<22}{'median':>9}{'p95':>9}{'max':>9}{'mean':>9}{'last 10%':>10}")
    for label, key in rows.items():
        times = result["times"][key]
        # The last tenth of each round: the reply at its longest (18-20 KB rendered each time).
        last = [t for r in range(args.rounds) for t in times[r * len(deltas):(r + 1) * len(deltas)][-tail:]]
        stats[key] = summary(times) | {"last": statistics.median(last)}
        s = stats[key]
        print(f"{label:<22}{s['median']:>9.3f}{s['p95']:>9.3f}{s['max']:>9.3f}{s['mean']:>9.3f}{s['last']:>10.3f}")
    live, plain, fresh = stats["markdown"], stats["plain"], stats["fresh"]
    print("ratios (median / p95 / last 10% median):")
    print(f"  markdown / plain text       {live['median'] / plain['median']:.1f}x / "
          f"{live['p95'] / plain['p95']:.1f}x / {live['last'] / plain['last']:.1f}x")
    print(f"  markdown / 10 ms between deltas  {live['median'] / FAST_DELTA_MS:.3f} / "
          f"{live['p95'] / FAST_DELTA_MS:.3f} / {live['last'] / FAST_DELTA_MS:.3f}")
    print(f"  markdown / 16.7 ms frame    {live['median'] / FRAME_MS:.3f} / {live['p95'] / FRAME_MS:.3f} / "
          f"{live['last'] / FRAME_MS:.3f}")
    print(f"  no reuse / markdown (live)  {fresh['median'] / live['median']:.1f}x / {fresh['p95'] / live['p95']:.1f}x / "
          f"{fresh['last'] / live['last']:.1f}x")
    print(json.dumps({k: {n: round(v, 4) for n, v in s.items()} for k, s in stats.items()}))


if __name__ == "__main__":
    main()
