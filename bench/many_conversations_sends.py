"""`bench/many_conversations.py`'s measuring: timed requests, and sends made one after another (during an
operation, or idle into stale chats), each to its first delta."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

# Sends made during an operation that answered an error (e.g. 503 `database_busy`), printed with the table.
FAILED_SENDS: list[str] = []
SEND_CHATS = 6  # chats the sends during an operation (and the idle sends) go to, each once its reply ended
IDLE_SENDS = 12  # idle sends per round, made one after another as the sends during an operation are


# --- measuring -----------------------------------------------------------------------------------


async def checked(response, what: str):
    if response.status_code >= 400:
        raise SystemExit(f"{what} answered {response.status_code}: {response.text[:500]}")
    return response


async def timed(client, method: str, url: str, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    response = await client.request(method, url, **kwargs)
    elapsed = time.perf_counter() - started
    await checked(response, f"{method} {url}")
    return elapsed, response


async def send_first_event(client, conversation_id: str, content: str, *, failures: list | None = None,
                           first: asyncio.Future | None = None) -> float:
    """Seconds from POSTing a send to its first delta (the stream read to its end). With `failures`, a send
    that answers an error instead (e.g. 503 `database_busy`) is listed there and its time to the error
    returned; without, it ends the bench. `first`: a future given those seconds as soon as the first event
    arrives (the stream is still read to its end)."""
    from bench.servers import BenchError

    started = time.perf_counter()
    arrived = None
    event = None
    error = None
    async with client.stream("POST", f"/api/conversations/{conversation_id}/messages/",
                             json={"content": content}) as response:
        if response.status_code != 200:
            error = f"send answered {response.status_code}: {(await response.aread())[:300]!r}"
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "delta" and arrived is None:
                arrived = time.perf_counter()
                if first is not None:
                    first.set_result(arrived - started)
            elif line.startswith("data: ") and event == "error" and arrived is None:
                error = f"send streamed an error: {line[6:300]}"
                arrived = time.perf_counter()
                if first is not None:
                    first.set_result(arrived - started)
    if error is None and arrived is None:
        error = "send streamed no delta"
    if first is not None and not first.done():
        first.set_result(time.perf_counter() - started)
    if error is not None:
        if failures is None:
            raise BenchError(error)
        failures.append(error)
        return (arrived or time.perf_counter()) - started
    return arrived - started


async def sends_one_after_another(client, chats: list[str] | list[list[str]], *, until: asyncio.Event | None = None,
                                   count: int = 0, starts: list[tuple[float, float]] | None = None
                                   ) -> list[float] | list[list[float]]:
    """Sends made one after another (`count` of them, or until `until` is set), each into a chat whose previous
    reply has ended: the next starts as soon as the previous one's first event arrived, so a reply that cannot
    finish (its last write waiting) never hides how long the next send waits. Returns each send's seconds to its
    first event. `chats` as groups (a list of lists): the sends go to each group in turn, and the seconds are
    returned per group. `starts`: given (start, seconds) of every send, its start by `time.perf_counter()`."""
    grouped = bool(chats) and isinstance(chats[0], list)
    groups: list[list[str]] = chats if grouped else [chats]  # type: ignore[assignment]
    free: list[asyncio.Queue[str]] = [asyncio.Queue() for _ in groups]
    for queue, group in zip(free, groups, strict=True):
        for chat in group:
            queue.put_nowait(chat)
    waits: list[list[float]] = [[] for _ in groups]
    streams: list[asyncio.Task] = []

    async def one(chat: str, index: int, first: asyncio.Future, queue: asyncio.Queue) -> None:
        try:
            await send_first_event(client, chat, f"meanwhile {index}", failures=FAILED_SENDS, first=first)
        finally:
            queue.put_nowait(chat)

    index = 0
    while (until is None and index < count) or (until is not None and not until.is_set()):
        group = index % len(groups)
        chat = await free[group].get()
        first = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        streams.append(asyncio.create_task(one(chat, index, first, free[group])))
        waits[group].append(await first)
        if starts is not None:
            starts.append((started, waits[group][-1]))
        index += 1
    await asyncio.gather(*streams)
    return waits if grouped else waits[0]


async def with_concurrent_sends(client, operation, chats: list[str] | list[list[str]]) -> tuple[float, list]:
    """Run `operation` (a coroutine factory returning its seconds) while sends are made one after another
    (`sends_one_after_another`); returns (the operation's seconds, each send's seconds to its first event).
    Prints the three longest waits and when each started in the operation (where a wait comes from: the
    operation's own transaction at its start, or its refresh after)."""
    done = asyncio.Event()
    seconds: list[float] = []
    starts: list[tuple[float, float]] = []
    began = time.perf_counter()

    async def run() -> None:
        try:
            seconds.append(await operation())
        finally:
            done.set()

    task = asyncio.create_task(run())
    waits = await sends_one_after_another(client, chats, until=done, starts=starts)
    await task
    longest = sorted(starts, key=lambda start: -start[1])[:3]
    where = ", ".join(f"{wait * 1000:.0f} at {(start - began) * 1000:.0f}" for start, wait in longest)
    print(f"    longest waits (ms, started at ms of the operation's {seconds[0] * 1000:.0f}): {where}", flush=True)
    return seconds[0], waits


def prompts_marked_stale(database: Path | str, chats: list[str]) -> None:
    """Mark these chats' stored prompts stale, as a marking operation does, with no refresh after it: the next
    send into each rebuilds its prompt (seed 000's freshness rule), the baseline of a send into a chat in an
    operation's scope. `database`: the SQLite file, or the run's PostgreSQL DATABASE_URL. A tree before the
    marks had rows of their own (`transcript_stale_prompt`, migration `transcript/0005`) sets the column."""
    import uuid

    if isinstance(database, str):
        import psycopg

        ids = [uuid.UUID(chat) for chat in chats]
        with psycopg.connect(database, autocommit=True) as connection:
            rows = connection.execute("SELECT to_regclass('transcript_stale_prompt') IS NOT NULL").fetchone()
            if rows[0]:
                connection.execute("INSERT INTO transcript_stale_prompt (conversation_id) SELECT unnest(%s::uuid[])"
                                   " ON CONFLICT DO NOTHING", [ids])
            else:
                connection.execute("UPDATE conversations_conversation SET prompt_stale = TRUE WHERE id = ANY(%s)", [ids])
        return
    import sqlite3

    ids = [uuid.UUID(chat).hex for chat in chats]
    with sqlite3.connect(database, timeout=60) as connection:
        if connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'transcript_stale_prompt'").fetchone():
            connection.executemany(
                "INSERT INTO transcript_stale_prompt (conversation_id) VALUES (?) ON CONFLICT DO NOTHING",
                [(chat,) for chat in ids])
        else:
            connection.execute(
                f"UPDATE conversations_conversation SET prompt_stale = 1 WHERE id IN ({', '.join('?' * len(ids))})", ids)


async def stale_sends(client, db_path: Path | str, chats: list[str], rounds: int = 2) -> list[float]:
    """Idle sends into stale chats: each chat marked, then one send into each, one after another; `rounds` times."""
    waits: list[float] = []
    for _ in range(rounds):
        prompts_marked_stale(db_path, chats)
        waits += await sends_one_after_another(client, chats, count=len(chats))
    return waits


async def chats_made(client, sends, count: int, **fields) -> list[str]:
    """`count` new chats (`POST /api/conversations/` with `fields`), each with a first send made."""
    chats = [(await checked(await client.post("/api/conversations/", json=fields), "new chat")).json()["id"]
             for _ in range(count)]
    for chat in chats:
        await send_first_event(sends, chat, "hello there, first words")
    return chats
