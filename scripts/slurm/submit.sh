#!/usr/bin/env bash
# Tunes (sparsetune batch) or collects training data (sparsetune collect) over many matrices on
# a Slurm cluster: a job array whose task I runs shard I of N into its own database on the
# node's local disk, copied back to the run folder as it goes, and a job that runs after every
# task succeeded (--dependency=afterok) and merges the shards' databases into one
# (sparsetune db merge). Submitting again with the same run folder and options resumes: tasks
# that finished are not submitted again, and a task that was stopped (scancel, time limit,
# node failure) starts from its last copy, where batch skips every matrix whose winner is
# stored and collect every schedule already measured.
#
# Usage: scripts/slurm/submit.sh (tune|collect) --work DIR --kernel K [--kernel K]... --tasks N
#          (--catalog CSV --root DIR [--group G] [--kind K] [--max-nnz N] | PATH...)
#          [options] [-- SPARSETUNE-OPTIONS...]
#   tune | collect    sparsetune batch (one winner per matrix) or sparsetune collect (FixedCSR
#                     and sampled schedules per matrix, for training a cost model)
#   --work DIR        the run folder, on storage every node sees: options, shard lists,
#                     databases copied from the tasks, summaries, logs, the merged database
#   --kernel K        a kernel (repeat for several: each task runs them one after the other)
#   --tasks N         array tasks, one shard each; shards are balanced by estimated cost (the
#                     catalogue's nnz, else the file size) exactly as batch --shard balances them
#   --catalog CSV --root DIR [--group G] [--kind K] [--max-nnz N]
#                     SuiteSparse's catalogue (ssstats.csv) and the folder holding its files,
#                     filtered as in batch; or PATH...: matrix files and folders
#   -- OPTIONS        passed to every sparsetune batch or collect (e.g. -- --samples 100)
# Slurm and node options (may change between submissions of one run):
#   --time T          time limit of each task (sbatch --time, e.g. 12:00:00); 3 minutes before
#                     it, a task stops sparsetune and copies its database back
#   --merge-time T    time limit of the merge job (default 2:00:00)
#   --threads T       cores per task: --cpus-per-task=T and OMP_NUM_THREADS=T. Without
#                     --share-nodes every task still has its node to itself (--exclusive)
#   --share-nodes     let tasks share a node (needs --threads): sparsetune runs under
#                     srun --cpu-bind=cores, which needs a cluster whose TaskPlugin binds
#                     (task/affinity or task/cgroup); refused otherwise. By default every task
#                     runs with --exclusive, so that two tasks never time kernels on shared cores
#   --max-running M   at most M tasks at once (--array=...%M)
#   --partition P, --account A, --sbatch-arg ARG (repeatable): passed to sbatch
#   --bin PATH        the sparsetune binary as the nodes see it (default: $SPARSETUNE_BIN, else
#                     sparsetune on PATH, else build/apps/sparsetune/sparsetune)
#   --local DIR       node-local folder for a task's database and kernel cache (default:
#                     $SLURM_TMPDIR, else $TMPDIR, else /tmp, on the node)
#   --cache DIR       sparsetune's cache (compiled kernels) instead of one under --local
#   --checkpoint S    seconds between copies of a running task's database to DIR (default 600)
#   --nice N          run sparsetune under nice -n N (the OS priority, not Slurm's --nice)
#   --out FILE        the merged database (default DIR/sparsetune.db); merging into an
#                     existing database adds to it
#   --only LIST       submit only these tasks (e.g. 3,7-9; the kernels a task finished are
#                     not run again)
#   --merge-only      submit only the merge job, now, with the shards as they are
#   --dry-run         print what would be submitted; change nothing
# Files under DIR: run.conf (the options that define the run), lists/I.list (collect: task I's
# files), shards/I.db (task I's database), state/ (finished tasks and kernels), summaries/
# (batch summaries, KERNEL.I.JOBID.csv), logs/, jobs (the job ids submitted).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(cd "$here/../.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "submit.sh: $*" >&2; exit 2; }
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }

