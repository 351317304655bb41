#!/usr/bin/env bash
# Scorch's heuristic schedule against FixedCSR and the tuned winner on the shared real matrices:
# `sparsetune bench --no-libraries` times them side by side (with the rule-based heuristics) on
# every matrix, using the winners a batch tune stored (`sparsetune batch ... --db DIR/tune-K.db`).
#
# Usage: scripts/bench_heuristic.sh --db-dir DIR [--kernels "spmv spmm sddmm"] [--min-nnz N]
#                                   [--out DIR] [--shared DIR]
# Writes heuristic.csv (matrix, kernel, nnz, fixed_csr, scorch, tuned medians in ms) and prints
# geomean speedups of scorch over FixedCSR and against the tuned winner, per kernel.
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: scripts/sparsetune).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kernels="spmv spmm sddmm"
min_nnz=10000
db_dir=
out=$root/bench-results
shared=${SPARSETUNE_SHARED_DATASETS:-$root/../shared/datasets}
while [ $# -gt 0 ]; do
  case $1 in
    --db-dir) db_dir=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --min-nnz) min_nnz=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_heuristic.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$db_dir" ] || { echo "bench_heuristic.sh: give --db-dir" >&2; exit 2; }
if [ -n "${SPARSETUNE_BIN:-}" ]; then read -ra bin <<< "$SPARSETUNE_BIN"; else bin=(bash "$root/scripts/sparsetune"); fi
mkdir -p "$out"
csv=$out/heuristic.csv
echo "matrix,kernel,nnz,fixed_csr_ms,scorch_ms,tuned_ms,best_rule_ms" > "$csv"
for kernel in $kernels; do
  db=$db_dir/tune-$kernel.db
  [ -f "$db" ] || { echo "bench_heuristic.sh: no $db" >&2; exit 2; }
  for file in "$shared"/matrices/*.mtx; do
    nnz=$(awk '!/^%/ { print $3; exit }' "$file")
    [ "$nnz" -ge "$min_nnz" ] || continue
    name=$(basename "$file" .mtx)
    json=$("${bin[@]}" bench "$file" --kernel "$kernel" --db "$db" --no-libraries --json 2>/dev/null) || {
      echo "bench_heuristic.sh: bench failed on $name ($kernel)" >&2; continue; }
    python3 -c '
import json, sys
r = json.loads(sys.argv[1]); t = {x["name"]: x["time_ms"] for x in r["results"] if x.get("verified")}
rules = [v for k, v in t.items() if k.startswith("heuristic_")]
print(",".join([sys.argv[2], sys.argv[3], sys.argv[4]] + ["%.5f" % t[k] if k in t else "" for k in ("fixed_csr", "scorch", "tuned")] + ["%.5f" % min(rules) if rules else ""]))
' "$json" "$name" "$kernel" "$nnz" >> "$csv"
    echo "$kernel $name done" >&2
  done
done
python3 - "$csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def gm(v): return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
for kernel in sorted({r["kernel"] for r in rows}):
    k = [r for r in rows if r["kernel"] == kernel and r["scorch_ms"] and r["fixed_csr_ms"]]
    t = [r for r in k if r["tuned_ms"]]
    vs_fixed = [float(r["fixed_csr_ms"]) / float(r["scorch_ms"]) for r in k]
    vs_tuned = [float(r["tuned_ms"]) / float(r["scorch_ms"]) for r in t]
    rules = [float(r["best_rule_ms"]) / float(r["scorch_ms"]) for r in k if r["best_rule_ms"]]
    print(f"{kernel}: {len(k)} matrices; scorch vs FixedCSR geomean {gm(vs_fixed):.2f}x "
          f"(min {min(vs_fixed):.2f}, max {max(vs_fixed):.2f}); scorch reaches {gm(vs_tuned):.2f} "
          f"of the tuned winner's speed ({len(t)} with a winner; scorch at least as fast on "
          f"{sum(v >= 0.98 for v in vs_tuned)}); best rule-based heuristic / scorch {gm(rules):.2f}")
PY
