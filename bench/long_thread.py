"""Does a send, the chat page and the messages API stay fast as a thread grows?

Issue 18's proof: threads of `--lengths` live-branch messages (10, 1,000, 3,000
and 10,000) and one of `--image-length` (3,000) messages with `--images`
(200) image attachments of `--image-bytes` (1 MB) each, all in one database,
measured side by side in one run (threads interleaved round by round, their
order rotating) through real HTTP to a real Daphne (the app
in its own process) and the scripted provider (`tests.support.scripted_provider`
in its own process). For each thread, every round:

  page   GET /c/<id>/ until the whole body is read: time and bytes;
  API    GET /api/conversations/<id>/messages/?limit=50 (the first page of
         the paged API; a tree that ignores `limit` answers the whole live
         branch, and the bytes and item count show it): time and bytes;
  app    POST /api/conversations/<id>/messages/ (SSE) until the data of the
         first `event: delta` frame arrives; the provider is scripted to
         answer at once with a three-chunk text, and the stream is read to
         `done` before anything else happens;
  SDK    the exact request body the provider recorded for that send
         (`GET /_control/requests`), sent again by the `openai` SDK
         (`AsyncOpenAI`, `max_retries=0`) the app's way (transcript/provider/
         gateway.py, WIRE_AS_IS: the conversation in `extra_body`), until its
         first text delta;
  added  app − SDK of the same round: what the app itself costs before the
         first token. The table shows its median over the rounds.
  own    (send start → the provider has read the request's headers) − (SDK
         call start → the provider has read the replay's headers), the same
         round: the app's own work before its request (reading the thread,
         verifying blobs, encoding, assembling), without the body's transfer,
         which both sides pay after the headers (for 200 images of 1 MB, 110
         MB that take longer to cross, and vary more, than the app's work).
         Both sides serialise the same body before the headers go (the SDK
         builds it whole), so that cancels too. The provider stamps the
         headers with `time.monotonic()` (CLOCK_MONOTONIC, one clock for
         every process on Linux), as the bench stamps the starts. That the
         serialisation cancels is only true on average: for a 110 MB body it
         takes hundreds of ms on each side and varies by as much, so `own`
         stays noisy there; `--stages` gives the figure without it:
  to SDK (`--stages`) send start → the app calls the provider gateway
         (`stream_reply`), stamped inside the app (Daphne runs
         `bench.send_overhead:instrumented_application`, whose hooks time
         each SQL statement too): the app's whole work before the SDK takes
         the request (HTTP, reading the thread, verifying and encoding the
         blobs, assembling), without the SDK's serialisation or the transfer.

Every figure is also shown as a ratio to the first (shortest) thread's.

Each thread is built (`bench/long_thread_build.py`) through the services of
the tree being measured: `conversation_create`, `message_append` for every
message, `attachment_upload` + `attachments_commit` for the images. It has no
stored static prompt: one unmeasured warm-up send per thread stores it, as a
real first send does, so every measured send is a steady-state one. After
every send (warm-up included) the bench rewinds the conversation to its
original head (`POST …/rewind/`), so every round measures the same live
branch; the rewound turns stay in the tree off the live branch (2 per round),
so a thread's whole tree grows by 2 messages per round while its live branch
does not. The warm-up round also checks that the SDK's request body equals
the app's.

    .venv/bin/python -m bench.long_thread --database sqlite             # ≈ 3 min
    .venv/bin/python -m bench.long_thread --database sqlite,postgres    # PostgreSQL: DATABASE_URL's
        # server (a fresh database on it), or a throwaway one from scripts/pg_tmp.sh when unset
    .venv/bin/python -m bench.long_thread --lengths 10,1000 --images 20 --rounds 3   # quick

`--baseline DIR` measures a second source tree (an export of an older commit,
`git archive REV | tar -x -C DIR`) side by side: each tree gets its own
database, migrated and built by its own code with the same seed (so the same
texts and images), and its own Daphne; rounds alternate between the trees,
and the table shows both trees' figures and this tree's ratio to the
baseline's.

A benchmark, not a test: it asserts nothing about timing. It fails only when
the app or the provider misbehaves (a non-200, an error event, a missing
delta, an SDK request that differs from the app's). Everything it starts
(provider, Daphne processes, PostgreSQL databases or server) is stopped and
its temp dir removed, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.long_thread_report import PAGE_LIMIT, Samples, report  # noqa: E402
from bench.send_overhead import QUICK_REPLY, time_app  # noqa: E402 - after the path fix above
from bench.servers import (  # noqa: E402 - after the path fix above
    API_KEY,
    TRACE_ENV,
    BenchError,
    app_env,
    collect_static,
    pg_create_database,
    pg_drop_database,
    postgres_server,
    start_daphne,
    start_provider,
    stop_process,
)

BUILDER = Path(__file__).resolve().with_name("long_thread_build.py")
SEND_TEXT = "How did the garden look this morning? Tell me about the light on the river too."
SELECTORS = ("chat.completions", "responses")


def thread_cases(lengths: list[int], images: int, image_length: int, image_bytes: int) -> list[dict]:
    """The builder's spec: one case per length, then the attachment case (if any images)."""
    cases = [{"label": f"{n:,}", "length": n} for n in lengths]
    if images:
        cases.append(
            {
                "label": f"{image_length:,} + {images} images",
                "length": image_length,
                "images": images,
                "image_bytes": image_bytes,
            }
        )
    return cases


