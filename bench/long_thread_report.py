"""What `bench.long_thread` measures per thread (`Samples`) and the table it prints from the medians."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

PAGE_LIMIT = 50


@dataclass
class Samples:
    """One (tree, thread)'s measured rounds, in seconds and bytes."""

    app: list[float] = field(default_factory=list)
    sdk: list[float] = field(default_factory=list)
    # Start → the provider has read the request's headers, for the app's send and the SDK's replay.
    app_headers: list[float] = field(default_factory=list)
    sdk_headers: list[float] = field(default_factory=list)
    # `--stages`: send start → the app called `stream_reply` (stamped in the app).
    to_sdk: list[float] = field(default_factory=list)
    page: list[float] = field(default_factory=list)
    page_bytes: list[int] = field(default_factory=list)
    api: list[float] = field(default_factory=list)
    api_bytes: list[int] = field(default_factory=list)
    api_items: list[int] = field(default_factory=list)
    request_items: list[int] = field(default_factory=list)
    request_bytes: list[int] = field(default_factory=list)
    request_images: list[int] = field(default_factory=list)

    def figures(self) -> dict[str, float]:
        """Medians over the rounds; `added` is the median of the paired app − SDK differences."""
        med = statistics.median
        return {
            "app": med(self.app),
            "sdk": med(self.sdk),
            "added": med(a - s for a, s in zip(self.app, self.sdk, strict=True)),
            "own": med(a - s for a, s in zip(self.app_headers, self.sdk_headers, strict=True)),
            "to_sdk": med(self.to_sdk) if self.to_sdk else float("nan"),
            "page": med(self.page),
            "page_bytes": med(self.page_bytes),
            "api": med(self.api),
            "api_bytes": med(self.api_bytes),
            "api_items": med(self.api_items),
            "request_items": med(self.request_items),
            "request_bytes": med(self.request_bytes),
            "request_images": med(self.request_images),
        }


# (heading, figure, kind): kind "ms" for seconds shown in ms, "KiB" / "MiB" for bytes, "n" for counts,
# "x" for the same figure as a ratio to the first thread's.
COLUMNS = (
    ("app → 1st delta ms", "app", "ms"),
    ("SDK → 1st delta ms", "sdk", "ms"),
    ("added ms", "added", "ms"),
    ("added ×", "added", "x"),
    ("own ms", "own", "ms"),
    ("own ×", "own", "x"),
    ("to SDK ms", "to_sdk", "ms"),
    ("to SDK ×", "to_sdk", "x"),
    ("page ms", "page", "ms"),
    ("page ×", "page", "x"),
    ("page KiB", "page_bytes", "KiB"),
    ("page KiB ×", "page_bytes", "x"),
    ("API ms", "api", "ms"),
    ("API ×", "api", "x"),
    ("API KiB", "api_bytes", "KiB"),
    ("API items", "api_items", "n"),
    ("request items", "request_items", "n"),
    ("request MiB", "request_bytes", "MiB"),
    ("request images", "request_images", "n"),
)


def _cell(value: float, kind: str) -> str:
    if kind == "ms":
        return f"{value * 1000:,.1f}"
    if kind == "KiB":
        return f"{value / 1024:,.0f}"
    if kind == "MiB":
        return f"{value / 1024 / 1024:,.2f}"
    if kind == "n":
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _ratio(value: float, base: float) -> float:
    return value / base if base else float("nan")


def render(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        cells = zip(row, widths, strict=True)
        return "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(cells))

    return [line(headers), "  ".join("-" * w for w in widths), *(line(row) for row in rows)]


def report_table(
    figures: dict[str, dict[str, dict[str, float]]], trees: list[str], labels: list[str], stages: bool = False
) -> list[str]:
    """`figures[tree][thread label]` → the table: a row per thread and tree, ratios to the first thread.

    With two trees (baseline first) each thread also gets a row of the second tree's
    figures over the first's (`× baseline`). `stages`: with the `--stages` columns.
    """
    first = labels[0]
    columns = [column for column in COLUMNS if stages or column[1] != "to_sdk"]
    headers = ["thread (live messages)", *(heading for heading, _, _ in columns)]
    rows = []
    for label in labels:
        for tree in trees:
            own = figures[tree][label]
            cells = [
                _cell(_ratio(own[key], figures[tree][first][key]), "x") if kind == "x" else _cell(own[key], kind)
                for _, key, kind in columns
            ]
            rows.append([label if len(trees) == 1 else f"{label} · {tree}", *cells])
        if len(trees) == 2:
            base, this = (figures[tree][label] for tree in trees)
            cells = ["" if kind in ("x", "n") else _cell(_ratio(this[key], base[key]), "x") for _, key, kind in columns]
            rows.append([f"{label} · {trees[1]} ÷ {trees[0]}", *cells])
    return render(headers, rows)


def report(database: str, result: dict, args) -> list[str]:
    trees, labels = result["trees"], result["labels"]
    lines = [
        f"long_thread {time.strftime('%Y-%m-%d %H:%M')} — database {database}; selector {args.selector}; "
        f"{args.rounds} measured rounds after 1 warm-up, threads and trees interleaved; "
        f"load average {result['load'][0]:.2f} → {result['load'][1]:.2f}",
    ]
    for tree in trees:
        build = result["builds"][tree]
        lines.append(
            f"{tree}: {result['roots'][tree]}; migrate {build['migrate_seconds']:.1f} s, build "
            + ", ".join(f"{t['label']} {t['seconds']:.1f} s" for t in build["threads"])
            + f"; index {build['index_seconds']:.1f} s, ANALYZE {build['analyze_seconds']:.1f} s"
        )
    lines += ["", *report_table(result["figures"], trees, labels, args.stages), ""]
    first = labels[0]
    for tree in trees:
        figures = result["figures"][tree]
        added = ", ".join(
            f"{label}: {_ratio(figures[label]['added'], figures[first]['added']):.2f}×" for label in labels[1:]
        )
        lines.append(f"{tree}: added time over the {first}-message thread's: {added}")
        own = ", ".join(
            f"{label}: {_ratio(figures[label]['own'], figures[first]['own']):.2f}×" for label in labels[1:]
        )
        lines.append(f"{tree}: own work before the request over the {first}-message thread's: {own}")
        if args.stages:
            to_sdk = ", ".join(
                f"{label}: {_ratio(figures[label]['to_sdk'], figures[first]['to_sdk']):.2f}×" for label in labels[1:]
            )
            lines.append(f"{tree}: send start → the app calls the SDK, over the {first}-message thread's: {to_sdk}")
    lines.append(
        "added = median over rounds of (app − SDK) in the same round; own = the same for (start → the provider "
        "has read the request's headers), the body's transfer left out of both; to SDK (--stages) = median send "
        "start → the app calls stream_reply, stamped in the app; × = ratio to the "
        f"{first}-message thread's figure; API = …/messages/?limit={PAGE_LIMIT}; request = the app's provider "
        "request body (JSON bytes, input items, image parts)"
    )
    return lines
