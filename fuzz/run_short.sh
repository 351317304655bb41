#!/usr/bin/env bash
# A bounded libFuzzer run for ctest: 20000 inputs from the seeds, new inputs kept in a scratch
# corpus (never in the source tree). Fails when the fuzzer finds a crash, leak or timeout.
# Usage: run_short.sh FUZZER SCRATCH_DIR DICT SEED_DIR...
set -euo pipefail
fuzzer=$1 scratch=$2 dict=$3
shift 3
mkdir -p "$scratch/corpus" "$scratch/artifacts"
exec "$fuzzer" -runs=20000 -max_len=4096 -timeout=10 -rss_limit_mb=2048 -dict="$dict" \
  -artifact_prefix="$scratch/artifacts/" "$scratch/corpus" "$@"
