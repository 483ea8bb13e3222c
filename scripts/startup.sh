#!/usr/bin/env bash
# Whole-process wall time of one-shot commands, median of N runs (default
# 10), against the database's own command-line tools. Used for the start-up
# figures in docs/benchmarks.md.
#
#   scripts/startup.sh [path/to/baton]
#
# PostgreSQL: $STARTUP_PG (default postgres://postgres@127.0.0.1:5432/test);
# the baton runs use a scratch schema that the script creates and drops.
# SQLite: a file in a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-10}
PG=${STARTUP_PG:-postgres://postgres@127.0.0.1:5432/test}
BATON=${1:-}
tmp=$(mktemp -d)
schema="startup_$$"
cleanup() {
  psql -q "$PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
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

# median_ms CMD...: runs CMD N times (output discarded) and prints the
# median wall time in milliseconds.
median_ms() {
  local times=()
  for _ in $(seq 1 "$N"); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f\n", m / 1000}'
}

row() { printf '| %-52s | %8s |\n' "$1" "$2"; }

psql -q "$PG" -c "CREATE SCHEMA $schema" >/dev/null
"$BATON" --dsn "$PGDSN" migrate >/dev/null
"$BATON" --dsn "$SQDSN" migrate >/dev/null

echo "| command (median of $N, whole process) | ms |"
echo "|---|---:|"
row "psql -c 'select 1'" "$(median_ms psql -q "$PG" -c 'select 1')"
row "baton queue push (PostgreSQL)" "$(median_ms "$BATON" --dsn "$PGDSN" queue push startup x)"
row "baton lock --write job -- true (PostgreSQL)" "$(median_ms "$BATON" --dsn "$PGDSN" lock --write job -- true)"
row "flock FILE true" "$(median_ms flock "$tmp/flock" true)"
row "baton queue push (SQLite)" "$(median_ms "$BATON" --dsn "$SQDSN" queue push startup x)"
row "baton lock --write job -- true (SQLite)" "$(median_ms "$BATON" --dsn "$SQDSN" lock --write job -- true)"
