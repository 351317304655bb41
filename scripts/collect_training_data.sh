#!/usr/bin/env bash
# Collects the cost models' training data on this machine.
#
# The corpus is datasets/corpus/corpus.tsv: shared real matrices and tensors (minus the
# held-out datasets/corpus/validation.txt) and `sparsetune gen` commands with their seeds. For
# each kernel this script materializes the generated files into a cache folder, runs
# `sparsetune collect` over the corpus a batch at a time, and after every batch exports the
# kernel's measurements to datasets/measurements/<kernel>.jsonl.gz, so that they can be
# committed as collection proceeds. On start it imports that export, so an interrupted
# collection (on this or another machine) resumes where it stopped. The held-out files of
# validation.txt are measured first, in the same way and into the same export: training keeps
# them (and every pattern made from them) for validation only. Once the files exist,
# `sparsetune collect --kernel K datasets/corpus/corpus.tsv` reads the same manifest.
#
# Usage: scripts/collect_training_data.sh [options] [KERNEL...]  (default: spmv spmm sddmm mttkrp)
#   --samples N         sampled schedules per matrix, besides FixedCSR (default 100)
#   --neighbours N      then N schedules one move from each matrix's fastest (default 0)
#   --limit N           only the first N corpus entries of each kernel (a representative slice)
#   --batch N           matrices per collect run and export (default 10)
#   --max-ms MS         a run slower than this is recorded as a timeout (default 1000)
#   --wait-idle S       before each matrix, wait up to S seconds for the cores to be idle
#                       (default 60; other processes distort the times of small kernels)
#   --cache DIR         generated files and working databases (default $SPARSETUNE_CORPUS_CACHE,
#                       else $XDG_CACHE_HOME/sparsetune/corpus)
#   --out DIR           where the exports go (default datasets/measurements)
#   --shared DIR        the shared datasets folder (default $SPARSETUNE_SHARED_DATASETS, else
#                       ../shared/datasets beside the checkout)
#   --materialize-only  generate the corpus files and stop
#   --no-held-out       leave out the held-out files of validation.txt
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: the checkout's build, built once
# at the start, so that a source edited during hours of collection is not rebuilt between
# measurements).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

samples=100
neighbours=0
limit=0
batch=10
max_ms=1000
wait_idle=60
cache=${SPARSETUNE_CORPUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sparsetune/corpus}
out=$root/datasets/measurements
shared=${SPARSETUNE_SHARED_DATASETS:-$root/../shared/datasets}
materialize_only=0
with_held_out=1
kernels=()
while [ $# -gt 0 ]; do
  case $1 in
    --samples) samples=$2; shift 2 ;;
    --neighbours) neighbours=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --max-ms) max_ms=$2; shift 2 ;;
    --wait-idle) wait_idle=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    --materialize-only) materialize_only=1; shift ;;
    --no-held-out) with_held_out=0; shift ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "collect_training_data.sh: unknown option $1" >&2; exit 2 ;;
    *) kernels+=("$1"); shift ;;
  esac