# --- running it --------------------------------------------------------------------


def build(tree_root: Path, env: dict[str, str], spec: dict, log: Path) -> dict:
    """Migrate and fill one tree's database with its own code (`long_thread_build.py`, run by path)."""
    with open(log, "wb") as err:
        done = subprocess.run(
            [sys.executable, str(BUILDER), "--spec", json.dumps(spec)],
            cwd=tree_root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    if done.returncode != 0:
        raise BenchError(f"building the threads in {tree_root} failed:\n{log.read_text()[-3000:]}")
    last = done.stdout.decode().strip().splitlines()[-1]
    if not last.startswith("BUILT "):
        raise BenchError(f"the builder printed no result:\n{done.stdout.decode()[-2000:]}")
    return json.loads(last[6:])


async def provider_request(control) -> dict:
    """The one request the provider recorded since the last clear: its body and its `headers_at`."""
    recorded = (await control.get("/_control/requests")).json()
    posts = [r for r in recorded if r["method"] == "POST"]
    if len(posts) != 1:
        raise BenchError(f"expected one provider request, the provider recorded {len(posts)}")
    return posts[0]


def request_shape(selector: str, body: dict) -> tuple[int, int, int]:
    """(input items, JSON bytes, image parts) of a provider request body."""
    items = body["input"] if selector == "responses" else body["messages"]
    images = sum(
        1
        for item in items
        if isinstance(item.get("content"), list)
        for part in item["content"]
        if part.get("type") in ("input_image", "image_url")
    )
    return len(items), len(json.dumps(body, separators=(",", ":")).encode()), images


async def time_sdk(sdk, selector: str, body: dict) -> tuple[float, float]:
    """The recorded body sent again the app's way (WIRE_AS_IS): (seconds until the first text delta,
    `time.monotonic()` at the call's start)."""
    rest = {key: value for key, value in body.items() if key not in ("model", "stream", "tools")}
    typed = {"tools": body["tools"]} if "tools" in body else {}  # the gateway passes tools as a typed argument
    first = None
    started_at = time.monotonic()
    start = time.perf_counter()
    if selector == "responses":
        stream = await sdk.responses.create(model=body["model"], stream=True, extra_body=rest, **typed)
        async with stream:
            async for event in stream:
                if event.type == "response.output_text.delta" and first is None:
                    first = time.perf_counter()
    else:
        stream = await sdk.chat.completions.create(
            model=body["model"], messages=[], stream=True, extra_body=rest, **typed
        )
        async with stream:
            async for chunk in stream:
                if first is None and any(choice.delta.content for choice in chunk.choices):
                    first = time.perf_counter()
    if first is None:
        raise BenchError("the SDK stream had no text delta")
    return first - start, started_at


async def time_get(client, path: str) -> tuple[float, bytes]:
    start = time.perf_counter()
    response = await client.get(path)
    elapsed = time.perf_counter() - start
    if response.status_code != 200:
        raise BenchError(f"GET {path} answered {response.status_code}: {response.text[:300]}")
    return elapsed, response.content


async def rewind(client, thread: dict) -> None:
    response = await client.post(
        f"/api/conversations/{thread['conversation_id']}/rewind/", json={"message_id": thread["head_id"]}
    )
    if response.status_code != 200:
        raise BenchError(f"rewind answered {response.status_code}: {response.text[:300]}")


def stage_stamp(trace_file: Path, conversation_id: str, stage: str) -> float:
    """The app's stamp (perf_counter, CLOCK_MONOTONIC) of `stage` in its newest trace of that conversation's send."""
    for line in reversed(trace_file.read_text().splitlines()):
        trace = json.loads(line)
        if trace.get("conversation") == conversation_id and stage in trace:
            return trace[stage]
    raise BenchError(f"the instrumented app wrote no {stage!r} stamp for {conversation_id}")


async def one_round(
    client, control, sdk, thread: dict, selector: str, samples: Samples | None, trace_file: Path | None = None
) -> None:
    """Page, API page, a send (then rewind), the SDK replay; `samples` None: warm-up (checks the replay).
    `trace_file`: the instrumented app's (`--stages`)."""
    cid = thread["conversation_id"]
    page_s, page = await time_get(client, f"/c/{cid}/")
    api_s, api = await time_get(client, f"/api/conversations/{cid}/messages/?limit={PAGE_LIMIT}")
    await control.post("/_control/clear")
    await control.post("/_control/script", json=[QUICK_REPLY])
    app_started_at = time.monotonic()
    sent_app = await time_app(client, cid, SEND_TEXT)
    app = sent_app["ttfd"]
    sent = await provider_request(control)
    body = sent["body"]
    await rewind(client, thread)
    await control.post("/_control/clear")
    await control.post("/_control/script", json=[QUICK_REPLY])
    sdk_s, sdk_started_at = await time_sdk(sdk, selector, body)
    again = await provider_request(control)
    if samples is None:
        replayed = again["body"]
        if replayed != body:
            differing = sorted(k for k in {*body, *replayed} if body.get(k) != replayed.get(k))
            raise BenchError(f"the SDK's request differs from the app's in {differing}")
        return
    items, size, images = request_shape(selector, body)
    samples.app.append(app)
    samples.sdk.append(sdk_s)
    samples.app_headers.append(sent["headers_at"] - app_started_at)
    samples.sdk_headers.append(again["headers_at"] - sdk_started_at)
    if trace_file is not None:  # written when the reply is done: long before the SDK replay above ended
        samples.to_sdk.append(stage_stamp(trace_file, cid, "stream_call") - sent_app["start"])
    samples.page.append(page_s)
    samples.page_bytes.append(len(page))
    samples.api.append(api_s)
    samples.api_bytes.append(len(api))
    samples.api_items.append(len(json.loads(api).get("results", [])))
    samples.request_items.append(items)
    samples.request_bytes.append(size)
    samples.request_images.append(images)


async def measure(
    app_urls: dict[str, str], builds: dict[str, dict], provider_url: str, args, traces: dict[str, Path]
) -> dict:
    import httpx
    import openai

    trees = list(app_urls)
    labels = [thread["label"] for thread in builds[trees[0]]["threads"]]
    samples = {tree: {label: Samples() for label in labels} for tree in trees}
    clients = {tree: httpx.AsyncClient(base_url=url, timeout=600) for tree, url in app_urls.items()}
    sdk = openai.AsyncOpenAI(api_key=API_KEY, base_url=provider_url, max_retries=0, timeout=600)
    try:
        async with httpx.AsyncClient(base_url=provider_url.removesuffix("/v1"), timeout=600) as control:
            for round_no in range(1 + args.rounds):
                # The threads' order rotates every round, and the trees' order per thread too.
                order = list(range(len(labels)))
                order = order[round_no % len(order):] + order[:round_no % len(order)]
                for index in order:
                    label = labels[index]
                    shift = (round_no + index) % len(trees)
                    for tree in trees[shift:] + trees[:shift]:
                        thread = builds[tree]["threads"][index]
                        target = samples[tree][label] if round_no else None
                        await one_round(
                            clients[tree], control, sdk, thread, args.selector, target, traces.get(tree)
                        )
                print(f"  round {round_no}/{args.rounds} done" + (" (warm-up)" if not round_no else ""), flush=True)
    finally:
        await sdk.close()
        for client in clients.values():
            await client.aclose()
    figures = {tree: {label: samples[tree][label].figures() for label in labels} for tree in trees}
    return {"trees": trees, "labels": labels, "figures": figures}


def run_database(database: str, trees: dict[str, Path], provider_url: str, tmp: Path, args) -> dict:
    """Build each tree's database, start its Daphne, measure, stop; the figures."""
    with postgres_server(database) as server_url:
        return _run_trees(database, server_url, trees, provider_url, tmp, args)


def _run_trees(database: str, server_url: str | None, trees: dict[str, Path], provider_url: str, tmp: Path,
               args) -> dict:
    created: list[str] = []
    daphnes: list[subprocess.Popen] = []
    try:
        spec = {
            "seed": args.seed,
            "cases": thread_cases(args.lengths, args.images, args.image_length, args.image_bytes),
        }
        builds, app_urls, traces = {}, {}, {}
        for index, (tree, root) in enumerate(trees.items()):
            database_url = None
            if server_url:
                database_url, name = pg_create_database(server_url)
                if name is None:
                    raise BenchError("the bench needs a fresh database per tree; DATABASE_URL's server refused")
                created.append(name)
            data_dir = tmp / f"{database}-{index}" / "data"
            data_dir.mkdir(parents=True)
            env = app_env(data_dir, database_url, provider_url)
            env["ELION_API_SELECTOR"] = args.selector
            print(f"{database}: building the threads in {tree} ({root}) …", flush=True)
            builds[tree] = build(root, env, spec, tmp / f"build-{database}-{index}.log")
            collect_static(root, env)  # the chat page is measured as `make run` serves it
            if args.stages:
                traces[tree] = tmp / f"trace-{database}-{index}.jsonl"
                traces[tree].touch()
                env[TRACE_ENV] = str(traces[tree])
            process, app_urls[tree] = start_daphne(
                tmp, env, args.stages, log_name=f"daphne-{database}-{index}.log", root=root
            )
            daphnes.append(process)
        load_before = os.getloadavg()[0]
        result = asyncio.run(measure(app_urls, builds, provider_url, args, traces))
        result.update(builds=builds, roots={tree: str(root) for tree, root in trees.items()},
                      load=(load_before, os.getloadavg()[0]))
        return result
    finally:
        for process in daphnes:
            stop_process(process)
        for name in created:
            pg_drop_database(server_url, name)


def int_list(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated integers") from exc
    if not values or any(v < 2 or v % 2 for v in values):
        raise argparse.ArgumentTypeError("thread lengths are even numbers ≥ 2 (each thread ends with a reply)")
    return values


def database_list(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values or any(v not in ("sqlite", "postgres") for v in values):
        raise argparse.ArgumentTypeError("--database takes sqlite, postgres or both (sqlite,postgres)")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int_list, default=[10, 1000, 3000, 10000],
                        help="live-branch messages per thread (even; the first is every ratio's base)")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per thread (after one warm-up)")
    parser.add_argument("--database", type=database_list, default=["sqlite"], help="sqlite, postgres or sqlite,postgres")
    parser.add_argument("--selector", choices=SELECTORS, default="chat.completions", help="the app's API selector")
    parser.add_argument("--images", type=int, default=200, help="images in the attachment case (0: no such case)")
    parser.add_argument("--image-length", type=int, default=3000, help="live-branch messages of the attachment case")
    parser.add_argument("--image-bytes", type=int, default=1024 * 1024, help="bytes per image")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another source tree measured side by side (each tree its own database)")
    parser.add_argument("--stages", action="store_true",
                        help="run Daphne instrumented and add send start → the app calls the SDK (to SDK)")
    parser.add_argument("--keep-temp", action="store_true", help="keep the temp dir (logs) for inspection")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.images and (args.image_length < 2 or args.image_length % 2 or args.images > args.image_length // 2):
        parser.error("--image-length must be even and hold at least --images user turns")
    if args.image_bytes < 16:
        parser.error("--image-bytes must be at least 16")
    if args.baseline and not (args.baseline / "elion" / "asgi.py").exists():
        parser.error(f"--baseline {args.baseline} is not a source tree of this app")
    trees = {"baseline": args.baseline.resolve()} if args.baseline else {}
    trees["this tree"] = ROOT

    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="elion-long-thread-"))
    provider = None
    try:
        provider, provider_url = start_provider(tmp)
        outputs = []
        for database in args.database:
            result = run_database(database, trees, provider_url, tmp, args)
            outputs.append(report(database, result, args))
            print()
            print("\n".join(outputs[-1]), flush=True)
        if len(outputs) > 1:
            print("\n\n" + "\n\n".join("\n".join(lines) for lines in outputs))
        print(f"\ntotal runtime {time.perf_counter() - started:.0f} s")
        return 0
    finally:
        stop_process(provider)
        if args.keep_temp:
            print(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
