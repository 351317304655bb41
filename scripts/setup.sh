#!/usr/bin/env bash
# Installs the Debian packages sparsetune needs. Idempotent and non-interactive:
# when every package is already present it does nothing (one dpkg-query call).
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
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
