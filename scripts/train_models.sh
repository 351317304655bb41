#!/usr/bin/env bash
# Reproduces the shipped cost models (models/<kernel>/) from the committed measurements.
#
# For each kernel: imports datasets/measurements/<kernel>.jsonl.gz into a fresh database,
# generates the corpus files the measurements were taken on (collect_training_data.sh
# --materialize-only: the manifest's gen commands with their seeds), and runs
# `sparsetune train`, which writes the weights, the normalization statistics, the schedule set
# the search indexes and metrics.json (WACONet and the summary-feature model on the held-out
# patterns of datasets/corpus/validation.txt).
#
# Usage: scripts/train_models.sh [options] [KERNEL...]   (default: spmv spmm sddmm mttkrp)
#   --epochs N     passes over the training patterns (default: what the shipped model's
#                  model.json records, else 20)
#   --seed S       initialization and batch order (default: as recorded, else 1)
# WACONet's side inputs are also those model.json records, so a rerun reproduces the shipped
# model's settings.
#   --side-inputs "A B"  train WACONet once per kind of side inputs (shape, summary,
#                  summary-tiles) and keep the model that ranks the selection patterns best
#                  (Kendall's tau at its chosen epoch); model.json's "trained.chosen" records
#                  every kind's figure
#   --out DIR      where the model folders go (default models/ in the checkout)
#   --cache DIR    generated corpus files and working databases (default $SPARSETUNE_CORPUS_CACHE,
#                  else $XDG_CACHE_HOME/sparsetune/corpus)
#   --shared DIR   the shared datasets folder (default $SPARSETUNE_SHARED_DATASETS, else
#                  ../shared/datasets beside the checkout)
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: the checkout's build, built once
# at the start, so that a source edited during hours of collection is not rebuilt between
# measurements).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

epochs=
seed=
side_choices=
out=$root/models
cache=${SPARSETUNE_CORPUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sparsetune/corpus}
shared=${SPARSETUNE_SHARED_DATASETS:-$root/../shared/datasets}
kernels=()
while [ $# -gt 0 ]; do
  case $1 in
    --epochs) epochs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --side-inputs) side_choices=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "train_models.sh: unknown option $1" >&2; exit 2 ;;
    *) kernels+=("$1"); shift ;;
  esac
done
[ ${#kernels[@]} -eq 0 ] && kernels=(spmv spmm sddmm mttkrp)
for n in ${epochs:-20} ${seed:-1}; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "train_models.sh: '$n' is not a count" >&2; exit 2; }
done
[ -d "$shared" ] || { echo "train_models.sh: no shared datasets at $shared" >&2; exit 2; }
shared=$(cd "$shared" && pwd)
source "$root/scripts/measuring_binary.sh"
mkdir -p "$cache" "$out"
cache=$(cd "$cache" && pwd)
export SPARSETUNE_CORPUS_CACHE=$cache SPARSETUNE_SHARED_DATASETS=$shared

for kernel in "${kernels[@]}"; do
  measurements=$root/datasets/measurements/$kernel.jsonl.gz
  [ -f "$measurements" ] || { echo "train_models.sh: no measurements at $measurements" >&2; exit 2; }
  SPARSETUNE_BIN="${bin[*]}" bash "$root/scripts/collect_training_data.sh" --materialize-only \
    --cache "$cache" --shared "$shared" "$kernel"
  db=$cache/train-$kernel.db
  rm -f "$db" "$db-wal" "$db-shm"
  "${bin[@]}" db import --db "$db" "$measurements"
  # The settings the shipped model records, unless given.
  recorded() {
    python3 -c 'import json, sys
try:
    m = json.load(open(sys.argv[1]))
    # Models written before side inputs were recorded fed WACONet the shape.
    v = {"epochs": m["trained"]["epochs"], "seed": m["trained"]["seed"],
         "side": m.get("side_inputs", "shape")}[sys.argv[2]]
except Exception:
    v = sys.argv[3]
print(v)' "$root/models/$kernel/model.json" "$1" "$2"
  }
  kernel_epochs=${epochs:-$(recorded epochs 20)}
  kernel_seed=${seed:-$(recorded seed 1)}
  read -ra sides <<< "${side_choices:-$(recorded side summary)}"
  for side in "${sides[@]}"; do
    target=$out/$kernel
    [ ${#sides[@]} -gt 1 ] && target=$cache/candidates/$kernel-$side
    rm -rf "$target"
    echo "== $kernel: training ($kernel_epochs epochs, seed $kernel_seed, side inputs" \
      "$side) into $target" >&2
    start=$SECONDS
    "${bin[@]}" train --kernel "$kernel" --db "$db" --out "$target" --epochs "$kernel_epochs" \
      --seed "$kernel_seed" --side-inputs "$side" > /dev/null
    echo "== $kernel: trained in $((SECONDS - start)) s; metrics in $target/metrics.json" >&2
  done
  if [ ${#sides[@]} -gt 1 ]; then
    best=$(python3 - "$cache/candidates" "$kernel" "${sides[@]}" <<'PY'
import json, os, sys
folder, kernel, sides = sys.argv[1], sys.argv[2], sys.argv[3:]
taus = {}
for side in sides:
    m = json.load(open(os.path.join(folder, f"{kernel}-{side}", "metrics.json")))
    best = m["validation"]["best_epoch"]
    taus[side] = m["epochs"]["waconet"][best - 1]["selection_kendall_tau"]
chosen = max(sides, key=lambda s: taus[s])
path = os.path.join(folder, f"{kernel}-{chosen}", "model.json")
manifest = json.load(open(path))
manifest["trained"]["chosen"] = {"by": "selection_kendall_tau", "side_inputs": taus}
json.dump(manifest, open(path, "w"), indent=2, sort_keys=True)
print(chosen)
PY
)
    rm -rf "${out:?}/$kernel"
    cp -r "$cache/candidates/$kernel-$best" "$out/$kernel"
    echo "== $kernel: kept the $best side inputs (the best selection tau; model.json says so)" >&2
  fi
done
