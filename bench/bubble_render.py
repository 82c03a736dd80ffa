"""The chat page's per-bubble cost (issue 40): one message bubble's template, this tree's against a git ref's.

The chat page of a long thread renders 50 bubbles where a 10-message thread renders 10, so the page's
100,000 ÷ 10 ratio in `bench/years.py` is mostly what one bubble costs. This renders the 50 newest bubbles
of the largest thread of a `bench/years.py` cache entry (its SQLite file, copied first) with
`templates/chat/_message.html` as it is here and as it was at `--baseline`, interleaved round by round in
one process, and prints the medians and their ratio. The bubbles themselves are built once, by this tree.

    .venv/bin/python -m bench.years --database sqlite --cache /tmp/years     # builds the threads once
    .venv/bin/python -m bench.bubble_render --entry /tmp/years/sqlite-<key> --baseline ff8e3c8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TEMPLATE = "templates/chat/_message.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry", type=Path, required=True, help="a bench/years.py cache entry (SQLite)")
    parser.add_argument("--baseline", required=True, help="the git ref whose bubble template is compared")
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args(argv)
    baseline_text = subprocess.run(["git", "show", f"{args.baseline}:{TEMPLATE}"], cwd=ROOT, check=True,
                                   capture_output=True, text=True).stdout
    built = json.loads((args.entry / "built.json").read_text())
    scratch = Path(tempfile.mkdtemp(prefix="bubble-render-"))
    try:
        shutil.copy(args.entry / "elion.sqlite3", scratch / "elion.sqlite3")
        from bench.common import setup_django

        setup_django(scratch, None)
        from django.template import engines

        from conversations.web import page_selectors
        from elion.base.assistant_settings import assistant_settings_get
        from transcript.models import Conversation

        largest = max(built["threads"], key=lambda thread: thread["live_messages"])
        conversation = Conversation.objects.get(pk=largest["conversation_id"])
        settings_row = assistant_settings_get()
        window = page_selectors.chat_window(conversation, {})
        bubbles = page_selectors.bubbles_for(conversation, page_selectors.visible_messages(window), settings_row)
        engine = engines["django"]
        templates = {"baseline": engine.from_string(baseline_text), "this tree": engine.from_string((ROOT / TEMPLATE).read_text())}
        samples: dict[str, list[float]] = {name: [] for name in templates}
        for round_number in range(args.rounds + 1):
            for name, template in templates.items():
                started = time.perf_counter()
                for bubble in bubbles:
                    template.render({"bubble": bubble})
                if round_number:  # the first round warms both up
                    samples[name].append((time.perf_counter() - started) * 1000)
        medians = {name: statistics.median(values) for name, values in samples.items()}
        print(f"{len(bubbles)} bubbles of the {largest['label']}-message thread, {args.rounds} rounds interleaved, medians")
        print("| template | ms for all | ms a bubble |")
        print("|---|---|---|")
        for name, median in medians.items():
            print(f"| {name} | {median:.2f} | {median / len(bubbles):.3f} |")
        print(f"\nthis tree ÷ baseline ({args.baseline}): ×{medians['this tree'] / medians['baseline']:.2f}; "
              f"load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
