#!/usr/bin/env bash
# Benchmarks sparsetune against the fair baselines (libraries: Eigen, librsb, GraphBLAS,
# PyTorch; the textbook kernels) over a suite of matrices in three sets: "shared", every shared
# real matrix above 50k nonzeros; "mid", generated matrices of other families at 0.4M to 1.7M
# nonzeros (stencils, band, uniform, R-MAT in file and random order, 4x4 blocks, a pruned
# network layer, diagonals, resizes of two real matrices), whose dense operands at width 256
# pass the last-level cache; "large", generated DRAM-resident ones for spmv (10M+ nonzeros:
# uniform, power law, banded, blocked, and resizes of real matrices); "graphs", Graph500 and
# Chung-Lu graphs with random vertex labels (4M-20M nonzeros); "later", twelve patterns of
# 0.3M-1.3M nonzeros drawn from --seed (bands, blocks, a stencil, power law, uniform, a pruned
# layer, three kinds of graph, diagonals, resizes of two real matrices), new ones for each seed,
# to check that stored winners stay the fastest on patterns nothing was tuned on. Each matrix is tuned
# (`sparsetune tune`, into a suite
# database), then benchmarked (`sparsetune bench --csv`): FixedCSR, the heuristic schedules,
# the tuned winner, the libraries and the textbook kernels, timed together.
#
# Writes results.csv (one row per matrix, kernel and contender) and summary.txt (geomean of
# the best sparsetune kernel against each library, the best library, the textbook kernel, the
# best fair baseline = the best of the libraries and the textbook kernel, and FixedCSR; the
# tuned winners within 5% of the fastest contender, beside how often one contest's fastest is
# within 5% of the fastest over the other contests) into the output folder, and plots
# (gnuplot, installed on demand from Debian: gnuplot-nox):
# speedup.svg (one panel per kernel: per matrix, the tuned winner over each baseline) and
# bandwidth.svg (one panel per kernel: effective bandwidth against nonzeros of the tuned
# winner, the best library and the textbook kernel, with the bandwidth probe).
#
# Usage: scripts/bench_suite.sh [options]
#   --kernels "spmv spmm sddmm sddmm_nt"
#                                 kernels (default all four; all but spmv on matrices up to
#                                 --dense-max-nnz nonzeros)
#   --sets "shared mid large graphs later"
#                                 which sets (default the first four; graphs: Graph500 and
#                                 Chung-Lu graphs of 4M-20M nonzeros)
#   --seed N                      the later set's first seed (default 561; it uses N to N+10)
#   --quick                       the shared set only
#   --large-nnz N                 nonzeros of the generated matrices (default 20M)
#   --dense-max-nnz N             largest matrix for spmm and sddmm (default 2M)
#   --out DIR                     output folder (default bench-results/ in the checkout; ignored by git)
#   --cache DIR                   generated matrices (default $XDG_CACHE_HOME/sparsetune/bench)
#   --shared DIR                  the shared datasets folder (default ../shared/datasets)
#   --summary-only                redo summary.txt and the plots from the folder's results.csv
# Environment: SPARSETUNE_BIN, the sparsetune binary (default: the checkout's build, built once
# at the start); SPARSETUNE_BUSY_WAIT, seconds to wait before tuning again a matrix whose
# times stayed disturbed (tune's exit code 3; twice at most, as `batch` does; default 60).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kernels="spmv spmm sddmm sddmm_nt"
sets="shared mid large graphs"
summary_only=0
later_seed=561
busy_retries=2  # tunes again of a matrix whose times stayed disturbed, as `batch --busy-retries`
busy_wait=${SPARSETUNE_BUSY_WAIT:-60}
large_nnz=20000000
dense_max=2000000
out=$root/bench-results
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sparsetune/bench
shared=${SPARSETUNE_SHARED_DATASETS:-$root/../shared/datasets}
while [ $# -gt 0 ]; do
  case $1 in
    --kernels) kernels=$2; shift 2 ;;
    --quick) sets=shared; shift ;;
    --sets) sets=$2; shift 2 ;;
    --seed) later_seed=$2; shift 2 ;;
    --large-nnz) large_nnz=$2; shift 2 ;;
    --dense-max-nnz) dense_max=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --shared) shared=$2; shift 2 ;;
    --summary-only) summary_only=1; shift ;;
    -h|--help) sed -n '2,42p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_suite.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
