#!/usr/bin/env bash
# The test tiers (docs/testing.md):
#   check     lint, import contract, migrations, then the fast tier on SQLite:
#             -m "not slow and not browser and not fuzz" (no server processes, no browser)
#   all       the whole suite on SQLite and, at the same time, on a throwaway PostgreSQL without the
#             `browser`, `fuzz` and `nodb` tests, which the database cannot change (each half's output
#             shown when it ends; ELION_TEST_SERIAL=1: one after the other)
#   sqlite    the whole suite on SQLite
#   postgres  the PostgreSQL half of `all`
#
#   scripts/test.sh [check|all|sqlite|postgres]   (default: all)
#   PYTEST_ARGS="-k foo -x" scripts/test.sh       extra pytest arguments (shell-quoted)
#   ELION_TEST_SHARDS=N                           pytest processes per database (default 2); for --pdb,
#                                                 run .venv/bin/python -m pytest yourself
#   ELION_RECORD_DURATIONS=1                      after a passing run, write each module's seconds into
#                                                 tests/durations.json (what the shares are dealt by)
#
# Serially it stops at the first failing half; always stops PostgreSQL and removes temp dirs.
# pytest exit code 5 ("no tests collected") counts as a failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
PY="$ROOT/.venv/bin/python"
MODE="${1:-all}"
case "$MODE" in
    check | all | sqlite | postgres) ;;
    *) echo "usage: $0 [check|all|sqlite|postgres]" >&2; exit 2 ;;
esac
[[ -x "$PY" ]] || { echo "test.sh: $PY missing; run 'make venv' first" >&2; exit 1; }

# Extra pytest args, honouring shell quoting: PYTEST_ARGS="-k 'a and b'".
eval "EXTRA_ARGS=(${PYTEST_ARGS:-})"
PYTEST=("$PY" -m pytest -p no:cacheprovider -q)
# The tiers' marker expressions (pytest.ini declares the markers).
FAST_TIER=(-m "not slow and not browser and not fuzz")
BOTH_DATABASES=(-m "not browser and not fuzz and not nodb")
# Each half's arguments: its tier, then the caller's (so a caller's own -m wins).
SQLITE_ARGS=("${EXTRA_ARGS[@]}")
POSTGRES_ARGS=("${BOTH_DATABASES[@]}" "${EXTRA_ARGS[@]}")

