#!/usr/bin/env bash
# Whole-process wall time of one-shot commands, median of N runs (default
# 10), against the database's own command-line tools. Used for the start-up
# figures in docs/benchmarks.md.
#
#   scripts/startup.sh [path/to/baton]
#
# PostgreSQL: $STARTUP_PG (default postgres://postgres@127.0.0.1:5432/test);
# the baton runs use a scratch schema that the script creates and drops.
# MariaDB/MySQL: the server on 127.0.0.1:3306 as root ($STARTUP_MYSQL_HOST,
# $STARTUP_MYSQL_USER), in a scratch database the script creates and drops.
# SQLite: a file in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10}
PG=${STARTUP_PG:-postgres://postgres@127.0.0.1:5432/test}
MYHOST=${STARTUP_MYSQL_HOST:-127.0.0.1}
MYUSER=${STARTUP_MYSQL_USER:-root}
BATON=${1:-}
tmp=$(mktemp -d)
schema="startup_$$"
cleanup() {
  psql -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
  mysql -h"$MYHOST" -u"$MYUSER" -e "DROP DATABASE IF EXISTS $schema" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ -z "$BATON" ]; then
  BATON=$tmp/baton
  go build -o "$BATON" ./cmd/baton
fi

sep='?'
case "$PG" in *\?*) sep='&' ;; esac
PGDSN="$PG${sep}search_path=$schema"
SQDSN="sqlite://$tmp/startup.db"
MYDSN="mysql://$MYUSER@$MYHOST:3306/$schema"

# median_ms CMD...: runs CMD N times (output discarded) and prints the
# median wall time in milliseconds, timed from python3 so that the timer's
# own process start-up is not counted.
median_ms() {
  python3 - "$N" "$@" <<'PY'
import statistics, subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(n):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append((time.perf_counter() - t0) * 1000)
    if r.returncode != 0:
        sys.exit("failed: " + " ".join(cmd))
print("%.1f" % statistics.median(times))
PY
}

row() { printf '| %-52s | %8s |\n' "$1" "$2"; }

psql -q "$PG" -c "CREATE SCHEMA $schema" >/dev/null
"$BATON" --dsn "$PGDSN" migrate >/dev/null
"$BATON" --dsn "$SQDSN" migrate >/dev/null
mysql -h"$MYHOST" -u"$MYUSER" -e "CREATE DATABASE $schema"
"$BATON" --dsn "$MYDSN" migrate >/dev/null

echo "| command (median of $N, whole process) | ms |"
echo "|---|---:|"
row "true (process start-up floor)" "$(median_ms true)"
row "psql -c 'select 1'" "$(median_ms psql -q "$PG" -c 'select 1')"
row "baton queue push (PostgreSQL)" "$(median_ms "$BATON" --dsn "$PGDSN" queue push startup x)"
row "baton lock --write job -- true (PostgreSQL)" "$(median_ms "$BATON" --dsn "$PGDSN" lock --write job -- true)"
row "flock FILE true" "$(median_ms flock "$tmp/flock" true)"
row "baton queue push (SQLite)" "$(median_ms "$BATON" --dsn "$SQDSN" queue push startup x)"
row "baton lock --write job -- true (SQLite)" "$(median_ms "$BATON" --dsn "$SQDSN" lock --write job -- true)"
row "mysql -e 'select 1' (MariaDB)" "$(median_ms mysql -h"$MYHOST" -u"$MYUSER" -e 'select 1')"
row "baton queue push (MariaDB)" "$(median_ms "$BATON" --dsn "$MYDSN" queue push startup x)"
row "baton lock --write job -- true (MariaDB)" "$(median_ms "$BATON" --dsn "$MYDSN" lock --write job -- true)"
