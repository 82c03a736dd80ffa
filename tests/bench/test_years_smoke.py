"""bench/years.py imports, and its report and cache key follow their rules (no Daphne, no database)."""

from __future__ import annotations

import argparse

import pytest

from bench import years

MiB = 1024 * 1024


def _figures(scale: float) -> dict[str, float]:
    return {"app": 0.03 * scale, "sdk": 0.01, "added": 0.02 * scale, "page": 0.05 * scale, "api": 0.01,
            "request_items": 11}


def _result(added_scale: float, page_scale: float, growth_mib: int, whole_mib: int) -> dict:
    figures = {"10": _figures(1), "100,000": {**_figures(added_scale), "page": 0.05 * page_scale}}
    return {
        "vendor": "sqlite", "labels": ["10", "100,000"], "figures": figures,
        "rss_start": 100 * MiB, "rss_after": {"10": 110 * MiB, "100,000": (110 + growth_mib) * MiB},
        "rss_end": (110 + growth_mib) * MiB,
        "whole": {"label": "100,000", "items": 100_000, "bytes": 70 * MiB, "seconds": 30.0,
                  "peak_growth": whole_mib * MiB, "expected": 100_000},
    }


def test_the_report_shows_each_ratio_to_the_smallest_thread_and_says_which_targets_are_met():
    text = "\n".join(years.report(_result(added_scale=1.2, page_scale=3, growth_mib=10, whole_mib=80)))
    assert "| 100,000 | 36.0 | 10.0 | 24.0 | ×1.20 | 150.0 | ×3.00 |" in text
    assert "added **×1.20** (target ≤ 1.5: met), page **×3.00** (**missed**)" in text
    assert "growth **10.0 MiB** (target ≤ 64: met)" in text
    assert "peak RSS growth **80.0 MiB** (target ≤ 64: **missed**)" in text


def test_the_cache_key_follows_what_shapes_the_database():
    base = argparse.Namespace(sizes=[10, 1000], seed=1, selector="chat.completions")
    key = years.cache_key(base)
    assert key == years.cache_key(argparse.Namespace(**vars(base)))
    assert key != years.cache_key(argparse.Namespace(**{**vars(base), "sizes": [10, 2000]}))
    assert key != years.cache_key(argparse.Namespace(**{**vars(base), "selector": "responses"}))


@pytest.mark.parametrize("text", ["1000,10", "10,10", "11", "0"])
def test_sizes_rise_and_are_even(text):
    with pytest.raises(argparse.ArgumentTypeError):
        years.sizes_list(text)