source "$root/scripts/measuring_binary.sh"
mkdir -p "$out/tune" "$cache"
db=$out/suite.db

csv=$out/results.csv
if [ "$summary_only" -eq 0 ]; then
# The suite: name, file, nonzeros.
suite=()
in_sets() { [[ " $sets " == *" $1 "* ]]; }
generate() {  # name, gen arguments...
  local name=$1; shift
  # The arguments are in the cached file's name, so a changed size is generated anew.
  local file=$cache/$name-$(echo "$*" | md5sum | cut -c1-8).mtx
  [ -f "$file" ] || "${bin[@]}" gen "$@" -o "$file.tmp.mtx" >&2 && mv -f "$file.tmp.mtx" "$file" 2>/dev/null || true
  local size=
  [ -f "$file" ] && size=$(grep -v -m1 '^%' "$file" | awk '{ print $3 }')
  suite+=("$name|$file|${size:-0}")
}
if in_sets shared && [ -f "$shared/MANIFEST.tsv" ]; then
  while IFS=$'\t' read -r name _ _ _ _ nnz _; do
    [[ $name == name || -z $name ]] && continue
    [ "$nnz" -gt 50000 ] && suite+=("$name|$shared/matrices/$name.mtx|$nnz")
  done < "$shared/MANIFEST.tsv"
fi
if in_sets mid; then
  generate stencil2d_mid stencil2d --nx 400 --ny 400
  generate stencil3d_mid stencil3d --nx 60 --ny 60 --nz 60
  generate banded_mid banded --rows 60000 --bandwidth 12 --fill 0.5 --seed 3
  generate uniform_mid uniform --rows 40000 --nnz 400000 --seed 4
  generate rmat_mid powerlaw --rows 60000 --nnz 800000 --seed 5
  generate rmat_shuffled_mid powerlaw --rows 60000 --nnz 800000 --seed 6 --shuffle
  generate blocked_mid blocked --rows 40000 --block 4 --nnz 600000 --block-fill 0.8 --seed 7
  generate dnn_mid dnn --rows 4096 --cols 4096 --density 0.1 --seed 8
  generate diagonals_mid diagonal-heavy --rows 50000 --nnz 500000 --seed 9
  for real in bcsstk38 mhd4800a; do
    [ -f "$shared/matrices/$real.mtx" ] || continue
    generate "${real}_mid" resize "$shared/matrices/$real.mtx" --rows 25000 --cols 25000 --seed 10
  done
fi
if in_sets large; then
  rows=$((large_nnz / 10))
  generate uniform_large uniform --rows "$rows" --cols "$rows" --nnz "$large_nnz" --seed 11
  generate powerlaw_large powerlaw --rows "$rows" --cols "$rows" --nnz "$large_nnz" --seed 12
  generate banded_large banded --rows "$rows" --cols "$rows" --bandwidth 8 --fill 0.6 --seed 13
  generate blocked_large blocked --rows "$rows" --block 4 --nnz "$large_nnz" --block-fill 0.8 --seed 14
  # A resize grows nonzeros with the linear factor, so the side is chosen for --large-nnz
  # (the manifest's expanded nonzeros, column 6).
  for real in pf2177 bcsstk38 cavity24; do
    [ -f "$shared/matrices/$real.mtx" ] || continue
    read -r real_rows real_nnz < <(awk -F'\t' -v m="$real" '$1 == m { print $3, $6 }' "$shared/MANIFEST.tsv")
    side=$(( real_rows * large_nnz / real_nnz ))
    generate "${real}_resize" resize "$shared/matrices/$real.mtx" --rows "$side" --cols "$side" --seed 15
  done
fi

