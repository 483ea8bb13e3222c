#!/bin/bash
# scripts/idlecpu.sh path/to/baton: the CPU share of an idle `baton work` on
# SQLite over 10 s (a scratch database in /tmp/idle.db). Used for the SQLite
# wake-up figures in docs/benchmarks.md.
B=$1
rm -f /tmp/idle.db*
"$B" --dsn sqlite:///tmp/idle.db migrate >/dev/null
$B --dsn sqlite:///tmp/idle.db work idleq -- true & pid=$!
sleep 2
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
sleep 10
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
kill $pid; wait $pid 2>/dev/null
tck=$(getconf CLK_TCK)
python3 -c "print('idle baton work: %.2f%% of a core' % (($t1-$t0)/$tck/10*100))"