mode=""
work=""
kernels=()
tasks=""
catalog=""
root=""
group=""
kind=""
max_nnz=""
paths=()
extra=()
time_limit=""
merge_time=2:00:00
threads=""
share_nodes=0
max_running=""
partition=""
account=""
sbatch_args=()
bin=""
local_dir=""
cache=""
checkpoint=600
nice_level=""
out=""
only=""
merge_only=0
dry_run=0
while [ $# -gt 0 ]; do
  case $1 in
    tune|collect) [ -z "$mode" ] || die "give tune or collect once"; mode=$1; shift ;;
    --work) need "$1" $#; work=$2; shift 2 ;;
    --kernel) need "$1" $#; kernels+=("$2"); shift 2 ;;
    --tasks) need "$1" $#; tasks=$2; shift 2 ;;
    --catalog) need "$1" $#; catalog=$2; shift 2 ;;
    --root) need "$1" $#; root=$2; shift 2 ;;
    --group) need "$1" $#; group=$2; shift 2 ;;
    --kind) need "$1" $#; kind=$2; shift 2 ;;
    --max-nnz) need "$1" $#; max_nnz=$2; shift 2 ;;
    --time) need "$1" $#; time_limit=$2; shift 2 ;;
    --merge-time) need "$1" $#; merge_time=$2; shift 2 ;;
    --threads) need "$1" $#; threads=$2; shift 2 ;;
    --share-nodes) share_nodes=1; shift ;;
    --max-running) need "$1" $#; max_running=$2; shift 2 ;;
    --partition) need "$1" $#; partition=$2; shift 2 ;;
    --account) need "$1" $#; account=$2; shift 2 ;;
    --sbatch-arg) need "$1" $#; sbatch_args+=("$2"); shift 2 ;;
    --bin) need "$1" $#; bin=$2; shift 2 ;;
    --local) need "$1" $#; local_dir=$2; shift 2 ;;
    --cache) need "$1" $#; cache=$2; shift 2 ;;
    --checkpoint) need "$1" $#; checkpoint=$2; shift 2 ;;
    --nice) need "$1" $#; nice_level=$2; shift 2 ;;
    --out) need "$1" $#; out=$2; shift 2 ;;
    --only) need "$1" $#; only=$2; shift 2 ;;
    --merge-only) merge_only=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) paths+=("$1"); shift ;;
  esac
done

