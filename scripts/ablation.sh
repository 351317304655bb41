#!/usr/bin/env bash
# What the cost model buys, end to end: per matrix and kernel, a tune per arm (three by default)
# into a database each, then their winners timed side by side in one `sparsetune bench --no-libraries` run.
#   model     `tune` as shipped: the rule candidates (FixedCSR, library rules, Scorch, GroupCOO)
#             and the model's top K (--top-k K --samples 0; K: the shipped model's tune_top_k,
#             else 10, unless --top-k is given)
#   no-model  `tune --no-model --samples K`: the same rules and K random SuperSchedules
#   oracle    `tune --top-k 50 --samples 100`: the rules, 100 random ones and the model's top 50
#   calibrated (only when --arms names it) `tune` as the model arm, with this machine's model
#             from `sparsetune calibrate` in place of the shipped one
# Each tune's second round (--refine, default 8) measures random schedules one move from its
# first round's fastest, with or without the model.
# Orderings are left out of every arm (--orderings none): they are tried on top of whichever
# schedule wins and would hide the difference. Matrices whose pattern is in the training export
# of the kernel (datasets/measurements/<kernel>.jsonl.gz, by fingerprint) are skipped: the model
# must not have seen them.
#
# Usage: scripts/ablation.sh [--kernels "spmv spmm sddmm"] [--arms "model no_model oracle"]
#                            [--top-k K] [--out DIR] FILE...
# Writes DIR/ablation.csv (matrix, kernel, nnz, FixedCSR's time, then each arm's measured
# candidates and bench time) and prints per kernel: the share of the best's speed each reaches
# (geomean, and how many reach 95%), and, on matrices where the best is over 10% faster than
# FixedCSR, the model's (and the calibrated model's) winner against the no-model one.
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: the checkout's build, built once
# at the start). Measure on a quiet machine: tune refuses to store times taken while other
# processes hold the cores.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kernels="spmv spmm sddmm"
arms="model no_model oracle"
top_k=
out=$root/bench-results/ablation
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --kernels) kernels=$2; shift 2 ;;
    --arms) arms=$2; shift 2 ;;
    --top-k) top_k=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "ablation.sh: unknown option $1" >&2; exit 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "ablation.sh: give matrix files" >&2; exit 2; }
source "$root/scripts/measuring_binary.sh"
for run in $arms; do
  case $run in model|calibrated|no_model|oracle) ;; *) echo "ablation.sh: unknown arm $run" >&2; exit 2 ;; esac
done
mkdir -p "$out"
csv=$out/ablation.csv
header=matrix,kernel,nnz,fixed_csr_ms
for run in $arms; do header+=",${run}_n,${run}_ms"; done
[ -f "$csv" ] || echo "$header" > "$csv"
[ "$(head -1 "$csv")" = "$header" ] || {
  echo "ablation.sh: $csv has the columns $(head -1 "$csv"), not those of --arms \"$arms\"" >&2; exit 2; }

