#!/usr/bin/env bash
# Installs the Debian packages sparsetune needs. Idempotent and non-interactive:
# when every package is already present it does nothing and prints nothing (one dpkg-query
# call). Otherwise it prints one line per step; apt's own output goes to a log file
# ($SPARSETUNE_SETUP_LOG, default ~/.cache/sparsetune/setup.log), whose last lines are shown
# when a step fails.
#
# Usage: scripts/setup.sh [--slurm]
#   --slurm   also install Slurm (slurmctld, slurmd, slurm-client, munge) and iproute2, for
#             scripts/slurm/ and its long test, which starts its own daemons with its own
#             configuration
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libsqlite3-dev libcli11-dev nlohmann-json3-dev libz3-dev libhnswlib-dev
  libtorch-dev zlib1g-dev libarchive-dev libgtest-dev
  clang libclang-rt-14-dev
  libeigen3-dev librsb-dev libgraphblas-dev
  libmetis-dev libigraph-dev
)

while [ $# -gt 0 ]; do
  case $1 in
    --slurm) packages+=(slurmctld slurmd slurm-client munge iproute2); shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null \
  | awk '$NF == "installed" {print $1}' || true)
missing=()
for p in "${packages[@]}"; do
  grep -qx "$p" <<<"$installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

log=${SPARSETUNE_SETUP_LOG:-${XDG_CACHE_HOME:-$HOME/.cache}/sparsetune/setup.log}
mkdir -p "$(dirname "$log")"
: > "$log"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
start=$SECONDS
# Runs a step with its output in the log; on failure, says so and shows the log's tail.
step() {
  local what=$1; shift
  echo "setup: $what" >&2
  echo "== $what: $*" >> "$log"
  if ! "$@" >> "$log" 2>&1; then
    echo "setup: failed: $what; the last lines of $log:" >&2
    tail -n 25 "$log" | sed 's/^/  /' >&2
    exit 1
  fi
}
echo "setup: missing Debian packages: ${missing[*]} (apt's output: $log)" >&2
step "updating the package lists" "${sudo_cmd[@]}" apt-get update
count="${#missing[@]} packages"
[ ${#missing[@]} -eq 1 ] && count="1 package"
step "downloading and installing $count (a few minutes)" \
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: done in $((SECONDS - start)) s" >&2
