#!/usr/bin/env bash
# SparseAuto's search space and pruning time for the paper's eight kernels, beside the paper's
# Table 3 (schedules per stage, complexity classes in parentheses) and Table 4 (stage times;
# the paper generated on 16 threads, we use one).
# Usage: scripts/bench_sparseauto.sh [--classes]   (--classes: count stage-1 classes for every
#        kernel, which takes tens of seconds for kernels 2 and 5)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SPARSETUNE_BUILD_DIR:-$root/build}
binary="$build/apps/sparsetune/sparsetune"
[ -x "$binary" ] || bash "$root/scripts/build.sh" sparsetune
extra=()
[ "${1:-}" = "--classes" ] && extra=(--all-classes)

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
kernels=(sddmm_spmm sddmm_spmm_gemm hadamard_gemm spmm_gemm ttmc spttm_ttm spttm_spttm mttkrp_gemm)
for k in "${kernels[@]}"; do
  start=$(date +%s%N)
  "$binary" schedules --kernel "$k" --json "${extra[@]}" > "$results/$k.json"
  end=$(date +%s%N)
  echo $(( (end - start) / 1000000 )) > "$results/$k.wall"
done

python3 - "$results" "${kernels[@]}" <<'EOF'
import json, sys
results, kernels = sys.argv[1], sys.argv[2:]
# Paper, Table 3: (count, classes or None) for generated, stage 1, stage 2, stage 3.
table3 = [
    [(16169, None), (1472, 255), (1, 1), (1, 1)],
    [(145448232, None), (207129, 18277), (224, 43), (8, 3)],
    [(7426, None), (692, 133), (2, 1), (2, 1)],
    [(258, None), (128, 34), (2, 1), (2, 1)],
    [(14701776, None), (30203, 2541), (101, 26), (16, 3)],
    [(2561, None), (352, 60), (3, 1), (3, 1)],
    [(109, None), (46, 13), (1, 1), (1, 1)],
    [(58127, None), (4715, 728), (5, 2), (2, 1)],
]
# Paper, Table 4, in ms: generation (16 threads), stage 1, stage 2, stage 3.
table4 = [
    [631.4, 13.0, 1723.2, 121.5],
    [10740.5e3, 167.5e3, 454.1e3, 1.5e3],
    [475.9, 3.7, 896.7, 48.0],
    [54.6, 0.5, 56.6, 49.7],
    [864.3e3, 71.9e3, 25.8e3, 1.5e3],
    [304.6, 6.2, 238.2, 50.0],
    [35.3, 0.3, 46.6, 48.3],
    [4.2e3, 57.8, 4.7e3, 123.2],
]

def count(c, classes):
    text = "?" if c is None else f"{c:,}"
    return text + (f" ({classes:,})" if classes is not None else "")

def ms(v):
    return f"{v / 1000:.1f} s" if v >= 1000 else f"{v:.1f} ms"

print("Schedules per stage: ours | paper (Table 3); classes of equal (time, memory) in ()")
print(f"{'#':<2} {'kernel':<16} {'generated':>26} {'stage 1 (mem depth)':>32} "
      f"{'stage 2 (poset)':>22} {'stage 3 (Z3)':>18}")
total_ours = total_wall = 0.0
rows4 = []
for n, k in enumerate(kernels):
    j = json.load(open(f"{results}/{k}.json"))
    st = {s["name"]: s for s in j["stages"]}
    names = ["generated", "stage1_memory_depth", "stage2_depth_poset", "stage3_smt"]
    cells = []
    for i, name in enumerate(names):
        ours = count(st[name]["count"], st[name]["classes"])
        paper = count(*table3[n][i])
        cells.append(f"{ours} | {paper}")
    print(f"{n + 1:<2} {k:<16} {cells[0]:>26} {cells[1]:>32} {cells[2]:>22} {cells[3]:>18}")
    times = [st[name]["ms"] for name in names]
    later = st["stage4_time_memory"]["ms"] + st["stage5_cache"]["ms"]
    wall = float(open(f"{results}/{k}.wall").read())
    total_ours += sum(times) + later
    total_wall += wall
    rows4.append((n, k, times, later, wall))

print()
print("Stage times: ours | paper (Table 4); ours on one thread of this machine")
print(f"{'#':<2} {'kernel':<16} {'generation':>22} {'stage 1':>20} {'stage 2':>20} "
      f"{'stage 3':>20} {'stages 4+5':>11} {'command':>9}")
for n, k, times, later, wall in rows4:
    cells = [f"{ms(times[i])} | {ms(table4[n][i])}" for i in range(4)]
    print(f"{n + 1:<2} {k:<16} {cells[0]:>22} {cells[1]:>20} {cells[2]:>20} {cells[3]:>20} "
          f"{ms(later):>11} {ms(wall):>9}")
print(f"all eight kernels: stages {ms(total_ours)}, commands {ms(total_wall)} wall "
      "(process start, JSON output included)")
EOF
