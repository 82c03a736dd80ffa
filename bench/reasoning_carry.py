"""What carrying earlier turns' reasoning items costs a request, at 1,000 turns (issue 31).

GPT-5.5 renders only the current turn's reasoning (`reasoning.context` defaults to "current_turn" before
the GPT-5.6 family, per the installed SDK's `Reasoning.context` docstring): reasoning items of turns
before the last user message are dropped by the provider. Sending them anyway costs request bytes and
the JSON work to build them, on every send. This bench builds the same 1,000-turn history (each reply
with one reasoning item, as the Responses API hands them out with `store: false`) through the app's
own assembly (`continuity.rules.request_policy.assemble_request`) and wire projection
(`transcript.provider.wire.responses_input`), with and without earlier reasoning
(`ELION_REASONING_CONTEXT` "all_turns" vs "current_turn"), and prints side by side the request bytes
and the time to assemble and serialise it, for encrypted contents of 1, 4 and 16 KiB (the size grows
with the reasoning tokens a reply used; the bench does not guess one).

    .venv/bin/python -m bench.reasoning_carry
    .venv/bin/python -m bench.reasoning_carry --turns 1000 --rounds 15
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from bench.common import synthetic_vocabulary


def history(turns: int, encrypted_bytes: int, rng: random.Random) -> list:
    from continuity.rules.request_policy import HistoryTurn
    from transcript.provider.wire import reasoning_message

    words = synthetic_vocabulary(rng, 2_000)
    result = []
    for number in range(turns):
        said = " ".join(rng.choice(words) for _ in range(60))
        answer = " ".join(rng.choice(words) for _ in range(120))
        sealed = "enc_" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                                  for _ in range(encrypted_bytes))
        result.append(HistoryTurn("user", said))
        result.append(HistoryTurn("assistant", answer, (reasoning_message(f"rs_{number}", sealed, []),)))
    return result


def request_bytes(turns: list, earlier_reasoning: bool) -> tuple[int, float]:
    """The Responses request body's `input` for these turns: its bytes, and the seconds to build and encode it."""
    from continuity.rules.request_policy import HistoryTurn, assemble_request
    from transcript.provider.wire import responses_input

    started = time.perf_counter()
    # Fresh turn objects each round: a send builds each new turn's messages once, and this measures that too.
    fresh = [HistoryTurn(t.role, t.content, t.tool_messages) for t in turns]
    assembled = assemble_request(
        static_prompt="You are Elion.", history=[*fresh, HistoryTurn("user", "And now?")],
        input_budget_tokens=10**9, earlier_reasoning=earlier_reasoning,
    )
    body = json.dumps({"input": responses_input(assembled.messages)}, separators=(",", ":")).encode()
    return len(body), time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
    import django

    django.setup()
    rng = random.Random(31)
    print(f"{args.turns} turns (user + reply with one reasoning item each), median of {args.rounds} rounds, interleaved")
    print("| encrypted content | request bytes, all_turns | request bytes, current_turn | saved | "
          "build+encode ms, all_turns | build+encode ms, current_turn | ratio |")
    print("|---|---|---|---|---|---|---|")
    for size in (1024, 4096, 16384):
        turns = history(args.turns, size, rng)
        carried, left = [], []
        for _ in range(args.rounds):
            carried.append(request_bytes(turns, True))
            left.append(request_bytes(turns, False))
        bytes_all, bytes_current = carried[0][0], left[0][0]
        ms_all = statistics.median(t for _, t in carried) * 1000
        ms_current = statistics.median(t for _, t in left) * 1000
        print(f"| {size // 1024} KiB | {bytes_all:,} | {bytes_current:,} | {1 - bytes_current / bytes_all:.0%} | "
              f"{ms_all:.1f} | {ms_current:.1f} | {ms_all / ms_current:.2f}× |")


if __name__ == "__main__":
    main()
