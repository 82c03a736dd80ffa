#!/usr/bin/env bash
# Development/production-ish server: daphne (HTTP + websockets) and the django-q cluster.
# HOST/PORT from the environment (defaults 127.0.0.1:8000). Ctrl-C or SIGTERM stops both within
# STOP_SECONDS (default 5) and leaves no process behind; if either exits on its own, the other is
# stopped too and its exit code is returned.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=.venv/bin/python
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
# Everything is gone within this long of Ctrl-C or SIGTERM: whatever is left a second before the end
# is killed. The queue cluster stops its workers itself in about 4 s; a job it was running is resumed
# or retried later (imports and deletions keep their progress in the database).
STOP_SECONDS="${STOP_SECONDS:-5}"

# Host check, migrations, static files (collected only when their sources changed), interrupted
# deletions: one Django start instead of four. Each step says what it does.
if ! "$PY" manage.py prepare_to_serve --host "$HOST"; then
    echo "run.sh: not serving (manage.py prepare_to_serve failed; its message is above)" >&2
    exit 1
fi

# Job control: each child gets its own process group, so a stop reaches its own children
# (django-q worker processes) and a Ctrl-C at the terminal reaches this script alone.
set -m
PIDS=()
stop_children() {
    local pid alive now deadline
    # Daphne: its group. The queue cluster: its main process only; it stops its workers, monitor and
    # pusher itself. A SIGTERM to each of them at once left the main process waiting for children
    # that were already gone (the 20 s stop, and the orphaned `manage.py qcluster`: issue 41, item 4).
    kill -TERM -- "-${PIDS[0]}" 2>/dev/null || true
    [[ -n "${PIDS[1]:-}" ]] && { kill -TERM "${PIDS[1]}" 2>/dev/null || true; }
    # A second before STOP_SECONDS runs out (room for a busy machine), whatever is left is killed.
    deadline=$(( ${EPOCHREALTIME/./} + STOP_SECONDS * 1000000 - 1000000 ))
    while true; do
        now=${EPOCHREALTIME/./}
        ((now < deadline)) || break
        alive=0
        for pid in "${PIDS[@]}"; do
            # The whole group: a worker may outlive its parent for a moment.
            pgrep -g "$pid" >/dev/null 2>&1 && alive=1
        done
        ((alive)) || break
        sleep 0.1
    done
    for pid in "${PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
on_signal() {
    # Ignored from now on, not reset: make forwards the SIGTERM it gets to this script, and an impatient
    # Ctrl-C comes twice; a second signal must not end this script before its children are stopped.
    trap '' INT TERM
    echo "run.sh: stopping daphne and qcluster..." >&2
    stop_children
    echo "run.sh: stopped" >&2
    exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

echo "run.sh: serving on http://$HOST:$PORT/ (Ctrl-C stops)" >&2
.venv/bin/daphne -b "$HOST" -p "$PORT" elion.asgi:application &
PIDS+=($!)
"$PY" manage.py qcluster &
PIDS+=($!)

set +e
wait -n "${PIDS[@]}"
rc=$?
set -e
trap - INT TERM
echo "run.sh: a server process exited (status $rc); stopping the other" >&2
stop_children
exit "$rc"
