#!/usr/bin/env bash
# A newcomer's first minutes: clone a commit into a throwaway directory, run `make run` there
# with an empty pip cache and its own venv, and time it from the clone until the first page
# answers 200. Prints the seconds, the venv's installed size, and how long pip took.
#
#   bash bench/first_page.sh [REF]        (default: HEAD of this checkout)
#
# Uses the machine's pip configuration as it is (indexes, find-links, constraints), so the
# figures are this machine's: compare two refs measured the same way, not across machines.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$PWD"
REF="${1:-HEAD}"
COMMIT="$(git -C "$REPO" rev-parse --short "$REF")"
WORK="$(python3 -c 'import tempfile; print(tempfile.mkdtemp(prefix="elion-first-page."))')"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
RUN_PID=""
# Every process under PID (run.sh puts Daphne and the queue cluster in process groups of their own).
descendants() {
    local child
    for child in $(ps -o pid= --ppid "$1"); do
        echo "$child"
        descendants "$child"
    done
}
cleanup() {
    if [[ -n "$RUN_PID" ]]; then
        local pids
        pids="$RUN_PID $(descendants "$RUN_PID")"
        kill -TERM $pids 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 $pids 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL $pids 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

start=$(date +%s.%N)
git clone -q --no-local "$REPO" "$WORK/elion"
git -C "$WORK/elion" checkout -q "$COMMIT"
cd "$WORK/elion"
PIP_CACHE_DIR="$WORK/pip-cache" ELION_DATA_DIR="$WORK/data" PORT="$PORT" \
    make run >"$WORK/run.log" 2>&1 </dev/null &
RUN_PID=$!
code=000
installed=""
while kill -0 "$RUN_PID" 2>/dev/null; do
    if [[ -z "$installed" ]] && compgen -G ".venv/.installed*" >/dev/null; then
        installed=$(date +%s.%N)
    fi
    code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/" || true)"
    [[ "$code" == 200 ]] && break
    sleep 0.5
done
end=$(date +%s.%N)
if [[ "$code" != 200 ]]; then
    echo "first_page: make run ended before the first page answered (last status $code)" >&2
    tail -30 "$WORK/run.log" >&2
    exit 1
fi
venv_size="$(du -sm .venv | cut -f1)"
printf 'commit %s: first page after %.0f s (packages installed after %.0f s); venv %s MB (%s packages)\n' \
    "$COMMIT" "$(echo "$end - $start" | bc)" "$(echo "${installed:-$end} - $start" | bc)" "$venv_size" \
    "$(.venv/bin/python -m pip list 2>/dev/null | tail -n +3 | wc -l)"
