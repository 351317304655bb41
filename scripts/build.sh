#!/usr/bin/env bash
# Configures (once) and builds sparsetune into $SPARSETUNE_BUILD_DIR (default: build/).
# Usage: scripts/build.sh [ninja targets...]
#
# Prints one line per step on stderr, and nothing when the build is up to date. CMake's and
# ninja's output go to configure.log and build.log in the build folder; when a step fails,
# their last lines are shown. On a terminal, compiling shows ninja's progress on one line.
set -euo pipefail
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${SPARSETUNE_BUILD_DIR:-$root/build}
bash "$root/scripts/setup.sh"
mkdir -p "$build"

failed() {  # what, log
  echo "build: failed: $1; the last lines of $2:" >&2
  tail -n 40 "$2" | sed 's/^/  /' >&2
  exit 1
}

if [ ! -f "$build/build.ninja" ]; then
  echo "build: configuring $build (log: $build/configure.log)" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$build/configure.log" 2>&1 ||
    failed "configuring" "$build/configure.log"
fi
targets=()
[ $# -gt 0 ] && targets=(--target "$@")

# Copies ninja's output into $1 and says, at its first "[done/total] what" line, that
# something is built; on a terminal it redraws that progress on one line.
follow() {
  local log=$1 announced=0 tty=0 what=${*:2}
  [ -t 2 ] && tty=1
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$log"
    # "[0/N]" lines (CMake re-checking its globs) come with every build, even an up-to-date one.
    [[ $line =~ ^\[([1-9][0-9]*)/([0-9]+)\]\ (.*)$ ]] || continue
    if [ "$announced" -eq 0 ]; then
      echo "build: compiling ${what:-everything} in $build (log: $build/build.log)" >&2
      announced=1
    fi
    [ "$tty" -eq 1 ] &&
      printf '\r\033[K  [%s/%s] %.70s' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" >&2
  done
  [ "$announced" -eq 1 ] && [ "$tty" -eq 1 ] && printf '\r\033[K' >&2
  return 0
}

# An up-to-date build leaves the previous build.log alone.
attempt=$(mktemp "$build/.build.log.XXXXXX")
trap 'rm -f "$attempt"' EXIT
start=$SECONDS
set +e
cmake --build "$build" --parallel "$(nproc)" "${targets[@]}" 2>&1 | follow "$attempt" "$@"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  mv -f "$attempt" "$build/build.log"
  failed "compiling" "$build/build.log"
fi
if grep -q '^\[[1-9][0-9]*/[0-9]*\]' "$attempt"; then
  mv -f "$attempt" "$build/build.log"
  echo "build: done in $((SECONDS - start)) s" >&2
fi