done
[ ${#kernels[@]} -eq 0 ] && kernels=(spmv spmm sddmm mttkrp)
for n in "$samples" "$neighbours" "$limit" "$batch"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "collect_training_data.sh: '$n' is not a count" >&2; exit 2; }
done
[ "$batch" -gt 0 ] || { echo "collect_training_data.sh: --batch must be positive" >&2; exit 2; }

manifest=$root/datasets/corpus/corpus.tsv
validation=$root/datasets/corpus/validation.txt
[ -d "$shared" ] || { echo "collect_training_data.sh: no shared datasets at $shared" >&2; exit 2; }
shared=$(cd "$shared" && pwd)
source "$root/scripts/measuring_binary.sh"
mkdir -p "$cache/files" "$out"
cache=$(cd "$cache" && pwd)

read -r load _ < /proc/loadavg
if [ "$materialize_only" -eq 0 ] && awk -v l="$load" -v n="$(nproc)" 'BEGIN { exit !(l > 0.5 * n) }'; then
  echo "collect_training_data.sh: warning: load average $load on $(nproc) cores; times measured" \
    "while other processes run are distorted (collect waits up to $wait_idle s per matrix)" >&2
fi

declare -A held_out=()
held_out_files=()
while IFS= read -r line; do
  line=${line%%#*}
  line=${line%%$'\t'*}
  line=${line// /}
  [ -z "$line" ] && continue
  held_out[$line]=1
  # corpus:NAME lines hold out a corpus entry, which is collected with the corpus.
  [[ $line == corpus:* ]] || held_out_files+=("$line")
done < "$validation"

# The file of a corpus entry, generating it when missing (written under a temporary name and
# renamed, so an interrupted generation never leaves a partial file behind).
materialize() {
  local name=$1 source=$2
  if [[ $source == shared:* ]]; then
    echo "$shared/${source#shared:}"
    return
  fi
  local ext=.mtx
  [[ $source == *tensor3* ]] && ext=.tns
  local path=$cache/files/$name$ext
  if [ ! -f "$path" ]; then
    local tmp=$cache/files/.$name.$$$ext
    local -a args
    read -ra args <<< "${source//shared:/$shared/}"
    "${bin[@]}" "${args[@]}" -o "$tmp" 2> "$cache/files/.$name.log" || {
      cat "$cache/files/.$name.log" >&2
      rm -f "$tmp"
      echo "collect_training_data.sh: cannot generate $name" >&2
      return 1
    }
    rm -f "$cache/files/.$name.log"
    mv "$tmp" "$path"
  fi
  echo "$path"
}

# Entries of a kernel: the held-out files it applies to (matrices, or tensors for mttkrp),
# then the corpus entries in manifest order; "name<TAB>source" lines.
entries_for() {
  local kernel=$1 count=0
  if [ "$with_held_out" -eq 1 ]; then
    for path in "${held_out_files[@]}"; do
      if [ "$kernel" = mttkrp ]; then [[ $path == tensors/* ]] || continue
      else [[ $path == matrices/* ]] || continue; fi
      local stem=${path##*/}
      printf '%s\t%s\n' "${stem%.*}" "shared:$path"
    done
  fi
  while IFS=$'\t' read -r name kernels_field _ source; do
    [[ -z $name || $name == \#* || $name == name ]] && continue
    [[ ,$kernels_field, == *,$kernel,* ]] || continue
    local used=${source#gen resize }
    used=${used#shared:}
    used=${used%% *}
    if [[ $source == shared:* || $source == "gen resize shared:"* ]] && [ -n "${held_out[$used]:-}" ]; then
      echo "collect_training_data.sh: $name uses the held-out $used; left out" >&2
      continue
    fi
    printf '%s\t%s\n' "$name" "$source"
    count=$((count + 1))
    [ "$limit" -gt 0 ] && [ "$count" -ge "$limit" ] && break
  done < "$manifest"
  return 0
}

for kernel in "${kernels[@]}"; do
  db=$cache/training-$kernel.db
  export_file=$out/$kernel.jsonl.gz
  mapfile -t lines < <(entries_for "$kernel")
  echo "== $kernel: ${#lines[@]} corpus entries, $samples samples each, database $db" >&2
  if [ "$materialize_only" -eq 0 ] && [ -f "$export_file" ]; then
    "${bin[@]}" db import --db "$db" "$export_file"
  fi
  start=$SECONDS
  for ((first = 0; first < ${#lines[@]}; first += batch)); do
    # The batch as a list file: each path with its manifest source, which the database keeps
    # as the matrix's origin (portable, unlike a cache path).
    list=$cache/batch-$kernel.list
    : > "$list"
    count=0
    for line in "${lines[@]:first:batch}"; do
      source=${line#*$'\t'}
      path=$(materialize "${line%%$'\t'*}" "$source") || exit 1
      printf '%s\t%s\n' "$path" "$source" >> "$list"
      count=$((count + 1))
    done
    [ "$materialize_only" -eq 1 ] && continue
    echo "-- $kernel: entries $((first + 1))-$((first + count)) of ${#lines[@]}" >&2
    status=0
    "${bin[@]}" collect --kernel "$kernel" --samples "$samples" --neighbours "$neighbours" \
      --max-ms "$max_ms" --wait-idle "$wait_idle" --db "$db" "$list" || status=$?
    # 2: some file was unreadable (already reported); anything else stops the collection.
    if [ "$status" -ne 0 ] && [ "$status" -ne 2 ]; then
      echo "collect_training_data.sh: collect failed with exit code $status" >&2
      exit "$status"
    fi
    "${bin[@]}" db export --db "$db" --measurements "$export_file"
  done
  [ "$materialize_only" -eq 1 ] || echo "== $kernel done in $((SECONDS - start)) s" >&2
done