# --- Checks --------------------------------------------------------------------------------
[ -n "$mode" ] || die "say tune or collect (see --help)"
[ -n "$work" ] || die "--work DIR is required"
[ ${#kernels[@]} -gt 0 ] || die "--kernel K is required"
for k in "${kernels[@]}"; do
  [[ $k =~ ^[A-Za-z0-9_]+$ ]] || die "--kernel '$k' is not a kernel name"
done
[[ $tasks =~ ^[0-9]+$ ]] && [ "$tasks" -ge 1 ] || die "--tasks N needs a positive count"
[[ $checkpoint =~ ^[0-9]+$ ]] && [ "$checkpoint" -ge 1 ] || die "--checkpoint needs seconds"
[ -z "$threads" ] || { [[ $threads =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ]; } ||
  die "--threads needs a positive count"
[ -z "$max_running" ] || { [[ $max_running =~ ^[0-9]+$ ]] && [ "$max_running" -ge 1 ]; } ||
  die "--max-running needs a positive count"
[ -z "$nice_level" ] || [[ $nice_level =~ ^-?[0-9]+$ ]] || die "--nice needs a number"
[ -z "$max_nnz" ] || [[ $max_nnz =~ ^[0-9]+$ ]] || die "--max-nnz '$max_nnz' is not a count"
[ -z "$only" ] || [[ $only =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
  die "--only '$only': expected a list like 3,7-9"
[ "$share_nodes" -eq 0 ] || [ -n "$threads" ] || die "--share-nodes needs --threads T"
if [ -n "$catalog" ]; then
  [ ${#paths[@]} -eq 0 ] || die "give --catalog or paths, not both"
  [ -f "$catalog" ] || die "$catalog: no such catalogue"
  [ -n "$root" ] && [ -d "$root" ] || die "--catalog needs --root DIR (a folder)"
  catalog=$(realpath -s "$catalog")
  root=$(realpath -s "$root")
else
  [ ${#paths[@]} -gt 0 ] || die "give --catalog CSV --root DIR, or matrix files or folders"
  [ -z "$root$group$kind$max_nnz" ] || die "--root, --group, --kind and --max-nnz go with --catalog"
  for k in "${!paths[@]}"; do
    [ -e "${paths[$k]}" ] || die "${paths[$k]}: no such file or folder"
    paths[$k]=$(realpath -s "${paths[$k]}")
  done
fi
if [ -z "$bin" ]; then
  if [ -n "${SPARSETUNE_BIN:-}" ]; then bin=$SPARSETUNE_BIN
  elif command -v sparsetune > /dev/null; then bin=$(command -v sparsetune)
  else bin=$root_dir/build/apps/sparsetune/sparsetune; fi
fi
[ -x "$bin" ] || die "$bin: not an executable sparsetune (give --bin PATH)"
bin=$(realpath -s "$bin")
work=$(realpath -m -s "$work")
[ -n "$out" ] || out=$work/sparsetune.db
out=$(realpath -m -s "$out")
for tool in sbatch squeue scancel; do
  command -v "$tool" > /dev/null || die "$tool not found: is this a Slurm submit host?"
done
if [ "$share_nodes" -eq 1 ]; then
  task_plugin=$(scontrol show config 2>/dev/null | awk -F' *= *' '$1 == "TaskPlugin" { print $2 }')
  [[ $task_plugin == *affinity* || $task_plugin == *cgroup* ]] ||
    die "--share-nodes needs a TaskPlugin that binds tasks to cores (task/affinity or" \
        "task/cgroup); this cluster has '${task_plugin:-unknown}': leave out --share-nodes" \
        "(every task then has its node to itself)"
fi

# --- The run's definition: what must stay the same for a resubmission to resume ------------
conf=$(
  q() { printf '%s=%q\n' "$1" "$2"; }
  qa() { local name=$1; shift; printf '%s=(' "$name"; [ $# -eq 0 ] || printf ' %q' "$@"; printf ' )\n'; }
  echo "# sparsetune Slurm run: written by scripts/slurm/submit.sh, read by its jobs"
  q mode "$mode"
  qa kernels "${kernels[@]}"
  q tasks "$tasks"
  q catalog "$catalog"
  q root "$root"
  q group "$group"
  q kind "$kind"
  q max_nnz "$max_nnz"
  qa paths "${paths[@]}"
  qa extra "${extra[@]}"
  q out "$out"
)
# What may change from one submission to the next; read by the jobs when they start.
settings=$(
  q() { printf '%s=%q\n' "$1" "$2"; }
  q bin "$bin"
  q local_dir "$local_dir"
  q cache "$cache"
  q checkpoint "$checkpoint"
  q nice_level "$nice_level"
  q threads "$threads"
  q share_nodes "$share_nodes"
)

if [ -f "$work/run.conf" ]; then
  if ! diff <(grep -v '^#' "$work/run.conf") <(grep -v '^#' <<< "$conf") > /dev/null; then
    echo "submit.sh: $work holds a run with other options; to resume it, submit it as it was:" >&2
    diff <(grep -v '^#' "$work/run.conf") <(grep -v '^#' <<< "$conf") | sed 's/^/  /' >&2 || true
    exit 2
  fi
fi

# Jobs of earlier submissions of this run (the ids this script recorded).
job_state() { squeue -h -j "$1" -o %T 2>/dev/null | head -n 1 || true; }
stale_merge=""
if [ -f "$work/jobs" ]; then
  while read -r what id _; do
    state=$(job_state "$id")
    [ -n "$state" ] || continue
    if [ "$what" = merge ] && [ "$state" = PENDING ]; then
      stale_merge+=" $id"
    else
      die "job $id ($what, $state) of an earlier submission is still in the queue: wait for it" \
          "or scancel it, then submit again"
    fi
  done < "$work/jobs"
fi

# --- What to submit ------------------------------------------------------------------------
expand_list() {
  local part
  IFS=, read -ra parts <<< "$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}
todo=()
if [ "$merge_only" -eq 0 ]; then
  if [ -n "$only" ]; then
    while read -r t; do
      [ "$t" -lt "$tasks" ] || die "--only: task $t is not below --tasks $tasks"
      todo+=("$t")
    done < <(expand_list "$only" | sort -n -u)
  else
    for ((t = 0; t < tasks; ++t)); do
      [ -f "$work/state/$t.done" ] || todo+=("$t")
    done
  fi
fi
array_spec=$(printf '%s\n' "${todo[@]}" | awk 'NF {
    if (start == "") { start = $1; prev = $1; next }
    if ($1 == prev + 1) { prev = $1; next }
    out = out (out == "" ? "" : ",") (start == prev ? start : start "-" prev); start = $1; prev = $1
  } END { if (start != "") out = out (out == "" ? "" : ",") (start == prev ? start : start "-" prev); print out }')
[ -z "$max_running" ] || [ -z "$array_spec" ] || array_spec+="%$max_running"

common=(--parsable)
[ -z "$partition" ] || common+=(--partition="$partition")
[ -z "$account" ] || common+=(--account="$account")
common+=("${sbatch_args[@]}")
task_args=("${common[@]}" --job-name="sparsetune-$mode" --array="$array_spec" --nodes=1
           --ntasks=1 --output="$work/logs/task-%A_%a.out" --signal=B:USR1@180)
if [ "$share_nodes" -eq 0 ]; then task_args+=(--exclusive); fi
[ -z "$threads" ] || task_args+=(--cpus-per-task="$threads")
[ -z "$time_limit" ] || task_args+=(--time="$time_limit")
merge_args=("${common[@]}" --job-name=sparsetune-merge --nodes=1 --ntasks=1 --cpus-per-task=1
            --output="$work/logs/merge-%j.out" --time="$merge_time")

if [ ${#todo[@]} -eq 0 ] && [ "$merge_only" -eq 0 ] && [ -f "$work/state/merged" ] &&
   [ -z "$(find "$work/state" -name '*.done' -newer "$work/state/merged" -print -quit)" ]; then
  echo "the run is complete: $out (merged $(cat "$work/state/merged")); --merge-only merges again"
  exit 0
fi

if [ "$dry_run" -eq 1 ]; then
  # The shards' sizes (what each task gets), as batch --shard and the collect lists make them.
  if [ -n "$catalog" ]; then
    bash "$here/shards.sh" --shards "$tasks" --totals --catalog "$catalog" --root "$root" \
      ${group:+--group "$group"} ${kind:+--kind "$kind"} ${max_nnz:+--max-nnz "$max_nnz"}
  else
    bash "$here/shards.sh" --shards "$tasks" --totals "${paths[@]}"
  fi
  [ -z "$stale_merge" ] || echo "scancel$stale_merge"
  if [ ${#todo[@]} -gt 0 ]; then
    printf 'sbatch'; printf ' %q' "${task_args[@]}" "$here/task.sbatch" "$work"; echo
    printf 'sbatch'; printf ' %q' "${merge_args[@]}" --dependency=afterok:ARRAY \
      --kill-on-invalid-dep=yes "$here/merge.sbatch" "$work"; echo
  else
    printf 'sbatch'; printf ' %q' "${merge_args[@]}" "$here/merge.sbatch" "$work"
    [ "$merge_only" -eq 0 ] || printf ' --partial'
    echo
  fi
  exit 0
fi

# --- Submit --------------------------------------------------------------------------------
mkdir -p "$work"/{lists,shards,state,summaries,logs}
if [ ! -f "$work/run.conf" ]; then
  printf '%s\n' "$conf" > "$work/run.conf.tmp"
  mv "$work/run.conf.tmp" "$work/run.conf"
fi
printf '%s\n' "$settings" > "$work/settings.conf.tmp"
mv "$work/settings.conf.tmp" "$work/settings.conf"
if [ "$mode" = collect ] && [ ! -f "$work/lists/.complete" ]; then
  # collect takes files, not a shard: each task gets its share as a list file, computed once.
  if [ -n "$catalog" ]; then
    bash "$here/shards.sh" --shards "$tasks" --lists "$work/lists" --catalog "$catalog" \
      --root "$root" ${group:+--group "$group"} ${kind:+--kind "$kind"} \
      ${max_nnz:+--max-nnz "$max_nnz"} > "$work/lists/items.tsv"
  else
    bash "$here/shards.sh" --shards "$tasks" --lists "$work/lists" "${paths[@]}" \
      > "$work/lists/items.tsv"
  fi
  touch "$work/lists/.complete"
fi
if [ -n "$stale_merge" ]; then
  # A merge job left waiting on an array that can no longer succeed.
  # shellcheck disable=SC2086
  scancel $stale_merge
  echo "cancelled the earlier merge job$stale_merge" >&2
fi

if [ ${#todo[@]} -gt 0 ]; then
  array=$(sbatch "${task_args[@]}" "$here/task.sbatch" "$work")
  array=${array%%;*}
  echo "array $array ${todo[*]}" >> "$work/jobs"
  merge=$(sbatch "${merge_args[@]}" --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    "$here/merge.sbatch" "$work")
  merge=${merge%%;*}
  echo "merge $merge" >> "$work/jobs"
  echo "submitted array job $array (tasks $array_spec of $tasks) and merge job $merge" \
    "(after every task succeeded) into $out"
else
  partial=()
  [ "$merge_only" -eq 0 ] || partial=(--partial)
  merge=$(sbatch "${merge_args[@]}" "$here/merge.sbatch" "$work" "${partial[@]}")
  merge=${merge%%;*}
  echo "merge $merge" >> "$work/jobs"
  if [ "$merge_only" -eq 1 ]; then
    echo "submitted merge job $merge: the shards as they are, into $out"
  else
    echo "every task has finished: submitted merge job $merge into $out"
  fi
fi
echo "follow with: squeue -j ${array:-$merge}; logs in $work/logs; resubmit the same command to resume"
