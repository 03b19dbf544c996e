#!/usr/bin/env bash
# Stops the test server scripts/postgres/start.sh started in DIR (default target/tmp/postgres).
# Does nothing when none runs there. The cluster's files are kept (delete DIR to drop them).
set -euo pipefail
cd "$(dirname "$0")/../.."

dir="${1:-target/tmp/postgres}"
# start.sh's fallback for a checkout closed to the postgres user.
if [ -z "${1:-}" ] && [ ! -d "$dir/data" ] && [ -d /tmp/llmib-postgres/data ]; then
  dir=/tmp/llmib-postgres
fi
data="$dir/data"
if [ ! -f "$data/PG_VERSION" ]; then
  echo "postgres: no cluster in $dir: nothing to stop" >&2
  exit 0
fi
if command -v pg_ctl >/dev/null 2>&1; then
  bin="$(dirname "$(readlink -f "$(command -v pg_ctl)")")"
else
  bin="/usr/lib/postgresql/$(cat "$data/PG_VERSION")/bin"
fi
as_pg=()
[ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
if "${as_pg[@]}" "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -m fast -w stop >&2
else
  echo "postgres: no server running in $dir" >&2
fi
