#!/usr/bin/env bash
# Writes the large hostile inputs into OUT (they are not kept in git):
#   where_5000.json       a schedule whose where nodes nest 5,000 deep (400 KB)
#   loop_order_500k.json  a schedule whose loop order has 500,000 entries (2.5 MB)
#   json_depth_100k.json  100,000 nested JSON arrays
#   loop_order_100.json   a loop order of 100 entries (under the size limit, over the loop limit)
#   bomb.mtx.gz           gzip members of zeros: 80 KB that inflate to 128 MiB
#   bomb.jsonl.gz         the same bomb as a measurements file for db import
# Usage: make_large.sh OUT
set -euo pipefail
out=${1:?usage: make_large.sh OUT}
mkdir -p "$out"
cd "$out"

{
  printf '{"tree": '
  for _ in $(seq 5000); do
    printf '{"loops": [], "where": {"temp": "t", "producer": {"loops": [], "compute": "t += A(i,k)"}, "consumer": '
  done
  printf '{"loops": ["i"], "compute": "y(i) += A(i,k) * x(k)"}'
  for _ in $(seq 5000); do printf '}}'; done
  printf ', "format": ["i:U", "k:C"], "parallel": null}\n'
} > where_5000.json

{
  printf '{"loop_order": ["i"'
  printf ', "i"%.0s' $(seq 499999)
  printf '], "format": ["i:U", "k:C"], "parallel": null}\n'
} > loop_order_500k.json

{
  printf '%.0s[' $(seq 100000)
  printf '%.0s]' $(seq 100000)
  printf '\n'
} > json_depth_100k.json

{
  printf '{"loop_order": ["i"'
  printf ', "i"%.0s' $(seq 99)
  printf '], "format": ["i:U", "k:C"], "parallel": null}\n'
} > loop_order_100.json

# 16 MiB of zeros compress to about 16 KB; eight members inflate to 128 MiB.
member=$(mktemp)
head -c $((16 << 20)) /dev/zero | gzip -9 > "$member"
: > bomb.mtx.gz
for _ in 1 2 3 4 5 6 7 8; do cat "$member" >> bomb.mtx.gz; done
cp bomb.mtx.gz bomb.jsonl.gz
rm -f "$member"