if in_sets graphs; then
  # Graphs with random vertex labels, as collections and generators deliver them: Graph500
  # R-MAT (scales 18 and 19: 4M and 15M nonzeros stored both ways) and power-law expected
  # degrees (Chung-Lu, exponent 2.1, as SNAP's social graphs).
  generate graph500_s18 graph500 --scale 18 --edge-factor 8 --seed 16
  generate graph500_s19 graph500 --scale 19 --edge-factor 16 --seed 17
  generate chung_lu_1m chung-lu --vertices 1M --edges 5M --exponent 2.1 --seed 18
  generate chung_lu_2m chung-lu --vertices 2M --edges 10M --exponent 2.3 --seed 19
fi

if in_sets later; then
  s=$later_seed
  generate "later_banded_$s" banded --rows 70000 --bandwidth 8 --fill 0.8 --seed "$s"
  generate "later_blocked_$s" blocked --rows 40000 --block 4 --nnz 500000 --block-fill 0.8 --seed $((s + 1))
  generate "later_stencil2d_$s" stencil2d --nx $((300 + s % 40)) --ny 320
  generate "later_powerlaw_$s" powerlaw --rows 60000 --nnz 600000 --seed $((s + 2))
  generate "later_uniform_$s" uniform --rows 40000 --nnz 400000 --seed $((s + 3))
  generate "later_dnn_$s" dnn --rows 4096 --cols 8192 --density 0.04 --seed $((s + 4))
  generate "later_chung_lu_$s" chung-lu --vertices 80K --edges 400K --exponent 2.2 --seed $((s + 5))
  generate "later_graph500_$s" graph500 --scale 16 --edge-factor 8 --seed $((s + 6))
  generate "later_diagonals_$s" diagonal-heavy --rows 50000 --nnz 500000 --seed $((s + 7))
  generate "later_communities_$s" communities --vertices 60K --edges 380K --seed $((s + 8))
  [ -f "$shared/matrices/mhd1280a.mtx" ] &&
    generate "later_mhd1280a_$s" resize "$shared/matrices/mhd1280a.mtx" --rows 30000 --cols 30000 --seed $((s + 9))
  [ -f "$shared/matrices/bayer10.mtx" ] &&
    generate "later_bayer10_$s" resize "$shared/matrices/bayer10.mtx" --rows 40000 --cols 40000 --seed $((s + 10))
fi

# bench --csv's columns, the first named for the suite's matrix instead of the file.
echo "matrix,kernel,nnz,contender,kind,verified,time_ms,effective_gbs,prepare_ms,probe_gbs,gflops,flop_probe_gflops,flop_share,version,flags,threads,disturbed,contest_ms" > "$csv"
for entry in "${suite[@]}"; do
  IFS='|' read -r name file nnz <<< "$entry"
  [ -f "$file" ] || { echo "bench_suite.sh: missing $file; skipped" >&2; continue; }
  for kernel in $kernels; do
    if [ "$kernel" != spmv ] && [ "$nnz" -gt "$dense_max" ]; then continue; fi
    echo "== $name $kernel ($nnz nonzeros)" >&2
    # Exit code 3: every timing stayed disturbed (a virtual machine's neighbour, for minutes), so
    # nothing was stored; as `batch` does, wait and tune it again rather than leave it out.
    for attempt in $(seq 0 "$busy_retries"); do
      if [ "$attempt" -gt 0 ]; then
        echo "bench_suite.sh: $name ($kernel) stayed disturbed; tuning it again in ${busy_wait}s" >&2
        sleep "$busy_wait"
      fi
      status=0
      "${bin[@]}" tune "$file" --kernel "$kernel" --db "$db" --json > "$out/tune/$name-$kernel.json" ||
        status=$?
      [ "$status" -eq 3 ] || break
    done
    [ "$status" -eq 0 ] || { echo "bench_suite.sh: tune failed on $name" >&2; continue; }
    "${bin[@]}" bench "$file" --kernel "$kernel" --db "$db" --csv |
      awk -F, -v m="$name" 'BEGIN { OFS = "," } NR > 1 { $1 = m; print }' >> "$csv" ||
      echo "bench_suite.sh: bench failed on $name" >&2
  done
done

fi
[ -f "$csv" ] || { echo "bench_suite.sh: no $csv" >&2; exit 2; }

