#!/usr/bin/env bash
# Cold build time (empty GOCACHE, module cache already populated), warm rebuild time
# (trivial main.go change), and binary size of the trivial program per driver.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p out
printf "| driver | cold build (s) | warm rebuild (s) | binary | binary -s -w |\n|---|---|---|---|---|\n"
for d in none mattn modernc ncruces; do
  cache=$(mktemp -d)
  s=$(date +%s.%N); GOCACHE=$cache go build -tags $d -o out/trivial-$d ./trivial; e=$(date +%s.%N)
  cold=$(echo "$e - $s" | bc)
  echo "// $(date +%s%N)" > trivial/touch.go.tmp; mv trivial/touch.go.tmp trivial/zz_touch.go
  sed -i '1i package main' trivial/zz_touch.go
  s=$(date +%s.%N); GOCACHE=$cache go build -tags $d -o out/trivial-$d ./trivial; e=$(date +%s.%N)
  warmb=$(echo "$e - $s" | bc)
  rm -f trivial/zz_touch.go
  GOCACHE=$cache go build -tags $d -ldflags="-s -w" -o out/trivial-$d-stripped ./trivial
  rm -rf "$cache"
  sz=$(stat -c %s out/trivial-$d); szs=$(stat -c %s out/trivial-$d-stripped)
  printf "| %s | %.1f | %.2f | %.1f MiB | %.1f MiB |\n" $d $cold $warmb $(echo "$sz/1048576" | bc -l) $(echo "$szs/1048576" | bc -l)
  [ $d = none ] || ./out/trivial-$d >/dev/null
done
