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
#   --out DIR      where the model folders go (default models/ in the checkout)
#   --cache DIR    generated corpus files and working databases (default $SPARSETUNE_CORPUS_CACHE,
#                  else $XDG_CACHE_HOME/sparsetune/corpus)
#   --shared DIR   the shared datasets folder (default $SPARSETUNE_SHARED_DATASETS, else
#                  ../shared/datasets beside the checkout)
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: scripts/sparsetune, which builds
# it when needed).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

epochs=
seed=
out=$root/models
cache=${SPARSETUNE_CORPUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sparsetune/corpus}
shared=${SPARSETUNE_SHARED_DATASETS:-$root/../shared/datasets}
kernels=()
while [ $# -gt 0 ]; do
  case $1 in
    --epochs) epochs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
if [ -n "${SPARSETUNE_BIN:-}" ]; then
  read -ra bin <<< "$SPARSETUNE_BIN"
else
  bin=(bash "$root/scripts/sparsetune")
fi
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
  side_inputs=$(recorded side summary)
  echo "== $kernel: training ($kernel_epochs epochs, seed $kernel_seed, side inputs" \
    "$side_inputs) into $out/$kernel" >&2
  start=$SECONDS
  "${bin[@]}" train --kernel "$kernel" --db "$db" --out "$out/$kernel" --epochs "$kernel_epochs" \
    --seed "$kernel_seed" --side-inputs "$side_inputs" > /dev/null
  echo "== $kernel: trained in $((SECONDS - start)) s; metrics in $out/$kernel/metrics.json" >&2
done
