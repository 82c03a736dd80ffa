"""What the standalone benches share: Django set up on a fresh data dir, synthetic words, and a git ref's
tree measured side by side with this one."""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THIS_TREE = "this tree"

SYLLABLES = ["ka", "lo", "mi", "ren", "sa", "tu", "vel", "or", "in", "da", "fe", "qua", "zi", "bo", "ny", "th"]


def setup_django(data_dir: Path, database_url: str | None) -> None:
    """Settings from a clean environment (SQLite in `data_dir`, or `database_url`), then migrate."""
    os.environ["ELION_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "elion.settings"
    os.environ["ELION_LOG_LEVEL"] = "WARNING"
    for name in ("DATABASE_URL", "ELION_TESTING", "DJANGO_DEBUG"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def synthetic_vocabulary(rng: random.Random, size: int) -> list[str]:
    """`size` distinct made-up words of 2–4 syllables, in a seed-determined order."""
    words: dict[str, None] = {}
    while len(words) < size:
        words.setdefault("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))), None)
    return list(words)


def zipf_weights(n: int) -> list[float]:
    return [1 / (rank + 1) for rank in range(n)]


@contextmanager
def baseline_tree(ref: str, bench_file: Path) -> Iterator[Path]:
    """`ref`'s tree unpacked with `git archive` into a scratch directory, removed on exit; `bench_file` (the
    calling bench) is copied in when that tree lacks it, so both trees run the same measurement."""
    scratch = Path(tempfile.mkdtemp(prefix=f"{bench_file.stem}-trees-"))
    try:
        tree = scratch / "baseline"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        copy = tree / bench_file.relative_to(ROOT)
        if not copy.exists():
            shutil.copy(bench_file, copy)
        yield tree
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def trees_alternated(trees: dict[str, Path], pairs: int,
                     run: Callable[[Path], dict[str, float]]) -> dict[str, list[dict[str, float]]]:
    """`run` on each tree in turn, `pairs` times, so the trees are measured under the same load; each run's
    figures printed as it ends."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for pair in range(pairs):
        for name, tree in trees.items():
            figures = run(tree)
            results[name].append(figures)
            print(f"pair {pair + 1} {name}: " + ", ".join(f"{key} {value:.1f} ms" for key, value in figures.items()),
                  flush=True)
    return results


def medians_of(runs: list[dict[str, float]], keys: list[str]) -> list[float]:
    return [statistics.median(run[key] for run in runs) for key in keys]


def pair_ratios_line(results: dict[str, list[dict[str, float]]], baseline: str, key: str, label: str) -> str:
    """This tree's figure ÷ the baseline's, run pair by run pair (the steadier comparison on a noisy machine)."""
    ratios = sorted(mine[key] / theirs[key] for mine, theirs in zip(results[THIS_TREE], results[baseline], strict=True))
    return f"this tree ÷ {label}, pair by pair: " + ", ".join(f"×{ratio:.2f}" for ratio in ratios)


def load_line(what: str) -> str:
    return f"{what}; load average {os.getloadavg()[0]:.1f}"
