#!/usr/bin/env bash
# Starts or stops a throwaway PostgreSQL on 127.0.0.1 for the tests.
#   eval "$(.ci/postgres.sh start)"   -> exports IDEM_TEST_PG_URL
#   .ci/postgres.sh stop
# Installs the server with apt-get when its binaries are missing. initdb refuses to run as
# root, so the cluster belongs to the postgres user (created by the package).
set -euo pipefail
PG_PORT="${IDEM_TEST_PG_PORT:-54329}"
PG_DIR="${IDEM_TEST_PG_DIR:-/tmp/idem-test-pg}"

pg_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$found" ]; then
    echo "postgres.sh: installing PostgreSQL server" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    found=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$found"
}

as_owner() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
  start)
    BIN=$(pg_bin)
    if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then useradd --system --no-create-home postgres; fi
    if as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
      as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_DIR"
    mkdir -p "$PG_DIR"
    [ "$(id -u)" = "0" ] && chown postgres "$PG_DIR"
    as_owner "$BIN/initdb" -D "$PG_DIR/data" -U idem --auth=trust -E UTF8 >/dev/null
    as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off -c synchronous_commit=off -c max_connections=200" start >/dev/null
    as_owner "$BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U idem idem_test
    echo "postgres.sh: PostgreSQL ready on 127.0.0.1:$PG_PORT" >&2
    echo "export IDEM_TEST_PG_URL=postgres://idem@127.0.0.1:$PG_PORT/idem_test"
    ;;
  stop)
    BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$BIN" ] && [ -d "$PG_DIR/data" ]; then
      as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" -m fast stop >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_DIR"
    ;;
  *)
    echo "usage: eval \"\$(.ci/postgres.sh start)\" | .ci/postgres.sh stop | .ci/postgres.sh stop" >&2
    exit 2
    ;;
esac
