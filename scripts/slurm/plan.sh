#!/usr/bin/env bash
# The cost of tuning or collecting over SuiteSparse's whole catalogue on a cluster, from
# measurements taken on this machine type: a cost model per kernel (seconds per matrix against
# its nonzeros), and from it the plan: node-hours, the wall time of a job array on N nodes with
# the array's own balancing (scripts/slurm/shards.sh: largest nnz first onto the least loaded
# shard, one task per node), the size of the merged database and the time of its merge.
#
# Sources, each named in the output:
# - collect: the collection's exports (datasets/measurements/<kernel>.jsonl.gz, every one that
#   exists). Records of a matrix are stored together when its last schedule is done, so a
#   matrix's cost is the time from the previous matrix's last record to its own last record
#   (created_at). The first matrix of a session (after a gap over --session-gap) is left out.
# - tune: summaries of `sparsetune batch --summary` (the tune_ms of every row tuned).
# - database size: a real database per tune kernel (--tune-db: its bytes per winner, with the
#   measurements, failures, matrix and schedule rows a tune writes), and the exports imported
#   into a new database (bytes per collected matrix); both copied first with `db merge`, so
#   the sizes are those of a freshly merged database.
# - merge time: scripts/slurm/merge_bench.sh's output (--merge-bench), rows per second.
# - memory: peak resident sizes of single tunes (--peak-memory NNZ:KB, e.g. from
#   /usr/bin/time -f %M), fitted as KB = c + d * nnz; matrices whose estimate exceeds the node's
#   memory are counted apart.
#
# The cost model is seconds = a + b * nnz, fitted by least squares on the matrices measured:
# a is what every matrix costs whatever its size (compiling the kernels it needs the first
# time, the timing protocol's minimum time per candidate, reading, verification set-up), b the
# part that grows with the work of each kernel run. A least-squares line with an intercept
# keeps the sum of its predictions over the measured matrices equal to the sum measured, which
# is what node-hours add up; the slope of a log-log fit is printed beside it as a check of the
# shape (near 0: the fixed part dominates the measured range; near 1: proportional to nnz).
# Matrices above the measured range are an extrapolation, and the output says how much of the
# total comes from them.
#
# Usage: scripts/slurm/plan.sh [--measurements DIR] [--summary KERNEL=CSV]...
#          [--tune-db KERNEL=DB]... [--merge-bench FILE] [--peak-memory NNZ:KB]...
#          [--catalog CSV] [--nodes "10 100"] [--node-memory GB] [--time-limit HOURS]
#          [--max-nnz N] [--bin PATH] [--session-gap S]
#   --measurements DIR  the exports (default datasets/measurements)
#   --summary K=CSV     a batch summary for kernel K (repeatable, several per kernel allowed)
#   --tune-db K=DB      the database the tune of kernel K wrote (repeatable)
#   --merge-bench FILE  merge_bench.sh's key=value output
#   --peak-memory NNZ:KB  a tune's peak resident size (repeatable)
#   --catalog CSV       SuiteSparse's catalogue (default: ../shared/datasets/catalog/ssstats.csv
#                       beside the checkout, or $SPARSETUNE_SHARED_DATASETS/catalog/ssstats.csv)
#   --nodes LIST        node counts of the plan (default "10 100")
#   --node-memory GB    memory per node (default: this machine's MemTotal)
#   --time-limit HOURS  a task's time limit: single matrices predicted above it are counted
#                       (default 24)
#   --max-nnz N         plan only catalogue entries with at most N nonzeros
#   --bin PATH          the sparsetune binary, for the database sizes (default:
#                       $SPARSETUNE_BIN, else sparsetune on PATH, else build/apps/sparsetune/)
#   --session-gap S     seconds between records that start a new collection session (default
#                       1800)
set -euo pipefail
root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "plan.sh: $*" >&2; exit 2; }
need() { [ "$2" -ge 2 ] || die "$1 needs a value"; }

