"""bench/long_thread.py imports, and its table and thread layout follow their rules (no Daphne, no database)."""

from __future__ import annotations

import argparse
import random

import pytest

from bench import long_thread, long_thread_report
from bench.long_thread_build import PNG_SIGNATURE, image_payload, image_turns, prose


def _figures(scale: float, page_bytes: int) -> dict[str, float]:
    return {
        "app": 0.030 * scale, "sdk": 0.010, "added": 0.020 * scale, "own": 0.005 * scale, "to_sdk": 0.004 * scale,
        "page": 0.050 * scale, "page_bytes": page_bytes,
        "api": 0.010 * scale, "api_bytes": 2048, "api_items": 50, "request_items": 11, "request_bytes": 3 * 1024 * 1024,
        "request_images": 0,
    }


def _cells(lines: list[str], label: str) -> list[str]:
    """The cells of the row starting with `label` (columns are two or more spaces apart)."""
    headers = [cell.strip() for cell in lines[0].split("  ") if cell.strip()]
    row = next(line for line in lines[2:] if line.startswith(label + "  "))
    values = [cell.strip() for cell in row[len(label):].split("  ") if cell.strip()]
    return dict(zip(headers[1:], values, strict=False))


def test_each_figure_is_shown_with_its_ratio_to_the_first_thread():
    figures = {"this tree": {"10": _figures(1, 10 * 1024), "1,000": _figures(4, 50 * 1024)}}
    lines = long_thread_report.report_table(figures, ["this tree"], ["10", "1,000"])
    long_row = _cells(lines, "1,000")
    assert long_row["added ms"] == "80.0"
    assert long_row["added ×"] == "4.00"
    assert long_row["page ms"] == "200.0"
    assert long_row["page KiB"] == "50"
    assert long_row["page KiB ×"] == "5.00"
    assert long_row["API ×"] == "4.00"
    assert long_row["request MiB"] == "3.00"
    assert long_row["own ms"] == "20.0"
    assert long_row["own ×"] == "4.00"
    assert "to SDK ms" not in long_row  # only with --stages
    assert _cells(long_thread_report.report_table(figures, ["this tree"], ["10", "1,000"], stages=True), "1,000")[
        "to SDK ×"
    ] == "4.00"
    assert _cells(lines, "10")["added ×"] == "1.00"


def test_with_a_baseline_each_thread_gets_both_trees_rows_and_this_tree_over_the_baseline():
    figures = {
        "baseline": {"10": _figures(1, 1024), "3,000": _figures(10, 1024)},
        "this tree": {"10": _figures(1, 1024), "3,000": _figures(2, 1024)},
    }
    lines = long_thread_report.report_table(figures, ["baseline", "this tree"], ["10", "3,000"])
    assert _cells(lines, "3,000 · baseline")["added ×"] == "10.00"
    assert _cells(lines, "3,000 · this tree")["added ×"] == "2.00"
    assert _cells(lines, "3,000 · this tree ÷ baseline")["added ms"] == "0.20"
    assert _cells(lines, "3,000 · this tree ÷ baseline")["page KiB"] == "1.00"


def test_added_time_is_the_median_of_the_paired_differences_not_the_difference_of_medians():
    samples = long_thread_report.Samples(app=[0.010, 0.050, 0.031], sdk=[0.008, 0.001, 0.030],
                                  app_headers=[0.004, 0.020, 0.009], sdk_headers=[0.001, 0.002, 0.008])
    for name in ("page", "api"):
        setattr(samples, name, [0.0] * 3)
    for name in ("page_bytes", "api_bytes", "api_items", "request_items", "request_bytes", "request_images"):
        setattr(samples, name, [0] * 3)
    figures = samples.figures()
    assert figures["added"] == pytest.approx(0.002)  # paired: 0.002, 0.049, 0.001
    assert figures["app"] - figures["sdk"] == pytest.approx(0.023)
    assert figures["own"] == pytest.approx(0.003)  # paired: 0.003, 0.018, 0.001


def test_the_attachment_case_follows_the_lengths_and_images_spread_evenly_over_user_turns():
    cases = long_thread.thread_cases([10, 1000], images=200, image_length=3000, image_bytes=1024)
    assert [case["length"] for case in cases] == [10, 1000, 3000]
    assert cases[-1]["images"] == 200
    assert long_thread.thread_cases([10], images=0, image_length=3000, image_bytes=1024) == [{"label": "10", "length": 10}]
    turns = sorted(image_turns(1500, 200))
    assert len(turns) == 200
    gaps = {b - a for a, b in zip(turns, turns[1:], strict=False)}
    assert gaps <= {7, 8}


def test_thread_lengths_must_be_even_so_every_head_is_a_reply():
    assert long_thread.int_list("10,1_000") == [10, 1000]
    with pytest.raises(argparse.ArgumentTypeError):
        long_thread.int_list("10,999")


def test_built_turns_are_200_to_600_characters_and_images_sniff_as_png():
    rng = random.Random(1)
    lengths = [len(prose(rng)) for _ in range(200)]
    assert min(lengths) >= 200
    assert max(lengths) <= 600
    payload = image_payload(rng, 4096)
    assert len(payload) == 4096
    assert payload.startswith(PNG_SIGNATURE)
