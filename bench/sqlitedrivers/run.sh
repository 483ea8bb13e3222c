#!/usr/bin/env bash
# Builds one benchmark binary per driver (build tags; drivers are never linked together
# because mattn and ncruces both register "sqlite3"), runs each 3 times (driver order
# rotated per round), prints per-run results and the median table.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p out
DRIVERS=(mattn modernc ncruces)
for d in "${DRIVERS[@]}"; do go build -tags $d -o out/bench-$d ./bench; done
: > out/raw.txt
for round in 0 1 2; do
  for k in 0 1 2; do
    d=${DRIVERS[$(( (k + round) % 3 ))]}
    ./out/bench-$d "$@" | tee -a out/raw.txt
  done
done
echo
echo "| driver | workload | variant | run1 | run2 | run3 | median ops/s |"
echo "|---|---|---|---|---|---|---|"
awk '$1=="RESULT"{k=$2" "$3" "$4; v[k]=v[k]" "$5; if(!(k in seen)){seen[k]=1; order[n++]=k}}
END{for(i=0;i<n;i++){k=order[i]; split(substr(v[k],2),a," "); asort(a,b,"@val_num_asc");
 split(k,f," "); printf "| %s | %s | %s | %s | %s | %s | **%s** |\n", f[1],f[2],f[3],a[1],a[2],a[3],b[2]}}' out/raw.txt | sort -t'|' -k3,3 -k4,4r -k2,2
