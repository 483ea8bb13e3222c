#!/bin/bash
# scripts/idlecpu.sh path/to/baton [SECONDS [WARMUP]]: the CPU share of an
# idle `baton work` on SQLite over SECONDS (default 10), measured after
# WARMUP seconds (default 2), in a scratch database of its own (so that
# several builds can be measured side by side, in the same minutes). Used
# for the SQLite wake-up figures in docs/benchmarks.md.
B=$1
N=${2:-10}
W=${3:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$B" --dsn "sqlite://$dir/idle.db" migrate >/dev/null
"$B" --dsn "sqlite://$dir/idle.db" work idleq -- true 2>/dev/null & pid=$!
sleep "$W"
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
sleep "$N"
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
kill $pid; wait $pid 2>/dev/null
tck=$(getconf CLK_TCK)
python3 -c "print('idle baton work ($B): %.2f%% of a core' % (($t1-$t0)/$tck/$N*100))"
