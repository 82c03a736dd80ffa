"""What the owner's number of conversations costs: 100 / 1,000 / 10,000 conversations, 50 memories.

For each size one state is built once (in a child process, with the app's own prompt builders,
snapshot rows, handoff rows, search index triggers: `bench/many_conversations_build.py`) and copied per run; a Daphne server
serves the copy with the scripted provider on loopback. `--database postgres`: the state is built in a fresh
PostgreSQL database (DATABASE_URL's server, else a throwaway one from scripts/pg_tmp.sh, stopped on the way
out) and cached as a `pg_dump -Fc`; each run restores it into a fresh database (`pg_restore`, then `VACUUM
ANALYZE`), dropped after the run. Then, in rounds (medians of `--rounds`),
over HTTP as a client sees it:

- the operations the seed ties to the conversations they affect: Settings save (every stored
  prompt), memory edit and delete (a memory held by 90% of the snapshots), folder hide (a folder
  holding 10% of the chats, whose handoffs reach the next chat of each); printed with the time per
  affected conversation and the first events of sends made meanwhile (`wait`: median, p90, longest)
  against idle sends made the same way (`own`): target wait ≤ 1.5 × own. The sends go one after
  another into six chats, the next as soon as the previous one's first event arrived (a reply whose
  last write waits for the operation must not hide the next send's wait);
- everything else (target ≤ 2× from 100 to 10,000): memory add, New Chat, the sidebar page (`/`),
  the conversation list API, Past Conversation Search, `/api/health/`, a new chat's first send and
  its second (recall runs), to the first delta.

    .venv/bin/python -m bench.many_conversations                         # this tree
    .venv/bin/python -m bench.many_conversations --baseline /tmp/main    # another tree's server and builder
    .venv/bin/python -m bench.many_conversations --before /tmp/main --only-refreshes   # side by side
    .venv/bin/python -m bench.many_conversations --database postgres --sizes 100 --rounds 1

SQLite by default (`--database sqlite`), or PostgreSQL (`--database postgres`): one database per run, named
in the summary line. With `--before`, both trees serve the same state, copied or restored (each migrates it).
A benchmark, not a test: it asserts nothing about timing; it fails when a request answers an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.many_conversations_sends import (
    FAILED_SENDS,
    IDLE_SENDS,
    SEND_CHATS,
    chats_made,
    checked,
    send_first_event,
    sends_one_after_another,
    stale_sends,
    timed,
    with_concurrent_sends,
)

ROOT = Path(__file__).resolve().parents[1]


async def measure(base_url: str, rounds: int, seed: int, db_path: Path | str, *, only_refreshes: bool = False
                  ) -> dict[str, dict]:
    """The sends during an operation go, in turn, to chats in its scope (`in`: each send rebuilds its own marked
    prompt unless a batch did first) and, where there are any, to chats outside it (`out`). Each is held against
    its own idle self: an idle send into the same chats with their prompts current (`own`, `own_out`) and, for
    the chats in scope, an idle send into them marked stale (`own_stale`: it rebuilds too, with no refresh
    running)."""
    import httpx

    rng = random.Random(seed)
    results: dict[str, dict] = {}

    def record(name: str, seconds: float, **extra: float | list[float]) -> None:
        entry = results.setdefault(name, {"times": []})
        entry["times"].append(seconds)
        for key, value in extra.items():
            if isinstance(value, list):
                entry.setdefault(key, []).extend(value)
            else:
                entry.setdefault(key, []).append(value)

    timeout = httpx.Timeout(1800.0)
    async with httpx.AsyncClient(base_url=base_url, timeout=timeout) as client, \
            httpx.AsyncClient(base_url=base_url, timeout=timeout) as sends:
        memories = (await checked(await client.get("/api/memories/"), "memories")).json()
        memories = memories["results"] if isinstance(memories, dict) else memories
        widely_held = sorted((m for m in memories), key=lambda m: -m["chats"])
        folder_id = (await checked(await client.get("/api/folders/"), "folders")).json()
        folder_id = (folder_id["results"] if isinstance(folder_id, dict) else folder_id)[0]["id"]
        # In every operation's scope but folder hide's: ordinary chats (their snapshots hold every memory).
        idle_chats = await chats_made(client, sends, SEND_CHATS)
        # In no operation's scope but Settings save's: private chats (no memories, no handoff in).
        private_chats = await chats_made(client, sends, SEND_CHATS, private=True)
        # In folder hide's scope: chats whose New Chat handoff came from a chat in the folder (each made right
        # after a send into a new chat in the folder, so that one is the most recent to have spoken).
        handed_chats = []
        for _ in range(SEND_CHATS):
            await chats_made(client, sends, 1, folder_id=folder_id)
            handed_chats += await chats_made(client, sends, 1)
        for round_number in range(rounds):
            own = await sends_one_after_another(sends, idle_chats, count=IDLE_SENDS)
            own_out = await sends_one_after_another(sends, private_chats, count=IDLE_SENDS)
            own_stale = await stale_sends(sends, db_path, idle_chats)
            own_handed_stale = await stale_sends(sends, db_path, handed_chats)
            record("send (idle, stored prompt)", statistics.median(own), own=own)
            record("send (idle, stale prompt: rebuilds)", statistics.median(own_stale), own=own_stale)
            record("send (idle, private chat)", statistics.median(own_out), own=own_out)

            async def settings_save(n: int = round_number) -> float:
                return (await timed(client, "PATCH", "/api/settings/",
                                    json={"custom_instructions": f"Speak plainly, round {n}."}))[0]

            elapsed, (wait, wait_private) = await with_concurrent_sends(client, settings_save,
                                                                        [idle_chats, private_chats])
            record("Settings save", elapsed, wait=wait + wait_private, own=own, own_stale=own_stale)

            memory = widely_held[round_number]

            async def memory_edit(m: dict = memory, n: int = round_number) -> float:
                return (await timed(client, "PATCH", f"/api/memories/{m['id']}/",
                                    json={"text": m["text"] + f" (edited {n})"}))[0]

            elapsed, (wait, wait_out) = await with_concurrent_sends(client, memory_edit, [idle_chats, private_chats])
            record("memory edit", elapsed, wait=wait, own=own, own_stale=own_stale, wait_out=wait_out,
                   own_out=own_out, affected=memory["chats"])

            doomed = widely_held[-1 - round_number]

            async def memory_delete(m: dict = doomed) -> float:
                return (await timed(client, "DELETE", f"/api/memories/{m['id']}/"))[0]

            elapsed, (wait, wait_out) = await with_concurrent_sends(client, memory_delete, [idle_chats, private_chats])
            record("memory delete", elapsed, wait=wait, own=own, own_stale=own_stale, wait_out=wait_out,
                   own_out=own_out, affected=doomed["chats"])

            async def folder_hide() -> float:
                return (await timed(client, "PATCH", f"/api/folders/{folder_id}/", json={"hidden": True}))[0]

            elapsed, (wait, wait_out) = await with_concurrent_sends(client, folder_hide, [handed_chats, private_chats])
            record("folder hide (10% of chats)", elapsed, wait=wait, own=own, own_stale=own_handed_stale,
                   wait_out=wait_out, own_out=own_out)
            await timed(client, "PATCH", f"/api/folders/{folder_id}/", json={"hidden": False})
            if only_refreshes:
                continue

            record("memory add", (await timed(client, "POST", "/api/memories/",
                                              json={"text": f"A new fact, round {round_number}."}))[0])
            elapsed, response = await timed(client, "POST", "/api/conversations/", json={})
            record("New Chat", elapsed)
            chat = response.json()["id"]
            record("first send, first delta", await send_first_event(sends, chat, "good morning, how are you"))
            record("second send (recall), first delta",
                   await send_first_event(sends, chat, f"do you remember what we said about {rng.choice(['ka', 'lo'])}"
                                                       " and the lighthouse kalomi renfe"))
            record("sidebar page /", (await timed(client, "GET", "/"))[0])
            record("conversation list API", (await timed(client, "GET", "/api/conversations/"))[0])
            record("search", (await timed(client, "GET", "/api/search/", params={"q": "kalo mi"}))[0])
            record("/api/health/", (await timed(client, "GET", "/api/health/"))[0])
    return results


def state_restored(server_url: str, dump: Path) -> tuple[str, str]:
    """The cached PostgreSQL state restored into a fresh database on `server_url`: (its URL, its name to drop)."""
    from bench.servers import pg_create_database, pg_drop_database, pg_restore_file

    database_url, created = pg_create_database(server_url)
    if created is None:
        raise SystemExit("the bench needs a fresh database; DATABASE_URL's server refused to create one")
    try:
        pg_restore_file(database_url, dump)
    except BaseException:
        pg_drop_database(server_url, created)
        raise
    return database_url, created


def run_size(root: Path, state: Path, work: Path, rounds: int, seed: int, *, only_refreshes: bool = False,
             server_url: str | None = None, extra_env: dict[str, str] | None = None) -> dict[str, dict]:
    """One run on a copy of `state` (with `server_url`: its PostgreSQL dump restored into a fresh database there,
    dropped afterwards), served by the tree `root` as `make run` serves it: Daphne and a django-q2 cluster."""
    from bench.servers import (
        app_env,
        collect_static,
        pg_drop_database,
        start_daphne,
        start_provider,
        start_queue_cluster,
        stop_process,
        stop_queue_cluster,
    )

    run_dir = work / f"run-{state.name}"
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(state, run_dir, ignore=shutil.ignore_patterns("elion.dump"))
    provider = daphne = cluster = None
    database_url = created = None
    try:
        if server_url:
            database_url, created = state_restored(server_url, state / "elion.dump")
        provider, provider_url = start_provider(work)
        env = {**app_env(run_dir, database_url, provider_url), **(extra_env or {})}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=root, env=env, check=True)
        # As a deployment's scheduled tick does within its first minute: every prompt is current, so this
        # records the reconciliation's completion (and /api/health/ then answers from that record).
        subprocess.run([sys.executable, "manage.py", "reconcile_prompts"], cwd=root, env=env, check=True,
                       capture_output=True)
        collect_static(root, env)
        daphne, base_url = start_daphne(work, env, False, log_name=f"daphne-{state.name}.log", root=root)
        cluster = start_queue_cluster(work, env, log_name=f"qcluster-{state.name}.log", root=root)
        return asyncio.run(measure(base_url, rounds, seed, database_url or run_dir / "elion.sqlite3",
                                   only_refreshes=only_refreshes))
    finally:
        stop_queue_cluster(cluster)
        stop_process(daphne)
        stop_process(provider)
        if created:
            pg_drop_database(server_url, created)
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rounds-largest", type=int, default=None,
                        help="rounds at the largest size (default --rounds): each takes minutes before issue 40")
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--baseline", type=Path, default=None, help="serve (and build with) this source tree")
    parser.add_argument("--before", type=Path, default=None,
                        help="another tree (e.g. main's, `git archive`d) measured first at each size on the same state "
                             "(built by it), then this tree: before and after side by side in one run")
    parser.add_argument("--refresh-on", default=None,
                        help="web,queue: each tree served twice side by side, its large refreshes run in the web "
                             "process (ELION_PROMPT_REFRESH_ON_QUEUE=0) and on the queue's worker (=1)")
    parser.add_argument("--server-env", default=None, metavar="NAME=A,B",
                        help="each tree served once per value of the environment variable NAME, side by side "
                             "(e.g. ELION_GC_FREEZE=0,1)")
    parser.add_argument("--only-refreshes", action="store_true",
                        help="only the idle send and the operations that refresh prompts, with sends meanwhile")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "elion-many-conversations",
                        help="where built states are kept between runs")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite",
                        help="the database the state is built in and served from (postgres: DATABASE_URL's server, "
                             "else a throwaway one from scripts/pg_tmp.sh)")
    args = parser.parse_args()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.many_conversations_report import report
    from bench.servers import postgres_server

    # A `kill` (SIGTERM) unwinds like Ctrl-C: the servers it started are stopped, its databases dropped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = (args.baseline or ROOT).resolve()
    trees = {"before": args.before.resolve(), "after": root} if args.before else {"": root}
    builder = next(iter(trees.values()))
    if args.refresh_on:
        trees = {f"{label} refresh on {where}".strip(): tree for label, tree in trees.items()
                 for where in args.refresh_on.split(",")}  # with --before, its tree builds the state both serve (each migrates it)
    if args.server_env:
        name, values = args.server_env.split("=", 1)
        trees = {f"{label} {name}={value}".strip(): tree for label, tree in trees.items() for value in values.split(",")}
    sizes = [int(s) for s in args.sizes.split(",")]
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="elion-many-"))
    loads: list[float] = []
    try:
        with postgres_server(args.database) as server_url:
            results = measured(args, trees, builder, sizes, work, loads, server_url)
        print()
        print(f"many_conversations {time.strftime('%Y-%m-%d %H:%M')}, "
              f"{'PostgreSQL' if args.database == 'postgres' else 'SQLite'}, medians of {args.rounds} "
              f"({args.rounds_largest or args.rounds} at {max(sizes):,}), 1-minute load average between "
              f"{min(loads):.1f} and {max(loads):.1f} on {os.cpu_count()} CPUs")
        for label, tree in trees.items():
            print()
            print(f"{label or 'tree'}: {tree}")
            for line in report(sizes, results[label]):
                print(line)
            for size in sizes:
                if "failed sends" in results[label][size]:
                    print(f"sends made during an operation that failed at {size:,}: "
                          f"{results[label][size]['failed sends']['times'][0]:.0f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measured(args, trees: dict[str, Path], builder: Path, sizes: list[int], work: Path, loads: list[float],
             server_url: str | None) -> dict[str, dict[int, dict[str, dict]]]:
    """Each size's state (built or from the cache; with `server_url`, PostgreSQL's), each tree's run on it, their
    tables printed as they end."""
    from bench.many_conversations_build import state_dir
    from bench.many_conversations_report import report

    results: dict[str, dict[int, dict[str, dict]]] = {label: {} for label in trees}
    for size in sizes:
        state = state_dir(args.cache, builder, size, args.seed, server_url=server_url)
        rounds = args.rounds_largest if size == max(sizes) and args.rounds_largest else args.rounds
        for label, tree in trees.items():
            print(f"{size:,} conversations, {label or 'tree'} ({tree}) …", flush=True)
            loads.append(os.getloadavg()[0])
            FAILED_SENDS.clear()
            by_size = results[label]
            by_size[size] = run_size(tree, state, work, rounds, args.seed, only_refreshes=args.only_refreshes,
                                     server_url=server_url, extra_env=_refresh_env(label))
            loads.append(os.getloadavg()[0])
            for line in report([size], by_size):
                print("  " + line)
            if FAILED_SENDS:
                print(f"  sends made meanwhile that failed: {len(FAILED_SENDS)}, e.g. {FAILED_SENDS[0]}")
                by_size[size]["failed sends"] = {"times": [float(len(FAILED_SENDS))]}
            print("  " + json.dumps({k: [round(t, 3) for t in v["times"]] for k, v in by_size[size].items()}),
                  flush=True)
    return results


def _refresh_env(label: str) -> dict[str, str]:
    """`--refresh-on`'s and `--server-env`'s variant, from the label `measured` gave it."""
    last = label.rsplit(" ", 1)[-1]
    if "=" in last:
        name, value = last.split("=", 1)
        rest = label.rsplit(" ", 1)[0] if " " in label else ""
        return {name: value, **_refresh_env(rest)}
    if label.endswith("refresh on web"):
        return {"ELION_PROMPT_REFRESH_ON_QUEUE": "0"}
    if label.endswith("refresh on queue"):
        return {"ELION_PROMPT_REFRESH_ON_QUEUE": "1"}
    return {}


if __name__ == "__main__":
    main()
