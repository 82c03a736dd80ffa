"""A PostgreSQL server of a test's own, to stop and start again (scripts/pg_tmp.sh up/down).

For outage tests: the suite's shared database must not go away under the other tests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "pg_tmp.sh"


class OwnPostgres:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.database_url = ""

    def up(self) -> OwnPostgres:
        out = subprocess.run(["bash", str(SCRIPT), "up", str(self.directory)], check=True, capture_output=True,
                             text=True).stdout
        self.database_url = re.search(r"export DATABASE_URL=(\S+)", out).group(1).strip("'\"")
        return self

    def down(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "down", str(self.directory)], check=True, capture_output=True)

    def migrate(self) -> None:
        env = {**os.environ, "DATABASE_URL": self.database_url}
        env.pop("ELION_SQLITE_PATH", None)
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)

    def destroy(self) -> None:
        self.down()
        subprocess.run(["rm", "-rf", str(self.directory)], check=True)
