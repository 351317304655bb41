#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in their own build directory) and runs each fuzzer
# for the given number of seconds, all at once. New corpus entries are kept under the build
# directory; crashes, leaks and timeouts are written to its artifacts/ folder.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 60 s, fuzz_matrix_market fuzz_tns;
#        the others: fuzz_schedule_json fuzz_db_import)
# Environment: SPARSETUNE_FUZZ_BUILD_DIR (default build-fuzz/), FUZZ_MAX_LEN (default 4096).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SPARSETUNE_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_matrix_market fuzz_tns)

bash "$root/scripts/setup.sh"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSPARSETUNE_FUZZ=ON \
    -DSPARSETUNE_BUILD_BENCH=OFF >&2
fi
cmake --build "$build" --parallel 2 --target "${targets[@]}" >&2

pids=()
for target in "${targets[@]}"; do
  name=${target#fuzz_}
  corpus=$build/corpus/$name
  artifacts=$build/artifacts/$name
  mkdir -p "$corpus" "$artifacts"
  # Extra seeds: the readers' bad inputs, the hostile schedules and imports.
  case $name in
    matrix_market|tns) extra=$root/tests/data/bad_inputs ;;
    *) extra=$root/tests/data/hostile ;;
  esac
  echo "fuzz: $target for $seconds s (corpus $corpus)" >&2
  "$build/fuzz/$target" -max_total_time="$seconds" -max_len="${FUZZ_MAX_LEN:-4096}" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -dict="$root/fuzz/$name.dict" \
    -artifact_prefix="$artifacts/" "$corpus" "$root/fuzz/seeds/$name" \
    "$extra" >"$build/$target.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "fuzz: ${targets[$i]} found a problem; see $build/${targets[$i]}.log" >&2
    status=1
  fi
  tail -n 12 "$build/${targets[$i]}.log" | grep -E 'stat::|Done|ERROR|SUMMARY' >&2 || true
done
exit $status
