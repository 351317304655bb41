#!/usr/bin/env bash
# Installs what is missing, builds everything and runs the default test suite.
# Long tests (data collection, training, fuzzing) carry the label "long":
#   scripts/test.sh -L long      runs only them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SPARSETUNE_BUILD_DIR:-$root/build}
bash "$root/scripts/build.sh"
cd "$build"
if [ $# -eq 0 ]; then set -- -LE long; fi
ctest --output-on-failure --timeout 1500 -j "$(nproc)" "$@"