# Geomeans per kernel of two sparsetune rows: the tuned winner (what `tune` chose and a user
# gets) and the best sparsetune kernel timed here (the winner, FixedCSR and the heuristic
# schedules; picking the fastest of several after timing them favours it a little), each
# against each library and the textbook kernel (the faster of its two forms, "hand" and
# "hand_dynamic"), the best library, the best fair baseline (the best of the libraries and the
# textbook kernel) and FixedCSR; and the best of Insum's GroupCOO sizes (timed beside the
# baselines by `bench`) with how often it was the fastest of all.
summary=$out/summary.txt
awk -F, 'NR > 1 && $6 == "true" {
    key = $1 "," $2
    if ($5 == "sparsetune") { if (!(key in best) || $7 < best[key]) best[key] = $7 }
    else {
      l = $5 == "hand" ? "hand" : $4  # the textbook kernel: the faster of its two forms
      if (!((key "," l) in lib) || $7 < lib[key "," l]) lib[key "," l] = $7
      if (!(key in bestbase) || $7 < bestbase[key]) bestbase[key] = $7
      if ($5 == "library" && (!(key in bestlib) || $7 < bestlib[key])) bestlib[key] = $7
    }
    if ($4 == "tuned") tuned[key] = $7
    if ($4 == "fixed_csr") fixed[key] = $7
    if ($4 ~ /^groupcoo_/ && (!(key in group) || $7 < group[key])) group[key] = $7
    if (!(key in fastest) || $7 < fastest[key]) { fastest[key] = $7; fastest_is_group[key] = ($4 ~ /^groupcoo_/) }
    if ($5 == "sparsetune" && $2 == "spmv" && $3 >= 10000000 && (!(key in dram) || $7 < dram_ms[key])) {
      dram[key] = $8 / $10; dram_ms[key] = $7 }
    kernels[$2] = 1; libs[$5 == "hand" ? "hand" : $4] = ($5 == "library" || $5 == "hand")
    if (NF >= 17) { benches[key] = 1; if ($17 == "true") busy[key] = 1 }
    # Each contest'"'"'s median, for the reference below; contenders timed once have one.
    if (NF >= 18 && (n = split($18, cms, ";")) >= 2) {
      if (!(key in contests) || n > contests[key]) contests[key] = n
      ran[key] = ran[key] SUBSEP $4; ran_n[key "," $4] = n
      for (c = 1; c <= n; ++c) contest_ms[key "," $4 "," c] = cms[c]
    }
  }
  # The mean of a contender'"'"'s contests other than c.
  function others(key, name, c,   n, s, d) {
    n = contests[key]; s = 0
    for (d = 1; d <= n; ++d) if (d != c) s += contest_ms[key "," name "," d]
    return s / (n - 1)
  }
  function row(k, label, l, mine, theirs,   s, c, key, p) {
    s = 0; c = 0
    for (key in mine) { split(key, p, ","); if (p[2] != k || !(key in theirs)) continue
      s += log(theirs[key] / mine[key]); ++c }
    if (c) printf "%-8s %-13s %-19s %7.2fx %6d\n", k, label, l, exp(s / c), c
  }
  END {
    printf "%-8s %-13s %-19s %8s %6s\n", "kernel", "sparsetune", "against", "geomean", "count"
    for (k in kernels) {
      for (who = 0; who < 2; ++who) {
        label = who == 0 ? "tuned winner" : "best timed"
        for (l in libs) {
          if (!libs[l]) continue
          delete these
          for (key in lib) { split(key, p, ","); if (p[3] == l) these[p[1] "," p[2]] = lib[key] }
          name = l == "hand" ? "textbook kernel" : l
          if (who == 0) row(k, label, name, tuned, these); else row(k, label, name, best, these)
        }
        if (who == 0) {
          row(k, label, "best library", tuned, bestlib); row(k, label, "best fair baseline", tuned, bestbase)
          row(k, label, "FixedCSR", tuned, fixed)
        } else {
          row(k, label, "best library", best, bestlib); row(k, label, "best fair baseline", best, bestbase)
          row(k, label, "FixedCSR", best, fixed)
        }
      }
      row(k, "best GroupCOO", "best library", group, bestlib)
      row(k, "best GroupCOO", "best fair baseline", group, bestbase)
      row(k, "best GroupCOO", "FixedCSR", group, fixed)
      wins = 0; c = 0
      for (key in group) { split(key, p, ","); if (p[2] != k) continue; ++c; wins += fastest_is_group[key] }
      if (c) printf "%-8s GroupCOO was the fastest contender on %d of %d matrices\n", k, wins, c
      # Did tune pick what bench finds fastest? The tuned winner within 5% of the best
      # sparsetune kernel timed beside it.
      near = 0; c = 0
      for (key in tuned) { split(key, p, ","); if (p[2] != k) continue; ++c; near += tuned[key] <= 1.05 * best[key] }
      if (c) printf "%-8s the tuned winner was within 5%% of the fastest sparsetune kernel on %d of %d matrices\n", k, near, c
      # And within 5% of the fastest of every contender, libraries and textbook kernels too.
      near = 0; c = 0
      for (key in tuned) { split(key, p, ","); if (p[2] != k) continue; ++c; near += tuned[key] <= 1.05 * fastest[key] }
      if (c) printf "%-8s the tuned winner was within 5%% of the fastest contender on %d of %d matrices\n", k, near, c
      # For reference, the share the bench'"'"'s own noise leaves: the contender fastest in one
      # contest (timed beside every other, in the same process, on the same operands), scored on
      # the mean of the other contests against the fastest there; the stored winner is scored
      # the same way beside it.
      pick_near = 0; tuned_near = 0; c = 0
      for (key in contests) {
        split(key, p, ","); if (p[2] != k || !(key in tuned)) continue
        n = split(substr(ran[key], 2), names, SUBSEP)
        for (cc = 1; cc <= contests[key]; ++cc) {
          pick = ""; least = 0; fastest_other = 0
          for (i = 1; i <= n; ++i) {
            if (ran_n[key "," names[i]] != contests[key]) continue
            t = contest_ms[key "," names[i] "," cc]
            if (pick == "" || t < least) { pick = names[i]; least = t }
            o = others(key, names[i], cc)
            if (fastest_other == 0 || o < fastest_other) fastest_other = o
          }
          if (pick == "" || ran_n[key ",tuned"] != contests[key]) continue
          ++c; pick_near += others(key, pick, cc) <= 1.05 * fastest_other
          tuned_near += others(key, "tuned", cc) <= 1.05 * fastest_other
        }
      }
      if (c) printf "%-8s for reference, the fastest contender of one contest was within 5%% of the fastest over the other contests on %d of %d (contest, matrix) pairs; the tuned winner, scored alike, on %d\n", k, pick_near, c, tuned_near
    }
    nb = 0; nbusy = 0
    for (key in benches) { ++nb; nbusy += (key in busy) }
    if (nb) printf "benches timed while the machine was busy (bench'"'"'s disturbance check): %d of %d\n", nbusy, nb
    s = 0; c = 0
    for (key in dram) { s += dram[key]; ++c }
    if (c) printf "spmv effective bandwidth on the %d DRAM-resident matrices: %.0f%% of the probe (mean)\n", c, 100 * s / c
  }' "$csv" | tee "$summary"

