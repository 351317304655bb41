#!/usr/bin/env bash
# Times `sparsetune db merge` on synthetic shard databases that hold, together, a given number of
# winners (default 1,000,000): what the merge job of a whole-collection run does at its end.
#
# Each shard database is made by sparsetune itself (db merge of a real database into a new
# file: the real schema, its machine row and schedules), emptied of matrices, measurements,
# failures and winners, then filled with SQL: per winner, a matrix of its own (a distinct
# fingerprint; the dimensions, nonzeros and statistics of a real matrix of the seed database,
# so rows have their real size), the winner (a schedule drawn from the seed's schedules) and
# its measurements (the winner's and FixedCSR's by default). The shards are then merged into a
# new database with one `sparsetune db merge OUT IN...`, as scripts/slurm/merge.sbatch does.
#
# Usage: scripts/slurm/merge_bench.sh --seed DB [--winners N] [--shards S]
#          [--measurements-per-winner M] [--dir DIR] [--bin PATH] [--keep]
#   --seed DB          a real sparsetune database with at least one matrix and schedule (e.g.
#                      one `sparsetune batch` wrote)
#   --winners N        winners over all shards (default 1000000)
#   --shards S         shard databases (default 10)
#   --measurements-per-winner M   1 (the winner's) or 2 (and FixedCSR's; default)
#   --dir DIR          where the databases go (default: a new folder under $TMPDIR or /tmp);
#                      needs about 2.5 KB per winner, twice (the shards and the merge)
#   --bin PATH         the sparsetune binary (default: $SPARSETUNE_BIN, else sparsetune on PATH,
#                      else build/apps/sparsetune/sparsetune)
#   --keep             keep the databases (default: removed at the end)
# Prints key=value lines (stdout): winners, shards, rows (every row the merge copies),
# input_bytes, output_bytes, merge_seconds (wall), merge_cpu_seconds (user + system),
# rows_per_second, rows_per_cpu_second. Needs the sqlite3 program.
set -euo pipefail
root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "merge_bench.sh: $*" >&2; exit 2; }
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }

seed=""
winners=1000000
shards=10
per_winner=2
dir=""
bin=""
keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --seed) need "$1" $#; seed=$2; shift 2 ;;
    --winners) need "$1" $#; winners=$2; shift 2 ;;
    --shards) need "$1" $#; shards=$2; shift 2 ;;
    --measurements-per-winner) need "$1" $#; per_winner=$2; shift 2 ;;
    --dir) need "$1" $#; dir=$2; shift 2 ;;
    --bin) need "$1" $#; bin=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$seed" ] || die "--seed DB is required"
[ -f "$seed" ] || die "$seed: no such database"
[[ $winners =~ ^[0-9]+$ ]] && [ "$winners" -ge 1 ] || die "--winners needs a positive count"
[[ $shards =~ ^[0-9]+$ ]] && [ "$shards" -ge 1 ] || die "--shards needs a positive count"
[[ $per_winner =~ ^[12]$ ]] || die "--measurements-per-winner is 1 or 2"
command -v sqlite3 > /dev/null || die "sqlite3 not found (apt-get install sqlite3)"
if [ -z "$bin" ]; then
  if [ -n "${SPARSETUNE_BIN:-}" ]; then bin=$SPARSETUNE_BIN
  elif command -v sparsetune > /dev/null; then bin=$(command -v sparsetune)
  else bin=$root_dir/build/apps/sparsetune/sparsetune; fi
fi
[ -x "$bin" ] || die "$bin: not an executable sparsetune (give --bin PATH)"
if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/sparsetune-merge-bench.XXXXXX")
  [ "$keep" -eq 1 ] || trap 'rm -rf "$dir"' EXIT
else
  mkdir -p "$dir"
  # Only what this script writes there.
  [ "$keep" -eq 1 ] || trap 'rm -f "$dir"/base.db* "$dir"/shard-*.db* "$dir"/merged.db* \
    "$dir"/merge.log "$dir"/merge.time' EXIT
fi