measurements=$root_dir/datasets/measurements
summaries=()
tune_dbs=()
merge_bench=""
peaks=()
shared=${SPARSETUNE_SHARED_DATASETS:-$root_dir/../shared/datasets}
catalog=$shared/catalog/ssstats.csv
nodes="10 100"
node_memory=$(awk '/^MemTotal:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
time_limit=24
max_nnz=""
bin=""
session_gap=1800
while [ $# -gt 0 ]; do
  case $1 in
    --measurements) need "$1" $#; measurements=$2; shift 2 ;;
    --summary) need "$1" $#; summaries+=("$2"); shift 2 ;;
    --tune-db) need "$1" $#; tune_dbs+=("$2"); shift 2 ;;
    --merge-bench) need "$1" $#; merge_bench=$2; shift 2 ;;
    --peak-memory) need "$1" $#; peaks+=("$2"); shift 2 ;;
    --catalog) need "$1" $#; catalog=$2; shift 2 ;;
    --nodes) need "$1" $#; nodes=$2; shift 2 ;;
    --node-memory) need "$1" $#; node_memory=$2; shift 2 ;;
    --time-limit) need "$1" $#; time_limit=$2; shift 2 ;;
    --max-nnz) need "$1" $#; max_nnz=$2; shift 2 ;;
    --bin) need "$1" $#; bin=$2; shift 2 ;;
    --session-gap) need "$1" $#; session_gap=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ -f "$catalog" ] || die "$catalog: no such catalogue (give --catalog)"
