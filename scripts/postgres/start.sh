#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the hub's tests and prints the line that points the
# tests at it:   eval "$(scripts/postgres/start.sh [DIR])"
#
# Idempotent: installs Debian's postgresql package only when no initdb is found, creates the
# cluster only once (in DIR, default target/tmp/postgres), and reuses a server already running
# there. It listens on 127.0.0.1:55432 only (LLMIB_PG_PORT overrides), with trust auth: it is
# for tests, never for data. Only the `export` line goes to stdout; everything else to stderr.
# Stop it with scripts/postgres/stop.sh [DIR].
set -euo pipefail
cd "$(dirname "$0")/../.."

port="${LLMIB_PG_PORT:-55432}"
dir="${1:-target/tmp/postgres}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
log() { printf 'postgres: %s\n' "$*" >&2; }

find_bin() {
  # A symlinked initdb (/usr/local/bin/initdb) names its real folder, where pg_ctl and
  # pg_isready lie too.
  if command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"
    return
  fi
  # Debian keeps the server binaries out of PATH, one folder per major version: take the newest.
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

bin="$(find_bin || true)"
if [ -z "$bin" ]; then
  log "installing Debian's postgresql package (once)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin="$(find_bin || true)"
  if [ -z "$bin" ]; then
    log "error: no initdb after installing postgresql: install PostgreSQL's server binaries"
    exit 1
  fi
fi

# PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
as_pg=()
if [ "$(id -u)" = 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    log "error: running as root and there is no postgres user: install the postgresql package or run as another user"
    exit 1
  fi
  as_pg=(runuser -u postgres --)
  chown postgres: "$dir"
  # A checkout under a folder closed to other users (/root/…): without a DIR of the caller's
  # choosing, fall back to one the postgres user can reach, rather than fail the test command.
  if [ -z "${1:-}" ] && ! "${as_pg[@]}" test -w "$dir"; then
    dir=/tmp/llmib-postgres
    install -d -o postgres -m 0700 "$dir"
    log "the checkout is closed to the postgres user: the cluster lives in $dir"
  fi
  if ! "${as_pg[@]}" test -w "$dir"; then
    log "error: the postgres user cannot write $dir (a parent folder is closed to it): pass a folder it can reach, e.g. scripts/postgres/start.sh /tmp/llmib-postgres"
    exit 1
  fi
fi
pg() { "${as_pg[@]}" "$@"; }

data="$dir/data"
sock="$dir/run"
url="postgres://postgres@127.0.0.1:$port/postgres"

if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
  log "reusing the server already on 127.0.0.1:$port"
  echo "export LLMIB_TEST_POSTGRES_URL=$url"
  exit 0
fi

if [ ! -f "$data/PG_VERSION" ]; then
  log "creating a cluster in $data"
  pg mkdir -p "$data"
  pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
    log "error: initdb failed; see $dir/initdb.log"
    exit 1
  }
fi
pg mkdir -p "$sock"

log "starting on 127.0.0.1:$port (log: $dir/server.log)"
# A server left running from this folder on another port (or a stale pid file) is stopped first.
if pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  pg "$bin/pg_ctl" -D "$data" -m fast -w stop >&2 || true
fi
pg "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $sock -c fsync=off" start >&2 || {
  log "error: the server did not start; see $dir/server.log"
  exit 1
}

for _ in $(seq 1 60); do
  if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    echo "export LLMIB_TEST_POSTGRES_URL=$url"
    exit 0
  fi
  sleep 0.5
done
log "error: the server is not accepting connections on 127.0.0.1:$port; see $dir/server.log"
exit 1