# The schema, machine and schedules, as sparsetune writes them.
base=$dir/base.db
rm -f "$base"
"$bin" db merge "$base" "$seed" 2> /dev/null
read -r template schedules < <(sqlite3 -separator ' ' "$base" \
  "SELECT (SELECT id FROM matrices ORDER BY length(stats) DESC LIMIT 1),
          (SELECT COUNT(*) FROM schedules WHERE kernel = 'spmv')")
[ -n "$template" ] && [ "${schedules:-0}" -ge 1 ] ||
  die "$seed: needs a matrix and an spmv schedule"
machine=$(sqlite3 "$base" "SELECT MIN(id) FROM machines")
fixed_csr=$(sqlite3 "$base" "SELECT id FROM schedules WHERE kernel = 'spmv' AND canonical_json \
  LIKE '%\"format\":[\"i:U\",\"k:C\"]%' ORDER BY id LIMIT 1")
[ -n "$fixed_csr" ] || fixed_csr=$(sqlite3 "$base" "SELECT MIN(id) FROM schedules WHERE kernel = 'spmv'")

inputs=()
for ((s = 0; s < shards; ++s)); do
  count=$(( winners / shards + (s < winners % shards ? 1 : 0) ))
  shard=$dir/shard-$s.db
  cp "$base" "$shard"
  fixed_sql=""
  if [ "$per_winner" -eq 2 ]; then
    fixed_sql="INSERT INTO measurements (matrix_id, schedule_id, machine_id, dense, dtype,
        median_ms, min_ms, max_ms, reps, pack_ms, compile_ms, verified, source, created_at)
      SELECT m.id, $fixed_csr, $machine, '{}', 'f32', 0.02, 0.019, 0.03, 50, 0.1, 0, 1,
        'fixed_csr', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
      FROM matrices m WHERE m.id NOT IN (SELECT matrix_id FROM winners WHERE schedule_id = $fixed_csr);"
  fi
  sqlite3 "$shard" > /dev/null <<EOF
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
BEGIN;
CREATE TEMP TABLE template AS SELECT dims, nnz, stats FROM matrices WHERE id = $template;
CREATE TEMP TABLE pool AS
  SELECT ROW_NUMBER() OVER (ORDER BY id) - 1 AS k, id FROM schedules WHERE kernel = 'spmv';
DELETE FROM winners;
DELETE FROM measurements;
DELETE FROM failures;
DELETE FROM matrices;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $count)
INSERT INTO matrices (fingerprint, name, dims, nnz, stats, source_path)
  SELECT printf('%08x%024x', $s, i), printf('synthetic_%d_%d', $s, i), t.dims, t.nnz, t.stats,
         printf('/scratch/suitesparse/Synthetic/m%d_%d/m%d_%d.mtx', $s, i, $s, i)
  FROM n, template t;
INSERT INTO winners (matrix_id, kernel, machine_id, dense, dtype, schedule_id, time_ms,
                     fixed_csr_ms, updated_at)
  SELECT m.id, 'spmv', $machine, '{}', 'f32', p.id, 0.01 + (m.id % 997) * 1e-5, 0.02,
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  FROM matrices m JOIN pool p ON p.k = m.id % $schedules;
INSERT INTO measurements (matrix_id, schedule_id, machine_id, dense, dtype, median_ms, min_ms,
                          max_ms, reps, pack_ms, compile_ms, verified, source, created_at)
  SELECT w.matrix_id, w.schedule_id, $machine, '{}', 'f32', w.time_ms, w.time_ms * 0.95,
         w.time_ms * 1.5, 100, 0.2, 0, 1, 'sampled', w.updated_at
  FROM winners w;
$fixed_sql
COMMIT;
EOF
  inputs+=("$shard")
done

rows=$(for shard in "${inputs[@]}"; do
  sqlite3 "$shard" "SELECT (SELECT COUNT(*) FROM matrices) + (SELECT COUNT(*) FROM schedules) +
    (SELECT COUNT(*) FROM measurements) + (SELECT COUNT(*) FROM failures) +
    (SELECT COUNT(*) FROM winners) + (SELECT COUNT(*) FROM machines)"
done | awk '{ s += $1 } END { print s }')
input_bytes=$(du -cb "${inputs[@]}" | awk 'END { print $1 }')
out=$dir/merged.db
rm -f "$out"
# Wall time, and the merge's CPU time (user + system): on a busy machine the wall time
# includes waiting for a core, the CPU time much less so.
TIMEFORMAT='%R %U %S'
{ time "$bin" db merge "$out" "${inputs[@]}" 2> "$dir/merge.log"; } 2> "$dir/merge.time" ||
  { cat "$dir/merge.log" >&2; exit 3; }
read -r wall user system < "$dir/merge.time"
merged=$(sqlite3 "$out" "SELECT COUNT(*) FROM winners")
[ "$merged" -eq "$winners" ] || die "the merge holds $merged winners, not $winners"
output_bytes=$(stat -c %s "$out")
awk -v w="$winners" -v s="$shards" -v r="$rows" -v ib="$input_bytes" -v ob="$output_bytes" \
    -v t="$wall" -v u="$user" -v y="$system" 'BEGIN {
  printf "winners=%d\nshards=%d\nrows=%d\ninput_bytes=%d\noutput_bytes=%d\n", w, s, r, ib, ob
  printf "merge_seconds=%.1f\nmerge_cpu_seconds=%.1f\n", t, u + y
  printf "rows_per_second=%.0f\nrows_per_cpu_second=%.0f\n", r / t, r / (u + y)
}'