for kernel in $kernels; do
  k=$top_k
  [ -n "$k" ] || k=$(jq '.tune_top_k // 10' "$root/models/$kernel/model.json" 2>/dev/null || echo 10)
  seen=$out/seen-$kernel.txt
  zcat "$root/datasets/measurements/$kernel.jsonl.gz" 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    d = json.loads(line)
    if d.get("t") == "matrix": print(d["fingerprint"])' > "$seen"
  for file in "${files[@]}"; do
    name=$(basename "$file"); name=${name%.*}
    grep -q "^$name,$kernel," "$csv" && continue  # resumable
    info=$("${bin[@]}" info "$file" --json)
    fingerprint=$(jq -r .fingerprint <<< "$info")
    nnz=$(jq -r .nnz <<< "$info")
    if grep -qx "$fingerprint" "$seen"; then
      echo "ablation.sh: $name ($kernel) is in the training data: skipped" >&2
      continue
    fi
    counts=()
    for run in $arms; do
      case $run in
        # The shipped model by name: tune would otherwise take this machine's calibrated one.
        model) args=(--model "$root/models/$kernel" --top-k "$k" --samples 0) ;;
        calibrated) args=(--top-k "$k" --samples 0) ;;
        no_model) args=(--no-model --samples "$k") ;;
        oracle) args=(--top-k 50 --samples 100) ;;
      esac
      result=$out/$name-$kernel-$run.json
      # A tune that finished before an interrupted run is kept: oracle tunes take minutes.
      if ! { [ -s "$result" ] && jq -e '.winner.schedule' "$result" > /dev/null 2>&1; }; then
        "${bin[@]}" tune "$file" --kernel "$kernel" --db "$out/$run-$kernel.db" --orderings none \
          --force "${args[@]}" --json > "$result" 2> "$out/$name-$kernel-$run.err" || {
          echo "ablation.sh: tune ($run) failed on $name ($kernel): $(tail -1 "$out/$name-$kernel-$run.err")" >&2
          continue 2; }
      fi
      if [ "$run" = calibrated ] && ! jq -e '.model_calibrated' "$result" > /dev/null; then
        echo "ablation.sh: no calibrated $kernel model on this machine (run sparsetune calibrate --kernel $kernel)" >&2
        exit 2
      fi
      jq -S '.winner.schedule' "$result" > "$out/$name-$kernel-$run.schedule.json"
      counts+=("$(jq '[.candidates[] | select(.status == "ok")] | length' "$result")")
    done
    # Each distinct winner is timed once, so two arms that stored the same schedule get the same
    # time rather than two samples of the bench's noise. An empty database: the winners come as
    # files; a stored one would be timed twice.
    schedules=()
    declare -A first_of=()
    for run in $arms; do
      f=$out/$name-$kernel-$run.schedule.json
      key=$(jq -c . "$f")
      if [ -z "${first_of[$key]:-}" ]; then first_of[$key]=$f; schedules+=(--schedule "$f"); fi
      echo "$run ${first_of[$key]}"
    done > "$out/$name-$kernel-timed-as.txt"
    unset first_of
    "${bin[@]}" bench "$file" --kernel "$kernel" --no-libraries --db "$out/bench-empty.db" \
      "${schedules[@]}" --json > "$out/$name-$kernel-bench.json" 2> "$out/$name-$kernel-bench.err" || {
      echo "ablation.sh: bench failed on $name ($kernel)" >&2; continue; }
    python3 - "$out/$name-$kernel-bench.json" "$name" "$kernel" "$nnz" "$out/$name-$kernel-timed-as.txt" "$arms" "${counts[@]}" >> "$csv" <<'PY'
import json, sys
bench, name, kernel, nnz, timed_as, arms, counts = *sys.argv[1:7], sys.argv[7:]
# bench names a given schedule by its file.
times = {r["name"]: r["time_ms"] for r in json.load(open(bench))["results"] if r.get("verified")}
files = dict(line.split() for line in open(timed_as))
row = [name, kernel, nnz, "%.6f" % times["fixed_csr"]]
for run, n in zip(arms.split(), counts):
    row += [n, "%.6f" % times[files[run]]]
print(",".join(map(str, row)))
PY
    echo "ablation.sh: $name ($kernel) done" >&2
  done
done

python3 - "$csv" <<'PY'
import csv, math, sys
reader = csv.DictReader(open(sys.argv[1]))
rows = list(reader)
arms = [f[:-3] for f in reader.fieldnames if f.endswith("_ms") and f != "fixed_csr_ms"]
def gm(v): return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
for kernel in sorted({r["kernel"] for r in rows}):
    k = [r for r in rows if r["kernel"] == kernel and r[arms[-1] + "_ms"]]
    if not k: continue
    best = lambda r: min(float(r[run + "_ms"]) for run in arms)
    share = {run: [best(r) / float(r[run + "_ms"]) for r in k] for run in arms}
    budget = {run: gm([float(r[run + "_n"]) for r in k]) for run in arms}
    print(f"{kernel}: {len(k)} unseen matrices")
    for run in arms:
        s = share[run]
        print(f"  {run:10s} reaches {gm(s):.3f} of the best (geomean); >= 95% on {sum(x >= 0.95 for x in s)} "
              f"of {len(s)}; {budget[run]:.0f} candidates measured (geomean)")
    gain = [r for r in k if float(r["fixed_csr_ms"]) / best(r) > 1.1]
    for run in [a for a in ("model", "calibrated") if a in arms and "no_model" in arms and gain]:
        v = [float(r["no_model_ms"]) / float(r[run + "_ms"]) for r in gain]
        print(f"  where the best beats FixedCSR by over 10% ({len(gain)}): {run} over no-model {gm(v):.3f}x geomean")
PY
