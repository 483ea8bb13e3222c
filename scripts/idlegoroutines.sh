#!/bin/bash
# scripts/idlegoroutines.sh path/to/baton: how many goroutines an idle
# `baton work` on SQLite starts in 10 s (after 4 s of warm-up), counted by
# a perf uprobe on runtime.newproc, and by the baton frame nearest to each
# start. Needs perf (linux-perf) and root. Listed in docs/benchmarks.md.
B=$1
perf probe -q -x "$B" -a 'runtime.newproc' 2>/dev/null
ev=$(perf probe -l 2>/dev/null | awk -v b="$B" 'index($0, b) {print $1; exit}')
if [ -z "$ev" ]; then echo "could not place a probe on runtime.newproc in $B" >&2; exit 1; fi
dir=$(mktemp -d)
trap 'perf probe -q -d "$ev" 2>/dev/null; rm -rf "$dir"' EXIT
"$B" --dsn "sqlite://$dir/idle.db" migrate >/dev/null
"$B" --dsn "sqlite://$dir/idle.db" work idleq -- true 2>/dev/null & pid=$!
sleep 4
perf record -q -e "$ev" -g -p $pid -o "$dir/np.data" -- sleep 10 >/dev/null 2>&1
kill $pid; wait $pid 2>/dev/null
echo "$B: $(perf script -i "$dir/np.data" -F event 2>/dev/null | wc -l) goroutines started in 10 s; by the nearest baton frames:"
perf script -i "$dir/np.data" 2>/dev/null |
	awk '/^[^ \t]/{k=""; c=0; next} /^$/{if (k!="") print k; k=""; next} {if ($2 ~ /batonhq/ && c<2) {k=k" "$2; c++}}' |
	sed 's/+0x[0-9a-f]*//g; s#github.com/batonhq/baton/##g' | sort | uniq -c | sort -rn
