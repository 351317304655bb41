#!/usr/bin/env bash
# Scorch's heuristic schedule against FixedCSR and the tuned winner on the shared real matrices:
# `sparsetune bench --no-libraries` times them side by side (with the rule-based heuristics) on
# every matrix, using the winners a batch tune stored (`sparsetune batch ... --db DIR/tune-K.db`).
#
# Usage: scripts/bench_heuristic.sh --db-dir DIR [--kernels "spmv spmm sddmm"] [--min-nnz N]
#                                   [--out DIR] [--shared DIR] [EXTRA.mtx...]
# Writes heuristic.csv (matrix, kernel, nnz, row-length variation, medians in ms of FixedCSR,
# Scorch's schedule, the tuned winner, the best rule-based heuristic, the best GroupCOO or
# BlockGroupCOO and the best other kernel) and prints, per kernel, geomean speedups of Scorch's
# schedule over FixedCSR and against the tuned winner, and how often GroupCOO is fastest on
# skewed matrices (row-length stddev over mean above 1). EXTRA files (generated power-law
# matrices, say) are measured too.
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: the checkout's build, built once
# at the start).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kernels="spmv spmm sddmm"
min_nnz=10000
db_dir=
out=$root/bench-results
shared=${SPARSETUNE_SHARED_DATASETS:-$root/../shared/datasets}
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --db-dir) db_dir=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --min-nnz) min_nnz=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench_heuristic.sh: unknown option $1" >&2; exit 2 ;;
    *) extra+=("$1"); shift ;;
  esac
done
[ -n "$db_dir" ] || { echo "bench_heuristic.sh: give --db-dir" >&2; exit 2; }
source "$root/scripts/measuring_binary.sh"
mkdir -p "$out"
csv=$out/heuristic.csv
echo "matrix,kernel,nnz,row_cv,fixed_csr_ms,scorch_ms,tuned_ms,best_rule_ms,best_groupcoo_ms,best_other_ms" > "$csv"
for kernel in $kernels; do
  db=$db_dir/tune-$kernel.db
  [ -f "$db" ] || { echo "bench_heuristic.sh: no $db" >&2; exit 2; }
  for file in "$shared"/matrices/*.mtx "${extra[@]}"; do
    nnz=$(awk '!/^%/ { print $3; exit }' "$file")
    [ "$nnz" -ge "$min_nnz" ] || continue
    name=$(basename "$file" .mtx)
    cv=$("${bin[@]}" info "$file" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)["stats"]["row_length"]
print("%.3f" % (s["stddev"] / s["mean"] if s["mean"] else 0))')
    json=$("${bin[@]}" bench "$file" --kernel "$kernel" --db "$db" --no-libraries --json 2>/dev/null) || {
      echo "bench_heuristic.sh: bench failed on $name ($kernel)" >&2; continue; }
    python3 -c '
import json, sys
r = json.loads(sys.argv[1]); t = {x["name"]: x["time_ms"] for x in r["results"] if x.get("verified")}
rules = [v for k, v in t.items() if k.startswith("heuristic_")]
grouped = [v for k, v in t.items() if "groupcoo" in k]
others = [v for k, v in t.items() if "groupcoo" not in k]
ms = lambda v: "%.5f" % min(v) if v else ""
print(",".join([sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]] + ["%.5f" % t[k] if k in t else "" for k in ("fixed_csr", "scorch", "tuned")] + [ms(rules), ms(grouped), ms(others)]))
' "$json" "$name" "$kernel" "$nnz" "$cv" >> "$csv"
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
    g = [r for r in k if r["best_groupcoo_ms"] and r["best_other_ms"]]
    if g:
        skewed = [r for r in g if float(r["row_cv"]) > 1]
        wins = lambda rows: sum(float(r["best_groupcoo_ms"]) < float(r["best_other_ms"]) for r in rows)
        ratio = [float(r["best_other_ms"]) / float(r["best_groupcoo_ms"]) for r in g]
        print(f"  GroupCOO fastest on {wins(g)} of {len(g)} matrices ({wins(skewed)} of "
              f"{len(skewed)} skewed); best GroupCOO / best other, geomean {gm(ratio):.2f}")
PY
