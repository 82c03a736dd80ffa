"""Merge the seconds the pytest processes recorded into tests/durations.json (tests/support/shards.py).

    python scripts/test_durations.py DIR [COMMAND]

DIR holds one `<database>-<k>.json` per process ({module: seconds}), written when ELION_TEST_DURATIONS_DIR
was set (scripts/test.sh sets it with ELION_RECORD_DURATIONS=1). A module recorded in DIR takes the new
seconds; a module of the old file that still exists keeps its old ones; a module whose file is gone is
dropped. COMMAND is noted in the file as how the figures were recorded.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = ROOT / "tests" / "durations.json"
ABOUT = (
    "Seconds per test module and database (setup + call + teardown of its tests, summed), read by "
    "tests/support/shards.py to deal modules to the pytest processes of `make test`. Only the proportions "
    "matter. Rebuild: ELION_RECORD_DURATIONS=1 make test (scripts/test_durations.py)."
)


def merged(old: dict[str, dict[str, float]], recorded_dir: Path) -> dict[str, dict[str, float]]:
    databases = {name: {module: s for module, s in modules.items() if (ROOT / module).exists()}
                 for name, modules in old.items()}
    for part in sorted(recorded_dir.glob("*-*.json")):
        database = part.stem.rsplit("-", 1)[0]
        databases.setdefault(database, {}).update(json.loads(part.read_text()))
    return {name: dict(sorted(modules.items())) for name, modules in sorted(databases.items())}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    recorded_dir = Path(argv[1])
    if not list(recorded_dir.glob("*-*.json")):
        print(f"test_durations: nothing recorded in {recorded_dir}", file=sys.stderr)
        return 1
    old = json.loads(DURATIONS.read_text())["databases"] if DURATIONS.exists() else {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    document = {
        "about": ABOUT,
        "recorded": {
            "commit": commit.stdout.strip() or "unknown",
            "date": datetime.date.today().isoformat(),
            "how": argv[2] if len(argv) == 3 else "scripts/test_durations.py",
        },
        "databases": merged(old, recorded_dir),
    }
    DURATIONS.write_text(json.dumps(document, indent=1) + "\n")
    sizes = ", ".join(f"{name} {len(modules)} modules" for name, modules in document["databases"].items())
    print(f"test_durations: {DURATIONS.relative_to(ROOT)} written ({sizes})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
