#!/usr/bin/env bash
# Throwaway PostgreSQL server for tests.
#
#   eval "$(scripts/pg_tmp.sh start)"   # sets PG_TMP_DIR, PG_PORT, DATABASE_URL
#   scripts/pg_tmp.sh stop "$PG_TMP_DIR"
#
# A kept server (make run-scaled): the data directory survives a stop.
#
#   eval "$(scripts/pg_tmp.sh up DIR)"      # starts it unless it runs; sets PG_DIR, PG_PORT,
#                                          # DATABASE_URL and PG_STARTED (1 when this call started it)
#   scripts/pg_tmp.sh down DIR               # stops it, keeps the data
#
# The server listens on 127.0.0.1 only, with trust auth, fsync off (data is
# disposable). It has a SUPERUSER role `elion` (password `elion`) so that
# pytest-django can create/drop its test database, and a database `elion`.
# All diagnostics go to stderr; only `export ...` lines go to stdout.
set -euo pipefail

die() { echo "pg_tmp: $*" >&2; exit 1; }

find_bindir() {
    local best="" best_ver=0 d v
    for d in /usr/lib/postgresql/*/bin; do
        [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] || continue
        v="$(basename "$(dirname "$d")")"
        [[ "$v" =~ ^[0-9]+$ ]] || continue
        if (( v > best_ver )); then best_ver=$v; best=$d; fi
    done
    [[ -n "$best" ]] || die "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install -y postgresql)"
    echo "$best"
}

# Run a command as the unprivileged postgres user when we are root
# (initdb and postgres refuse to run as root); as ourselves otherwise.
as_pg() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    local py
    py="$(command -v python3 || command -v python)" || die "python3 not found"
    "$py" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

cmd_start() {
    local bindir dir port log tries=0
    bindir="$(find_bindir)"
    if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres >&2 \
            || die "cannot create system user postgres"
    fi
    # Under /tmp (not $TMPDIR) so that the postgres user can reach it.
    dir="$(mktemp -d /tmp/elion-pg.XXXXXX)"
    chmod 700 "$dir"
    if [[ "$(id -u)" == 0 ]]; then
        chown postgres: "$dir"
    fi
    log="$dir/postgres.log"

    # On any failure below: show the logs, stop a half-started server, remove the dir.
    fail() {
        echo "pg_tmp: $*" >&2
        cat "$dir/initdb.log" "$log" >&2 2>/dev/null || true
        as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$dir"
        exit 1
    }

    as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || fail "initdb failed"

    # A port picked as free may be taken before postgres binds it: retry a few times.
    while :; do
        port="$(free_port)"
        if as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$log" -w -t 60 start \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
            >/dev/null 2>&1; then
            break
        fi
        tries=$((tries + 1))
        (( tries < 3 )) || fail "pg_ctl start failed"
        echo "pg_tmp: start on port $port failed, retrying with another port" >&2
    done

    as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt \
        -c "CREATE ROLE elion LOGIN SUPERUSER PASSWORD 'elion'" \
        -c "CREATE DATABASE elion OWNER elion" >&2 \
        || fail "creating role/database failed"

    printf 'export PG_TMP_DIR=%q\n' "$dir"
    printf 'export PG_PORT=%q\n' "$port"
    printf 'export DATABASE_URL=%q\n' "postgres://elion:elion@127.0.0.1:$port/elion"
}

cmd_stop() {
    local dir="${1:-${PG_TMP_DIR:-}}" bindir
    [[ -n "$dir" ]] || die "usage: $0 stop DIR"
    [[ -d "$dir" ]] || { echo "pg_tmp: $dir does not exist (already stopped?)" >&2; return 0; }
    # Refuse to delete anything that is not one of ours.
    [[ "$(basename "$dir")" == elion-pg.* ]] || die "refusing to remove $dir: not a pg_tmp.sh directory"
    if [[ -f "$dir/data/postmaster.pid" ]]; then
        bindir="$(find_bindir)"
        as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 \
            || as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 \
            || echo "pg_tmp: warning: pg_ctl stop failed for $dir" >&2
    fi
    rm -rf "$dir"
}

# A server whose data directory is kept: initdb on first use, the port remembered in DIR/port.
cmd_up() {
    local dir="${1:-}" bindir port started=0 fresh=0
    [[ -n "$dir" ]] || die "usage: $0 up DIR"
    bindir="$(find_bindir)"
    if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres >&2 \
            || die "cannot create system user postgres"
    fi
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    chmod 700 "$dir"
    if [[ "$(id -u)" == 0 ]]; then
        chown postgres: "$dir"
    fi
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
            >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed in $dir"; }
        fresh=1
    fi
    [[ -s "$dir/port" ]] || free_port >"$dir/port"
    port="$(cat "$dir/port")"
    if ! as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1" >/dev/null 2>&1 \
            || { tail -n 30 "$dir/postgres.log" >&2; die "pg_ctl start failed in $dir (port $port)"; }
        started=1
    fi
    if ((fresh)); then
        as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt \
            -c "CREATE ROLE elion LOGIN SUPERUSER PASSWORD 'elion'" \
            -c "CREATE DATABASE elion OWNER elion" >&2 \
            || die "creating role/database failed"
    fi
    printf 'export PG_DIR=%q\n' "$dir"
    printf 'export PG_PORT=%q\n' "$port"
    printf 'export PG_STARTED=%q\n' "$started"
    printf 'export DATABASE_URL=%q\n' "postgres://elion:elion@127.0.0.1:$port/elion"
}

cmd_down() {
    local dir="${1:-}" bindir
    [[ -n "$dir" && -f "$dir/data/PG_VERSION" ]] || die "usage: $0 down DIR (a directory made by '$0 up')"
    bindir="$(find_bindir)"
    as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 \
        || echo "pg_tmp: warning: pg_ctl stop failed for $dir" >&2
}

case "${1:-}" in
    start) cmd_start ;;
    stop) shift; cmd_stop "$@" ;;
    up) shift; cmd_up "$@" ;;
    down) shift; cmd_down "$@" ;;
    *) echo "usage: $0 start | stop DIR | up DIR | down DIR" >&2; exit 2 ;;
esac