# Plots: installed on demand, so the default set-up stays lean.
if ! command -v gnuplot > /dev/null; then
  echo "bench_suite.sh: installing gnuplot-nox for the plots" >&2
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends gnuplot-nox >&2 || true
fi
if command -v gnuplot > /dev/null; then
  # One panel per kernel; each matrix once per panel, smallest first. Labels are printed as
  # they are (noenhanced: gnuplot's enhanced text would make "librsb_tuned" a subscript).
  plots=$(mktemp -d)
  trap 'rm -rf "$plots"' EXIT
  # spmv, spmm, sddmm, sddmm_nt first, then any other kernel.
  plot_kernels=$(awk -F, 'NR > 1 && $6 == "true" { print $2 }' "$csv" | sort -u |
    awk '{ r = index(" spmv spmm sddmm sddmm_nt ", " " $1 " "); print (r ? r : 100), $1 }' | sort -n | cut -d' ' -f2)
  n_kernels=$(wc -w <<< "$plot_kernels")
  speedup_panels="" bandwidth_panels=""
  for k in $plot_kernels; do
    baselines=$(awk -F, -v k="$k" 'NR > 1 && $2 == k && $6 == "true" && ($5 == "library" || $5 == "hand") { print $4 }' "$csv" | sort -u | tr '\n' ' ')
    # Per matrix, the tuned winner's speedup over each baseline ("?" where one is missing).
    awk -F, -v k="$k" -v libs="$baselines" 'NR > 1 && $2 == k && $6 == "true" {
        nnz[$1] = $3
        if ($4 == "tuned") own[$1] = $7
        else if ($5 == "library" || $5 == "hand") t[$1 SUBSEP $4] = $7 }
      END { n = split(libs, L, " ")
        for (m in own) { line = nnz[m] " " m
          for (i = 1; i <= n; ++i) line = line " " ((m SUBSEP L[i]) in t ? t[m, L[i]] / own[m] : "?")
          print line } }' "$csv" | sort -n | cut -d' ' -f2- > "$plots/speedup-$k.body"
    { printf 'matrix'; for l in $baselines; do
        case $l in hand) printf ' "textbook kernel"' ;; hand_dynamic) printf ' "textbook kernel, dynamic rows"' ;; *) printf ' %s' "$l" ;; esac; done; echo
      cat "$plots/speedup-$k.body"; } > "$plots/speedup-$k.dat"
    columns=$(( $(wc -w <<< "$baselines") + 1 ))
    speedup_panels+="set title '$k: tuned winner over each baseline (above 1: sparsetune faster)'