SUMMARY=()
PG_DIR=""
PRECOLLECT_PID=""
# Fresh per-run scratch space; each half gets its own ELION_DATA_DIR inside it.
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/elion-test.XXXXXX")"

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n "$PRECOLLECT_PID" ]]; then
        kill -TERM "$PRECOLLECT_PID" 2>/dev/null || true
        wait "$PRECOLLECT_PID" 2>/dev/null || true
    fi
    if [[ -n "$PG_DIR" ]]; then
        "$ROOT/scripts/pg_tmp.sh" stop "$PG_DIR" || true
    fi
    rm -rf "$SCRATCH"
    echo
    echo "==================== test summary ===================="
    if ((${#SUMMARY[@]} == 0)); then
        echo "  (no test run completed)"
    else
        printf '  %s\n' "${SUMMARY[@]}"
    fi
    if ((rc == 0)); then echo "  RESULT: PASS"; else echo "  RESULT: FAIL (exit $rc)"; fi
    exit "$rc"
}
# pytest's pids while they run in the background (start_shards).
CHILDREN=()
on_signal() {
    echo "test.sh: interrupted (SIG$1)" >&2
    local pid i
    for pid in "${CHILDREN[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${CHILDREN[@]}"; do
        for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    exit "$2"
}
trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# ---------------------------------------------------------------- system deps
# Installed with apt-get only when missing (one `apt-get update` and one install for all of them).
# Paths are checked directly: CI's PATH may lack /usr/sbin, where nginx lives.
MISSING=()
need() {  # need PACKAGE PATH...: PACKAGE is missing unless one of the PATHs exists
    local package="$1" path
    shift
    for path in "$@"; do
        compgen -G "$path" >/dev/null && return 0
    done
    MISSING+=("$package")
}
install_missing() {
    ((${#MISSING[@]} == 0)) && return 0
    echo "test.sh: apt-get install ${MISSING[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq -o Dpkg::Use-Pty=0 "${MISSING[@]}" >/dev/null
}

# ---------------------------------------------------------------- helpers
# suite_result LABEL RC SECS: record one half's outcome; fails unless pytest passed.
suite_result() {
    local label="$1" rc="$2" secs="$3"
    case "$rc" in
        0)
            SUMMARY+=("$label: PASSED (${secs}s)")
            return 0 ;;
        5)
            echo "test.sh: pytest collected NO tests on $label -- a suite that runs nothing does not pass" >&2
            SUMMARY+=("$label: FAILED - no tests collected (pytest exit 5)") ;;
        *)
            SUMMARY+=("$label: FAILED (pytest exit $rc, ${secs}s)") ;;
    esac
    return 1
}

# Each database's share of the suite runs in ELION_TEST_SHARDS pytest processes at once (default 2, one
# per core here), whole test modules dealt between them (tests/conftest.py, ELION_TEST_SHARD=k/n). Every
# process has its own ELION_DATA_DIR (SQLite file, blobs) and, on PostgreSQL, its own test database
# (pytest-django's suffix from TOX_PARALLEL_ENV); every server a test starts takes a free port.
SHARDS="${ELION_TEST_SHARDS:-2}"
LABELS=()
LOGS=()
# ELION_RECORD_DURATIONS=1: every process writes its modules' seconds here (tests/support/shards.py).
DURATIONS_DIR=""
if [[ -n "${ELION_RECORD_DURATIONS:-}" ]]; then
    DURATIONS_DIR="$SCRATCH/durations"
fi

# start_shards DATABASE ARGS...: start this database's processes in the background, output to logs.
start_shards() {
    local database="$1" k dir log
    shift
    for ((k = 1; k <= SHARDS; k++)); do
        dir="$SCRATCH/$database-$k"
        log="$SCRATCH/pytest-$database-$k.log"
        mkdir "$dir"
        if [[ "$database" == sqlite ]]; then
            env -u DATABASE_URL ELION_DATA_DIR="$dir" ELION_TEST_SHARD="$k/$SHARDS" ELION_TEST_DURATIONS_DIR="$DURATIONS_DIR" \
                "${PYTEST[@]}" "$@" >"$log" 2>&1 </dev/null &
        else
            env ELION_DATA_DIR="$dir" DATABASE_URL="$DATABASE_URL" ELION_TEST_SHARD="$k/$SHARDS" ELION_TEST_DURATIONS_DIR="$DURATIONS_DIR" \
                TOX_PARALLEL_ENV="shard$k" "${PYTEST[@]}" "$@" >"$log" 2>&1 </dev/null &
        fi
        CHILDREN+=($!)
        LABELS+=("$database $k/$SHARDS")
        LOGS+=("$log")
    done
}

# wait_shards START: wait for every started process, show each log whole, record each result.
wait_shards() {
    local start="$1" i rc failed=0 pid other
    local -a rcs=() secs=() running=("${CHILDREN[@]}")
    local -A index_of=()
    for i in "${!CHILDREN[@]}"; do index_of[${CHILDREN[$i]}]=$i; done
    # Each process's own seconds: reaped in the order they end.
    while ((${#running[@]} > 0)); do
        set +e
        wait -n -p pid "${running[@]}"
        rc=$?
        set -e
        i=${index_of[$pid]}
        rcs[i]=$rc
        secs[i]=$((SECONDS - start))
        local -a still=()
        for other in "${running[@]}"; do [[ "$other" == "$pid" ]] || still+=("$other"); done
        running=("${still[@]}")
    done
    for i in "${!LOGS[@]}"; do
        echo
        echo "==================== pytest on ${LABELS[$i]} ===================="
        cat "${LOGS[$i]}"
    done
    # A narrow run (ARGS naming a few tests) may leave a share empty (pytest exit 5): that share passes
    # as long as another share of the same database ran tests.
    local ran=" "
    for i in "${!LABELS[@]}"; do
        ((rcs[i] != 5)) && ran+="${LABELS[$i]%% *} "
    done
    for i in "${!LABELS[@]}"; do
        if ((rcs[i] == 5)) && [[ "$ran" == *" ${LABELS[$i]%% *} "* ]]; then
            SUMMARY+=("${LABELS[$i]}: no tests in this share")
            continue
        fi
        suite_result "${LABELS[$i]}" "${rcs[$i]}" "${secs[$i]}" || failed=1
    done
    CHILDREN=()
    LABELS=()
    LOGS=()
    return "$failed"
}

# record_durations: after a passing run with ELION_RECORD_DURATIONS=1, merge what the processes wrote.
record_durations() {
    [[ -n "$DURATIONS_DIR" ]] || return 0
    if ((${#EXTRA_ARGS[@]} > 0)); then
        echo "test.sh: durations not recorded: PYTEST_ARGS narrowed the run" >&2
        return 0
    fi
    "$PY" "$ROOT/scripts/test_durations.py" "$DURATIONS_DIR" "scripts/test.sh $MODE, $SHARDS processes per database"
}

start_postgres() {
    echo
    echo "==================== starting PostgreSQL ===================="
    PG_ENV="$("$ROOT/scripts/pg_tmp.sh" start)" || { SUMMARY+=("postgresql: FAILED - could not start server"); exit 1; }
    eval "$PG_ENV"   # PG_TMP_DIR, PG_PORT, DATABASE_URL
    PG_DIR="$PG_TMP_DIR"
    echo "PostgreSQL on 127.0.0.1:$PG_PORT ($PG_DIR)"
}

# ---------------------------------------------------------------- run
if [[ "$MODE" != check ]]; then
    # Browser tests (chromium), the cross-worker and load tests (redis-server, nginx).
    need chromium /usr/bin/chromium
    # The voice tests' fake microphone plays a sentence espeak-ng speaks at test time (issue 43).
    need espeak-ng /usr/bin/espeak-ng
    need nginx /usr/sbin/nginx /usr/bin/nginx
    need redis-server /usr/bin/redis-server
    [[ "$MODE" != sqlite ]] && need postgresql '/usr/lib/postgresql/*/bin/initdb'
    install_missing
fi

# ---------------------------------------------------------------- collection, once ahead
# Every pytest process imports every test module to collect it, and pytest rewrites each module's asserts
# first (about 6 s of CPU a process here). One collection while the lint runs leaves the rewritten modules
# in tests/**/__pycache__ (PYTHONDONTWRITEBYTECODE lifted for it alone), and the processes read them.
precollect_start() {
    mkdir "$SCRATCH/precollect"
    env -u PYTHONDONTWRITEBYTECODE -u DATABASE_URL ELION_DATA_DIR="$SCRATCH/precollect" \
        "${PYTEST[@]}" --collect-only >"$SCRATCH/precollect.log" 2>&1 </dev/null &
    PRECOLLECT_PID=$!
}
precollect_wait() {
    [[ -n "$PRECOLLECT_PID" ]] || return 0
    wait "$PRECOLLECT_PID" || true  # a collection error shows again in each process's own log
    PRECOLLECT_PID=""
}
precollect_start

echo "==================== lint: ruff, lint-imports ===================="
if ! "$ROOT/.venv/bin/ruff" check .; then
    SUMMARY+=("lint: FAILED - ruff check")
    exit 1
fi
# The layers contract (.importlinter): imports run one way and form no cycle.
if ! "$ROOT/.venv/bin/lint-imports" --no-cache; then
    SUMMARY+=("lint: FAILED - lint-imports (an import against the layers in .importlinter)")
    exit 1
fi
SUMMARY+=("lint: OK")

echo "==================== makemigrations --check ===================="
mkdir "$SCRATCH/migrations"
if ! env -u DATABASE_URL ELION_DATA_DIR="$SCRATCH/migrations" \
    "$PY" manage.py makemigrations --check --dry-run; then
    SUMMARY+=("migrations: FAILED - makemigrations --check failed (missing migrations, or the project does not load)")
    exit 1
fi
SUMMARY+=("migrations: OK")

if [[ "$MODE" == check ]]; then
    echo
    echo "==================== pytest on sqlite, the fast tier ===================="
    precollect_wait
    start=$SECONDS
    start_shards sqlite "${FAST_TIER[@]}" "${EXTRA_ARGS[@]}"
    wait_shards "$start" || exit 1
    exit 0
fi

if [[ "$MODE" != sqlite ]]; then
    start_postgres
fi
precollect_wait
if [[ "$MODE" == all && -z "${ELION_TEST_SERIAL:-}" ]]; then
    echo
    echo "==================== pytest on sqlite and postgresql, at once ===================="
    start=$SECONDS
    start_shards sqlite "${SQLITE_ARGS[@]}"
    start_shards postgresql "${POSTGRES_ARGS[@]}"
    wait_shards "$start" || exit 1
    record_durations
    exit 0
fi
if [[ "$MODE" != postgres ]]; then
    echo
    echo "==================== pytest on sqlite ===================="
    start=$SECONDS
    start_shards sqlite "${SQLITE_ARGS[@]}"
    wait_shards "$start" || { [[ "$MODE" == all ]] && SUMMARY+=("postgresql: NOT RUN (sqlite failed)"); exit 1; }
fi
if [[ "$MODE" != sqlite ]]; then
    echo
    echo "==================== pytest on postgresql ===================="
    start=$SECONDS
    start_shards postgresql "${POSTGRES_ARGS[@]}"
    wait_shards "$start" || exit 1
fi
record_durations
exit 0
