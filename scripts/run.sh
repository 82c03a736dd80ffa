#!/usr/bin/env bash
# Development/production-ish server: daphne (HTTP + websockets) and the django-q cluster.
# HOST/PORT from the environment (defaults 127.0.0.1:8000). Ctrl-C or SIGTERM stops both;
# if either exits on its own, the other is stopped too and its exit code is returned.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=.venv/bin/python
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"

# The app refuses non-loopback hosts unless ELION_OWNER_PASSWORD is set.
if ! "$PY" manage.py check_bind --host "$HOST"; then
    echo "run.sh: refusing to start on host $HOST (manage.py check_bind failed)" >&2
    exit 1
fi

"$PY" manage.py migrate --noinput
"$PY" manage.py collectstatic --noinput -v 0
# Startup hook: finish permanent deletions a crash interrupted (the django-q2 schedule also does).
"$PY" manage.py finish_pending_deletions

# Job control: each child gets its own process group, so stopping a group also
# stops its own children (django-q worker processes).
set -m
PIDS=()
stop_children() {
    local pid i
    for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for ((i = 0; i < 100; i++)); do   # up to 20 s for a graceful stop
        local alive=0
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.2
    done
    for pid in "${PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
on_signal() {
    trap - INT TERM
    echo "run.sh: stopping daphne and qcluster..." >&2
    stop_children
    exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

echo "run.sh: serving on http://$HOST:$PORT/" >&2
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