plot for [c=2:$columns] '$plots/speedup-$k.dat' using c:xtic(1) title columnheader(c), 1 with lines lc rgb 'black' notitle
"
    # Per matrix: effective bandwidth of the tuned winner, the best library and the textbook
    # kernel; the mean of the bandwidth probe as a line.
    awk -F, -v k="$k" 'NR > 1 && $2 == k && $6 == "true" {
        nnz[$1] = $3; probe += $10; ++probes
        if ($4 == "tuned") own[$1] = $8
        if ($5 == "library" && (!($1 in lib) || $8 > lib[$1])) lib[$1] = $8
        if ($5 == "hand" && (!($1 in hand) || $8 > hand[$1])) hand[$1] = $8 }
      END { for (m in nnz) print nnz[m], (m in own ? own[m] : "?"), (m in lib ? lib[m] : "?"), (m in hand ? hand[m] : "?")
            printf "%.2f\n", probes ? probe / probes : 0 > "/dev/stderr" }' "$csv" \
      > "$plots/bandwidth-$k.dat" 2> "$plots/probe-$k"
    probe=$(cat "$plots/probe-$k")
    bandwidth_panels+="set title '$k: effective bandwidth (the least bytes a call must move, over its time; above the probe: operands in the caches)'
plot '$plots/bandwidth-$k.dat' using 1:2 title 'tuned winner' pt 7, '' using 1:3 title 'best library' pt 5, '' using 1:4 title 'textbook kernel' pt 9, $probe with lines lc rgb 'black' dt 2 title 'bandwidth probe, $probe GB/s (mean)'
"
  done
  gnuplot <<GNUPLOT
set terminal svg size 1200,$((380 * n_kernels)) font "sans,11" noenhanced
set output "$out/speedup.svg"
set datafile missing "?"
set multiplot layout $n_kernels,1
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8
set xtics rotate by -35 noenhanced
set logscale y 2
set ylabel "speedup"
set grid ytics
set key outside right top noenhanced
$speedup_panels
unset multiplot
GNUPLOT
  gnuplot <<GNUPLOT
set terminal svg size 1000,$((380 * n_kernels)) font "sans,11" noenhanced
set output "$out/bandwidth.svg"
set datafile missing "?"
set multiplot layout $n_kernels,1
set logscale x
set xlabel "nonzeros"
set ylabel "GB/s"
set grid
set key outside below horizontal noenhanced
set offsets 0, 0, graph 0.1, 0
set yrange [0:*]
$bandwidth_panels
unset multiplot
GNUPLOT
  echo "plots: $out/speedup.svg $out/bandwidth.svg" >&2
fi
echo "results: $csv, $summary" >&2
