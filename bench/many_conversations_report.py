"""The table `bench/many_conversations.py` prints: each operation's median per size and its ratio, and for the
operations that refresh prompts the time per affected chat and the sends made meanwhile, in the operation's
scope and outside it, each against its own idle self."""

from __future__ import annotations

import statistics

SEND_CHATS = 6  # as `bench.many_conversations.SEND_CHATS`: the chats made by the bench, in every prompt's scope


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * 0.9), len(ordered) - 1)]


def _against(waits: list[float] | None, own: list[float] | None) -> list[str]:
    """Sends meanwhile (median / p90 / longest (n)), the idle sends they are held against (median / p90 /
    longest: an idle send's own longest against its median is the floor of the second ratio), and the two
    ratios: p90 ÷ idle p90, longest ÷ idle median."""
    if not waits or not own:
        return ["", "", "", ""]
    return [
        f"{_ms(statistics.median(waits))} / {_ms(_p90(waits))} / {_ms(max(waits))} ms ({len(waits)})",
        f"{_ms(statistics.median(own))} / {_ms(_p90(own))} / {_ms(max(own))} ms ({len(own)})",
        f"×{_p90(waits) / _p90(own):.1f}",
        f"×{max(waits) / statistics.median(own):.1f}",
    ]


def report(sizes: list[int], by_size: dict[int, dict[str, dict]]) -> list[str]:
    first, last = sizes[0], sizes[-1]
    names = [name for name in by_size[first] if name != "failed sends"]
    scoped = ["meanwhile: median / p90 / longest (n)", "idle: median / p90 / longest (n)", "p90 ÷ idle p90",
              "longest ÷ idle median"]
    head = ("| operation | " + " | ".join(f"{s:,}" for s in sizes) + f" | {last:,} ÷ {first:,} | per affected chat at "
            f"{last:,} | " + " | ".join(f"in scope, {c}" for c in scoped) + " | in scope: p90 ÷ idle p90 (prompt "
            "current) | " + " | ".join(f"out of scope, {c}" for c in scoped) + " |")
    lines = [head, "|" + "---|" * (len(sizes) + 13)]
    for name in names:
        medians = [statistics.median(by_size[s][name]["times"]) for s in sizes]
        cells = [f"{_ms(m)} ms" for m in medians]
        big = by_size[last][name]
        per, inside, current, outside = "", ["", "", "", ""], "", ["", "", "", ""]
        if "wait" in big:
            affected = statistics.median(big["affected"]) if "affected" in big else None
            if name == "Settings save":
                affected = last + 3 + 4 * SEND_CHATS  # every chat with a stored prompt (about)
            elif name.startswith("folder hide"):
                affected = last // 10 + SEND_CHATS  # the next chat of each hidden one holds its handoff
            per = f"{statistics.median(big['times']) / affected * 1000:.2f} ms" if affected else ""
            inside = _against(big["wait"], big.get("own_stale"))
            current = f"×{_p90(big['wait']) / _p90(big['own']):.1f}"
            outside = _against(big.get("wait_out"), big.get("own_out"))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | ×{medians[-1] / medians[0]:.1f} | {per} | "
                     + " | ".join(inside) + f" | {current} | " + " | ".join(outside) + " |")
    return lines
