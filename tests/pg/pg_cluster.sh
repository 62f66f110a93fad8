#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests (Debian's postgresql-15), run as a non-root user in a folder of its own,
# on a Unix socket only (listen_addresses = ''): no TCP port, nothing another machine can reach.
#
#   tests/pg/pg_cluster.sh start DIR    initdb (first time) and start; prints the URL of database "postgres"
#   tests/pg/pg_cluster.sh stop DIR     stop (immediate) and remove DIR
#   tests/pg/pg_cluster.sh fresh DIR    stop and remove what a crashed run left in DIR, then start
#   tests/pg/pg_cluster.sh restart DIR  stop (fast: connections are cut) and start again on the same data
#   tests/pg/pg_cluster.sh url DIR      the URL (postgresql://xsp@/postgres?host=DIR)
#   tests/pg/pg_cluster.sh run CMD...   start in a new temporary folder, run CMD with XSP_TEST_PG_URL (the "postgres"
#                                       database, superuser xsp) and XSP_TEST_PG_DIR set, stop, exit with CMD's status
#
# Exits 77 (CTest's skip code) when no PostgreSQL server is installed. As root, the server runs as `nobody`
# (PostgreSQL refuses to run as root); the folder is then owned by nobody. fsync and synchronous_commit are off: a test
# server's data need not survive a power cut, and tests then run at memory speed. XSP_PG_DURABLE=1 keeps PostgreSQL's
# durable defaults (for benchmarks that should see the cost of a flushed COMMIT).
set -euo pipefail

bindir=""
for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
  if [ -x "$d/postgres" ]; then bindir=$d; break; fi
done
if [ -z "$bindir" ]; then
  echo "pg_cluster: no PostgreSQL server installed (/usr/lib/postgresql/*/bin/postgres); scripts/install-deps.sh" \
       "installs postgresql-15" >&2
  exit 77
fi

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
  else
    "$@"
  fi
}

url() { echo "postgresql://xsp@/postgres?host=$1"; }

start() {
  local dir=$1
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then chown nobody:nogroup "$dir"; fi
  chmod 700 "$dir"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_owner "$bindir/initdb" -D "$dir/data" -U xsp -A trust -E UTF8 --locale=C --no-sync > "$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  local speed="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  if [ "${XSP_PG_DURABLE:-0}" = 1 ]; then speed=""; fi
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -c listen_addresses='' $speed -c max_connections=200" \
    start > /dev/null || { tail -n 30 "$dir/server.log" >&2; exit 1; }
  url "$dir"
}

stop() {
  local dir=$1 mode=${2:-immediate}
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m "$mode" -w -t 60 stop > /dev/null 2>&1 || true
  fi
}

cmd=${1:-}
case "$cmd" in
  start) start "$2" ;;
  stop) stop "$2"; rm -rf "$2" ;;
  fresh) stop "$2"; rm -rf "$2"; start "$2" ;;
  restart) stop "$2" fast; start "$2" > /dev/null ;;
  url) url "$2" ;;
  run)
    shift
    dir=$(mktemp -d /tmp/xsp-pg.XXXXXX)
    trap 'stop "$dir"; rm -rf "$dir"' EXIT
    XSP_TEST_PG_URL=$(start "$dir")
    export XSP_TEST_PG_URL XSP_TEST_PG_DIR=$dir
    set +e
    "$@"
    status=$?
    set -e
    exit $status
    ;;
  *)
    echo "usage: $0 start|stop|restart|url DIR | run CMD..." >&2
    exit 2
    ;;
esac
