"""tests/support/shards.py: `make test` deals whole modules to its processes by their recorded seconds."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.support.shards import DURATIONS_FILE, deal, module_weights, recorded_seconds, shard_of


def items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_modules_are_dealt_heaviest_first_to_the_lightest_share():
    owner = deal({"a.py": 10.0, "b.py": 6.0, "c.py": 5.0, "d.py": 1.0}, 2)
    loads = [sum(w for m, w in {"a.py": 10.0, "b.py": 6.0, "c.py": 5.0, "d.py": 1.0}.items() if owner[m] == k)
             for k in (0, 1)]
    assert loads == [11.0, 11.0]
    assert owner["a.py"] != owner["b.py"] and owner["b.py"] == owner["c.py"]


def test_a_module_without_a_record_weighs_its_tests_at_the_recorded_seconds_per_test():
    weights = module_weights({"known.py": 4, "other.py": 6, "new.py": 3}, {"known.py": 8.0, "other.py": 12.0})
    assert weights == {"known.py": 8.0, "other.py": 12.0, "new.py": 6.0}
    # Nothing recorded at all: every test weighs the same.
    assert module_weights({"a.py": 2, "b.py": 5}, {}) == {"a.py": 2.0, "b.py": 5.0}


def test_the_shares_split_the_tests_whole_modules_at_a_time():
    collected = items("s/a.py::t1", "s/a.py::t2", "s/b.py::t1", "s/c.py::t1", "s/c.py::t2", "s/c.py::t3")
    recorded = {"s/a.py": 50.0, "s/b.py": 40.0, "s/c.py": 15.0}
    first, rest_of_first = shard_of(collected, "1/2", recorded)
    second, rest_of_second = shard_of(collected, "2/2", recorded)
    assert [i.nodeid for i in first] == ["s/a.py::t1", "s/a.py::t2"]
    assert [i.nodeid for i in second] == ["s/b.py::t1", "s/c.py::t1", "s/c.py::t2", "s/c.py::t3"]
    assert rest_of_first == second and rest_of_second == first


def test_the_recorded_seconds_are_read_per_database(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"databases": {"sqlite": {"tests/x.py": 3.5}, "postgresql": {"tests/x.py": 9.0}}}))
    assert recorded_seconds("sqlite", path) == {"tests/x.py": 3.5}
    assert recorded_seconds("postgresql", path) == {"tests/x.py": 9.0}
    assert recorded_seconds("sqlite", tmp_path / "missing.json") == {}
    path.write_text("{not json")
    assert recorded_seconds("sqlite", path) == {}


def test_the_committed_file_records_both_databases():
    for database in ("sqlite", "postgresql"):
        seconds = recorded_seconds(database, DURATIONS_FILE)
        assert len(seconds) > 100 and all(s >= 0 for s in seconds.values()), database
