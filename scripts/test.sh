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
# Fresh per-run scratch space; each half gets its own ELION_DATA_DIR inside it.
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/elion-test.XXXXXX")"

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
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
# pytest's pids while they run in the background (non-interactive runs, see run_suite / run_both).
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

# run_suite LABEL  (environment already prepared by the caller): one half, its output shown as it runs.
run_suite() {
    local label="$1" rc start
    shift
    echo
    echo "==================== pytest on $label ===================="
    start=$SECONDS
    set +e
    if [[ -t 0 ]]; then
        # Interactive: foreground, so Ctrl-C reaches pytest directly and --pdb works.
        "${PYTEST[@]}" "$@"
        rc=$?
    else
        # CI / no terminal: background + wait, so a SIGTERM to this script is acted
        # on at once (trap forwards it to pytest) instead of after pytest finishes.
        "${PYTEST[@]}" "$@" &
        CHILDREN=($!)
        wait "${CHILDREN[0]}"
        rc=$?
        CHILDREN=()
    fi
    set -e
    suite_result "$label" "$rc" $((SECONDS - start))
}

# run_both: both halves at once, each in its own environment (database, ELION_DATA_DIR) and
# with its output in a log shown whole when it ends. The halves share nothing but the
# machine: every server a test starts takes a free port, every file lives in its half's
# ELION_DATA_DIR. On this 2-core machine the two take about as long as the slower alone.
run_both() {
    local start rc_sqlite rc_postgresql
    local log_sqlite="$SCRATCH/pytest-sqlite.log" log_postgresql="$SCRATCH/pytest-postgresql.log"
    echo
    echo "==================== pytest on sqlite and postgresql, at once ===================="
    start=$SECONDS
    set +e
    env -u DATABASE_URL ELION_DATA_DIR="$SCRATCH/sqlite" "${PYTEST[@]}" "${SQLITE_ARGS[@]}" \
        >"$log_sqlite" 2>&1 </dev/null &
    CHILDREN=($!)
    ELION_DATA_DIR="$SCRATCH/postgresql" DATABASE_URL="$DATABASE_URL" "${PYTEST[@]}" "${POSTGRES_ARGS[@]}" \
        >"$log_postgresql" 2>&1 </dev/null &
    CHILDREN+=($!)
    wait "${CHILDREN[0]}"
    rc_sqlite=$?
    local secs_sqlite=$((SECONDS - start))
    wait "${CHILDREN[1]}"
    rc_postgresql=$?
    local secs_postgresql=$((SECONDS - start))
    CHILDREN=()
    set -e
    echo
    echo "==================== pytest on sqlite ===================="
    cat "$log_sqlite"
    echo
    echo "==================== pytest on postgresql ===================="
    cat "$log_postgresql"
    local failed=0
    suite_result sqlite "$rc_sqlite" "$secs_sqlite" || failed=1
    suite_result postgresql "$rc_postgresql" "$secs_postgresql" || failed=1
    return "$failed"
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
    need nginx /usr/sbin/nginx /usr/bin/nginx
    need redis-server /usr/bin/redis-server
    [[ "$MODE" != sqlite ]] && need postgresql '/usr/lib/postgresql/*/bin/initdb'
    install_missing
fi

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
    unset DATABASE_URL
    export ELION_DATA_DIR="$SCRATCH/sqlite"
    mkdir "$ELION_DATA_DIR"
    run_suite "sqlite, fast tier" "${FAST_TIER[@]}" "${EXTRA_ARGS[@]}" || exit 1
    exit 0
fi

if [[ "$MODE" == all && -z "${ELION_TEST_SERIAL:-}" ]]; then
    start_postgres
    mkdir "$SCRATCH/sqlite" "$SCRATCH/postgresql"
    run_both || exit 1
    exit 0
fi

if [[ "$MODE" != postgres ]]; then
    unset DATABASE_URL
    export ELION_DATA_DIR="$SCRATCH/sqlite"
    mkdir "$ELION_DATA_DIR"
    run_suite sqlite "${SQLITE_ARGS[@]}" || { [[ "$MODE" == all ]] && SUMMARY+=("postgresql: NOT RUN (sqlite failed)"); exit 1; }
fi

if [[ "$MODE" != sqlite ]]; then
    start_postgres
    export ELION_DATA_DIR="$SCRATCH/postgresql" DATABASE_URL
    mkdir "$ELION_DATA_DIR"
    run_suite postgresql "${POSTGRES_ARGS[@]}" || exit 1
fi
exit 0