catalog=$(cd "$(dirname "$catalog")" && pwd)/$(basename "$catalog")
for n in $nodes; do [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || die "--nodes: '$n' is not a count"; done
[[ $node_memory =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--node-memory needs gigabytes"
[[ $time_limit =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--time-limit needs hours"
[ -z "$max_nnz" ] || [[ $max_nnz =~ ^[0-9]+$ ]] || die "--max-nnz '$max_nnz' is not a count"
[[ $session_gap =~ ^[0-9]+$ ]] || die "--session-gap needs seconds"
for s in "${summaries[@]}" "${tune_dbs[@]}"; do
  [[ $s == *=* ]] || die "'$s': expected KERNEL=FILE"
  [ -f "${s#*=}" ] || die "${s#*=}: no such file"
done
for p in "${peaks[@]}"; do
  [[ $p =~ ^[0-9]+:[0-9]+$ ]] || die "--peak-memory '$p': expected NNZ:KB"
done
[ -z "$merge_bench" ] || [ -f "$merge_bench" ] || die "$merge_bench: no such file"
if [ -z "$bin" ]; then
  if [ -n "${SPARSETUNE_BIN:-}" ]; then bin=$SPARSETUNE_BIN
  elif command -v sparsetune > /dev/null; then bin=$(command -v sparsetune)
  else bin=$root_dir/build/apps/sparsetune/sparsetune; fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sparsetune-plan.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- Samples: "mode kernel nnz seconds source" lines ---------------------------------------
samples=$work/samples
: > "$samples"
exports=()
if [ -d "$measurements" ]; then
  for f in "$measurements"/*.jsonl.gz; do [ -f "$f" ] && exports+=("$f"); done
fi
for f in "${exports[@]}"; do
  kernel=$(basename "$f" .jsonl.gz)
  zcat "$f" | awk -v kernel="$kernel" -v source="${f#"$root_dir"/}" -v gap="$session_gap" '
    # Seconds since 1970 of an ISO-8601 UTC time (days from the civil date, as in
    # H. Hinnant'"'"'s algorithm; mawk has no mktime).
    function seconds(t,   y, m, d, era, yoe, doy, doe) {
      y = substr(t, 1, 4) + 0; m = substr(t, 6, 2) + 0; d = substr(t, 9, 2) + 0
      if (m <= 2) y -= 1
      era = int(y / 400); yoe = y - era * 400
      doy = int((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
      doe = yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy
      return (era * 146097 + doe - 719468) * 86400 + substr(t, 12, 2) * 3600 + \
             substr(t, 15, 2) * 60 + substr(t, 18)
    }
    function field(name,   at, rest) {
      at = index($0, "\"" name "\":")
      if (at == 0) return ""
      rest = substr($0, at + length(name) + 3)
      if (substr(rest, 1, 1) == "\"") { rest = substr(rest, 2); return substr(rest, 1, index(rest, "\"") - 1) }
      match(rest, /^[-0-9.eE+]+/)
      return substr(rest, 1, RLENGTH)
    }
    /"t":"matrix"/ { nnz[field("id")] = field("nnz"); next }
    /"t":"[mf]"/ {
      id = field("matrix"); t = seconds(field("created_at"))
      if (!(id in last) || t > last[id]) last[id] = t
    }
    END { for (id in last) printf "%.3f %s %s\n", last[id], id, nnz[id] }' \
    | sort -n | awk -v kernel="$kernel" -v source="${f#"$root_dir"/}" -v gap="$session_gap" '
      NR > 1 && $1 - previous <= gap && $3 != "" { print "collect", kernel, $3, $1 - previous, source }
      { previous = $1 }' >> "$samples"
done
for s in "${summaries[@]}"; do
  kernel=${s%%=*}
  file=${s#*=}
  awk -F, -v kernel="$kernel" -v source="$file" '
    NR > 1 && NF >= 9 && $3 == "tuned" && $4 != "" && $8 != "" {
      print "tune", kernel, $4, $8 / 1000, source
    }' "$file" >> "$samples"
done
[ -s "$samples" ] || die "no measurements: give exports (--measurements) or summaries (--summary)"

# --- Database sizes: bytes per tuned matrix and per collected matrix ------------------------
sizes=$work/sizes
: > "$sizes"
# "mode kernel bytes rows measurements source" per unit (a winner, or a collected matrix), from
# `db stats --json` (its top-level counts) on stdin.
stats_line() {
  awk -v mode="$1" -v kernel="$2" -v bytes="$3" -v source="$4" -v unit="$5" '
    /^  "[a-z_]+": [0-9]+/ { name = $1; gsub(/[":]/, "", name); v = $2; gsub(/[^0-9]/, "", v); c[name] = v }
    END {
      u = c[unit]; if (u <= 0) exit
      rows = c["matrices"] + c["schedules"] + c["measurements"] + c["failures"] + c["winners"] + c["machines"]
      printf "%s %s %.0f %.1f %.1f %s\n", mode, kernel, bytes / u, rows / u, c["measurements"] / u, source
    }'
}
if [ -x "$bin" ]; then
  for s in "${tune_dbs[@]}"; do
    kernel=${s%%=*}
    copy=$work/tune-$kernel.db
    rm -f "$copy"
    "$bin" db merge "$copy" "${s#*=}" 2> /dev/null
    "$bin" db stats --db "$copy" --json | stats_line tune "$kernel" "$(stat -c %s "$copy")" \
      "${s#*=}" winners >> "$sizes"
  done
  for f in "${exports[@]}"; do
    kernel=$(basename "$f" .jsonl.gz)
    copy=$work/collect-$kernel.db
    rm -f "$copy"
    "$bin" db import --db "$copy" "$f" 2> /dev/null
    "$bin" db stats --db "$copy" --json | stats_line collect "$kernel" "$(stat -c %s "$copy")" \
      "${f#"$root_dir"/}" matrices >> "$sizes"
  done
else
  echo "plan.sh: $bin not found: no database sizes (give --bin)" >&2
fi

# --- The catalogue: nnz, rows, cols of every entry kept --------------------------------------
entries=$work/entries
awk -F, -v max_nnz="$max_nnz" 'NR > 2 && NF >= 13 && (max_nnz == "" || $5 + 0 <= max_nnz + 0) {
  print $5, $3, $4, $1 "/" $2 }' "$catalog" | sort -s -k1,1nr > "$entries"

merge_rate=""
merge_line=""
if [ -n "$merge_bench" ]; then
  merge_rate=$(awk -F= '{ v[$1] = $2 } END { print v["rows_per_second"] " " v["rows_per_cpu_second"] }' "$merge_bench")
  merge_line=$(awk -F= '{ v[$1] = $2 } END {
    printf "%d winners in %d shard databases (%d rows, %.0f MB in, %.0f MB out) merged in %.1f s wall (%.0f rows/s), %.1f s of CPU (%.0f rows per CPU second)",
      v["winners"], v["shards"], v["rows"], v["input_bytes"] / 1e6, v["output_bytes"] / 1e6,
      v["merge_seconds"], v["rows_per_second"], v["merge_cpu_seconds"], v["rows_per_cpu_second"] }' "$merge_bench")
fi

peak_fit=$(printf '%s\n' "${peaks[@]}" | awk -F: 'NF == 2 { n++; x[n] = $1; y[n] = $2 }
  END {
    if (n == 0) { print ""; exit }
    if (n == 1) { printf "0 %.6f\n", y[1] / x[1]; exit }
    for (i = 1; i <= n; ++i) { sx += x[i]; sy += y[i] }
    mx = sx / n; my = sy / n
    for (i = 1; i <= n; ++i) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) ^ 2 }
    d = sxx > 0 ? sxy / sxx : 0; c = my - d * mx
    printf "%.1f %.6f\n", c, d }')

# --- Fit and plan --------------------------------------------------------------------------
awk -v nodes="$nodes" -v node_gb="$node_memory" -v limit_h="$time_limit" \
    -v peak_fit="$peak_fit" -v merge_rate="$merge_rate" -v merge_line="$merge_line" \
    -v catalog="$catalog" -v sizes_file="$sizes" -v entries_file="$entries" '
  function human(s) {
    if (s < 120) return sprintf("%.0f s", s)
    if (s < 7200) return sprintf("%.0f min", s / 60)
    if (s < 172800) return sprintf("%.1f h", s / 3600)
    return sprintf("%.1f d", s / 86400)
  }
  function bytes(b) {
    if (b < 1e6) return sprintf("%.0f kB", b / 1e3)
    if (b < 1e9) return sprintf("%.0f MB", b / 1e6)
    return sprintf("%.1f GB", b / 1e9)
  }
  # Peak memory in bytes of a kernel on a matrix: the spmv fit, plus the dense operands that
  # spmm (B: cols x 256, C and the reference: rows x 256) and sddmm (B: rows x 256, C: 256 x
  # cols) add in float32 (an estimate: only spmv was measured).
  function memory(kernel, nnz, rows, cols,   m) {
    m = (pc + pd * nnz) * 1024
    if (kernel == "spmm") m += (cols + 2 * rows) * 256 * 4
    if (kernel == "sddmm") m += (rows + cols) * 256 * 4
    return m
  }
  FILENAME == sizes_file { size[$1 " " $2] = $3; rows_per[$1 " " $2] = $4; meas_per[$1 " " $2] = $5; size_src[$1 " " $2] = $6; next }
  FILENAME == entries_file { ne++; e_nnz[ne] = $1; e_rows[ne] = $2; e_cols[ne] = $3; e_name[ne] = $4; total_nnz += $1; next }
  {
    key = $1 " " $2
    if (!(key in count)) { order[++nkeys] = key; src[key] = $5 }
    else if (index(src[key], $5) == 0) src[key] = src[key] ", " $5
    count[key]++
    n = count[key]; x[key, n] = $3; y[key, n] = $4
    if (!(key in lo) || $3 < lo[key]) lo[key] = $3
    if (!(key in hi) || $3 > hi[key]) hi[key] = $3
  }
  END {
    split(peak_fit, pf, " "); pc = pf[1] + 0; pd = pf[2] + 0; have_peak = peak_fit != ""
    split(merge_rate, mr, " ")
    node_bytes = node_gb * 1024 ^ 3
    nn = split(nodes, node_list, " ")
    printf "Catalogue: %s, %d matrices, %.3g nonzeros in all.\n\n", catalog, ne, total_nnz
    print "Cost model per matrix, seconds = a + b * nnz (least squares), from:"
    for (k = 1; k <= nkeys; ++k) { key = order[k]; printf "  %s %s: %s\n", substr(key, 1, index(key, " ") - 1), substr(key, index(key, " ") + 1), src[key] }
    print ""
    print "| mode | kernel | matrices | nnz measured | a (s) | b (s per M nnz) | R^2 | log-log slope | measured total | predicted total |"
    print "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"
    for (k = 1; k <= nkeys; ++k) {
      key = order[k]; n = count[key]
      sx = sy = 0; for (i = 1; i <= n; ++i) { sx += x[key, i]; sy += y[key, i] }
      mx = sx / n; my = sy / n
      sxx = sxy = syy = 0; lx = ly = 0
      for (i = 1; i <= n; ++i) {
        sxx += (x[key, i] - mx) ^ 2; sxy += (x[key, i] - mx) * (y[key, i] - my); syy += (y[key, i] - my) ^ 2
        lx += log(x[key, i] > 0 ? x[key, i] : 1); ly += log(y[key, i] > 0 ? y[key, i] : 1e-3)
      }
      b = sxx > 0 ? sxy / sxx : 0; a = my - b * mx
      r2 = (sxx > 0 && syy > 0) ? sxy * sxy / (sxx * syy) : 0
      lmx = lx / n; lmy = ly / n; lsxx = lsxy = 0
      for (i = 1; i <= n; ++i) {
        u = log(x[key, i] > 0 ? x[key, i] : 1) - lmx; v = log(y[key, i] > 0 ? y[key, i] : 1e-3) - lmy
        lsxx += u * u; lsxy += u * v
      }
      slope = lsxx > 0 ? lsxy / lsxx : 0
      A[key] = a; B[key] = b
      split(key, mk, " ")
      printf "| %s | %s | %d | %.3g - %.3g | %.2f | %.2f | %.2f | %.2f | %s | %s |\n", mk[1], mk[2], n, lo[key], hi[key], a, b * 1e6, r2, slope, human(sy), human(n * a + b * sx)
    }
    print ""
    print "Measured seconds per matrix by nonzeros (count, median, mean):"
    print ""
    header = "| mode | kernel |"; rule = "|---|---|"
    for (d = 0; d <= 7; ++d) { header = header sprintf(" 1e%d-1e%d |", d, d + 1); rule = rule "---:|" }
    print header; print rule
    for (k = 1; k <= nkeys; ++k) {
      key = order[k]; split(key, mk, " "); line = sprintf("| %s | %s |", mk[1], mk[2])
      for (d = 0; d <= 7; ++d) {
        m = 0; sum = 0
        for (i = 1; i <= count[key]; ++i) {
          v = x[key, i]; if (v < 1) v = 1
          if (int(log(v) / log(10) + 1e-9) == d) { vals[++m] = y[key, i]; sum += y[key, i] }
        }
        if (m == 0) { line = line " |"; continue }
        for (i = 2; i <= m; ++i) { t = vals[i]; for (j = i - 1; j >= 1 && vals[j] > t; --j) vals[j + 1] = vals[j]; vals[j + 1] = t }
        med = m % 2 ? vals[(m + 1) / 2] : (vals[m / 2] + vals[m / 2 + 1]) / 2
        line = line sprintf(" %d, %.1f, %.1f |", m, med, sum / m)
      }
      print line
    }
    print ""
    printf "Plan: the catalogue entries whose estimated peak memory fits a node (%.1f GB), one task per node (--exclusive), shards balanced by nnz as the array balances them; a task'"'"'s time limit %g h.\n", node_gb, limit_h
    if (have_peak) printf "Peak memory of an spmv tune: %.0f MB + %.0f bytes per nonzero (fitted on the --peak-memory samples); spmm and sddmm add their dense operands.\n", pc / 1024, pd * 1024
    print ""
    header = "| mode | kernel | matrices | node-hours | from beyond the measured nnz |"
    rule = "|---|---|---:|---:|---:|"
    for (j = 1; j <= nn; ++j) { header = header sprintf(" wall, %d nodes |", node_list[j]); rule = rule "---:|" }
    header = header " largest matrix | over the time limit | database | left out: over node memory |"
    rule = rule "---:|---:|---:|---:|"
    print header; print rule
    for (k = 1; k <= nkeys; ++k) {
      key = order[k]; split(key, mk, " "); a = A[key]; b = B[key]
      total = beyond = 0; over_t = 0; largest = 0; kept = 0; out_n = 0; out_nnz = 0
      for (i = 1; i <= ne; ++i) {
        fits[i] = !have_peak || memory(mk[2], e_nnz[i], e_rows[i], e_cols[i]) <= node_bytes
        if (!fits[i]) { out_n++; out_nnz += e_nnz[i]; cost[i] = 0; continue }
        kept++
        c = a + b * e_nnz[i]; if (c < 0) c = 0
        cost[i] = c; total += c
        if (e_nnz[i] > hi[key]) beyond += c
        if (c > largest) largest = c
        if (c > limit_h * 3600) over_t++
      }
      line = sprintf("| %s | %s | %d | %.0f | %.0f%% |", mk[1], mk[2], kept, total / 3600, total > 0 ? 100 * beyond / total : 0)
      for (j = 1; j <= nn; ++j) {
        s = node_list[j]; for (t = 0; t < s; ++t) { load[t] = 0; shard_cost[t] = 0 }
        # Entries sorted by nnz, largest first (ties in catalogue order): the array'"'"'s rule.
        for (i = 1; i <= ne; ++i) {
          if (!fits[i]) continue
          best = 0; for (t = 1; t < s; ++t) if (load[t] < load[best]) best = t
          load[best] += e_nnz[i]; shard_cost[best] += cost[i]
        }
        wall = 0; for (t = 0; t < s; ++t) if (shard_cost[t] > wall) wall = shard_cost[t]
        line = line sprintf(" %s (ideal %s) |", human(wall), human(total / s))
      }
      db = (key in size) ? bytes(size[key] * kept) : "-"
      left = have_peak ? sprintf("%d (%.1f%% of the nonzeros)", out_n, 100 * out_nnz / total_nnz) : "-"
      line = line sprintf(" %s | %d | %s | %s |", human(largest), over_t, db, left)
      print line
      planned[key] = kept
    }
    print ""
    n_sizes = 0
    for (key in size) {
      if (!n_sizes++) print "Database bytes, from:"
      printf "  %s: %.0f bytes, %.1f rows, %.1f measurements per matrix (%s)\n", key, size[key], rows_per[key], meas_per[key], size_src[key]
    }
    if (merge_line != "") {
      printf "\nMerge: %s.\n", merge_line
      for (key in size) {
        # Every row a merge copies (matrix, schedules, measurements, failures, winner), at the
        # rate measured.
        r = rows_per[key] * planned[key]
        printf "  %s over the planned matrices: %.0f rows, merged in %s of CPU (%s at the wall-clock rate measured)\n", key, r, human(r / mr[2]), human(r / mr[1])
      }
    }
  }' "$sizes" "$entries" "$samples"
