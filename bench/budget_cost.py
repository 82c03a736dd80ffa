"""What does a thread cost once it lives at the input budget, with and without a trim step?

Issue 31's proof: `--sends` (300) sends into one thread per trim step, against an input budget of
`--budget` (20,000) tokens that the thread passes after about fifty sends, all in one run and
interleaved send by send (the same owner messages and the same scripted replies in every thread).
The app runs in this process on a fresh database (SQLite, or `DATABASE_URL`): every send goes through
`send_prepare` and the reply's events, so the request is what the app builds and its real provider
gateway sends it with the `openai` SDK over HTTP to the scripted provider
(`tests.support.scripted_provider`), which answers `usage.input_tokens_details.cached_tokens` from its
simulated prefix cache (the longest common prefix with a recent request under the same
`prompt_cache_key`, in 128-token blocks from 1,024 tokens; as OpenAI documents it).

For each step, over the sends from the first one the budget trimmed:

  cached      the share of the input tokens the provider served from its cache;
  $/send      the input's estimated cost per send: uncached tokens at the input price, cached ones at
              the cached-input price (`ELION_PRICE_INPUT_PER_MTOK`, `ELION_PRICE_CACHED_INPUT_PER_MTOK`
              when set, else GPT-5.5's list prices; the source is printed);
  smallest    the smallest history a trimmed request kept, as a share of the input budget;
  trims       how many sends started the history at a new turn.

    .venv/bin/python -m bench.budget_cost                       # step 0 and the default step, ≈ 3 min
    .venv/bin/python -m bench.budget_cost --steps 0,0.1,0.15,0.2,0.25   # the trade-off, ≈ 8 min
    .venv/bin/python -m bench.budget_cost --steps 0,0.15 --sends 120     # quick

A benchmark, not a test: it fails only when a send does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django, synthetic_vocabulary  # noqa: E402

LIST_PRICES = {  # USD per million tokens, GPT-5.5
    "input": Decimal("5.00"),
    "cached_input": Decimal("0.50"),
}
LIST_PRICE_SOURCE = (
    "GPT-5.5 list prices, $5.00 input / $0.50 cached input per 1M tokens (OpenAI pricing, as quoted in "
    "docs.apiyi.com/en/api-capabilities/openai/prompt-caching and the issue; cached input is a tenth)"
)


@dataclass
class Thread:
    step: Decimal
    conversation_id: str = ""
    trimmed_from: int | None = None  # the first send the budget trimmed
    input_tokens: int = 0
    cached_tokens: int = 0
    sends_past: int = 0
    smallest_history: float = 1.0
    starts: list[int] = field(default_factory=list)


def prices() -> tuple[Decimal, Decimal, str]:
    from django.conf import settings

    if settings.ELION_PRICE_INPUT_PER_MTOK is not None:
        cached = settings.ELION_PRICE_CACHED_INPUT_PER_MTOK or settings.ELION_PRICE_INPUT_PER_MTOK
        return settings.ELION_PRICE_INPUT_PER_MTOK, cached, "ELION_PRICE_INPUT_PER_MTOK / ELION_PRICE_CACHED_INPUT_PER_MTOK"
    return LIST_PRICES["input"], LIST_PRICES["cached_input"], LIST_PRICE_SOURCE


def owner_text(rng: random.Random, words: list[str], n: int) -> str:
    return f"Message {n}: " + " ".join(rng.choice(words) for _ in range(rng.randint(15, 60)))


def reply_text(rng: random.Random, words: list[str], n: int) -> str:
    return f"Reply {n}: " + " ".join(rng.choice(words) for _ in range(rng.randint(60, 160)))


async def one_send(thread: Thread, content: str, number: int, budget: int) -> None:
    """One send through the app's own path: the prepared turn, then the reply's events to `done`."""
    from asgiref.sync import sync_to_async
    from django.conf import settings

    from conversations.sending.commands import SendCommand
    from conversations.sending.events import reply_events
    from conversations.sending.prepare import send_prepare

    settings.ELION_TRIM_STEP = thread.step
    prepared = await sync_to_async(send_prepare)(SendCommand(conversation_id=thread.conversation_id, content=content))
    async for name, data in reply_events(prepared):
        if name == "error":
            raise RuntimeError(f"send failed: {data}")
    await sync_to_async(tally)(thread, prepared.assistant_message_id, number, budget)


def tally(thread: Thread, reply_id, number: int, budget: int) -> None:
    from transcript.models import Conversation, Message

    reply = Message.objects.get(pk=reply_id)
    diagnostics = reply.metadata["diagnostics"]
    usage = reply.metadata.get("usage") or {}
    in_view = Conversation.objects.get(pk=thread.conversation_id).in_view or {}
    thread.starts.append(in_view.get("out_of_view") or 0)
    if thread.trimmed_from is None and diagnostics["trimmed_messages"]:
        thread.trimmed_from = number
    if thread.trimmed_from is not None:
        thread.sends_past += 1
        thread.input_tokens += usage.get("input_tokens") or 0
        thread.cached_tokens += usage.get("cached_input_tokens") or 0
        thread.smallest_history = min(thread.smallest_history, diagnostics["history_tokens"] / budget)


async def measure(args) -> tuple[list[Thread], int]:
    from asgiref.sync import sync_to_async
    from django.conf import settings

    from conversations.services.threads.thread_writes import conversation_create
    from tests.support.scripted_provider import ScriptedProvider, ScriptedReply

    threads = [Thread(Decimal(step)) for step in args.steps]
    with ScriptedProvider() as provider:
        settings.OPENAI_API_KEY = "bench-key"
        settings.OPENAI_BASE_URL = provider.base_url
        settings.ELION_API_SELECTOR = "responses"
        settings.ELION_MODEL = "gpt-5.5"
        settings.ELION_INPUT_BUDGET_TOKENS = args.budget
        for thread in threads:
            # Private: no thread recalls another's (identical) turns, so each request is its own thread's.
            created = await sync_to_async(conversation_create)(persona="elion", private=True)
            thread.conversation_id = str(created.id)
        rng = random.Random(args.seed)
        words = synthetic_vocabulary(rng, 3_000)
        for number in range(args.sends):
            content, reply = owner_text(rng, words, number), reply_text(rng, words, number)
            for thread in threads:
                provider.script(ScriptedReply(text=reply, usage={"output_tokens": len(reply) // 4}))
                await one_send(thread, content, number, args.budget)
            if (number + 1) % 50 == 0:
                print(f"  {number + 1} sends", file=sys.stderr, flush=True)
    return threads, args.budget


def report(threads: list[Thread], budget: int, args) -> list[str]:
    input_price, cached_price, source = prices()
    lines = [
        f"{args.sends} sends per thread, input budget {budget:,} tokens; figures over the sends from the first "
        "trimmed one",
        f"prices: ${input_price} input, ${cached_price} cached input per 1M tokens — source: {source}",
        "",
        "| ELION_TRIM_STEP | first trim at send | sends past | cached share | input $/send | vs step 0 "
        "| smallest history / budget | new starts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = None
    for thread in threads:
        past = max(thread.sends_past, 1)
        uncached = thread.input_tokens - thread.cached_tokens
        cost = (Decimal(uncached) * input_price + Decimal(thread.cached_tokens) * cached_price) / Decimal(1_000_000)
        per_send = cost / past
        base = per_send if base is None or not base else base
        changes = sum(1 for a, b in zip(thread.starts, thread.starts[1:], strict=False) if a != b)
        share = thread.cached_tokens / thread.input_tokens if thread.input_tokens else 0.0
        lines.append(
            f"| {thread.step} | {thread.trimmed_from} | {thread.sends_past} | {share:.1%} | ${per_send:.4f} | "
            f"{per_send / base if base else 0:.2f}× | {thread.smallest_history:.1%} | {changes} |"
        )
    return lines


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sends", type=int, default=300)
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--steps", type=lambda text: text.split(","), default=None,
                        help="trim steps to compare, comma-separated, the first the baseline "
                             "(default: 0 and the ELION_TRIM_STEP setting)")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="elion-budget-cost-"))
    try:
        setup_django(data_dir, os.environ.get("DATABASE_URL"))
        from django.conf import settings

        args.steps = args.steps or ["0", str(settings.ELION_TRIM_STEP)]
        threads, budget = asyncio.run(measure(args))
        from django.db import connection

        print(f"commit {commit()}, database {connection.vendor}")
        print("\n".join(report(threads, budget, args)))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
