#!/usr/bin/env bash
# The shards of a batch, computed as `sparsetune batch --shard I/N` computes them, so that a
# job array can give `sparsetune collect` (which takes files, not a shard) each task's share, and
# so that the balance of a plan can be seen before anything runs.
#
# Items are the catalogue's entries that pass the filters (cost: the catalogue's nnz; entries
# without a file under --root take part in the balance and are listed without a path), or the
# files given and every matrix or tensor file below the folders given (cost: the file's size in
# bytes; folders' contents sorted; each file once). Items are taken largest cost first (ties in
# their given order) and each goes to the shard with the least total cost so far (ties to the
# lower index).
#
# Usage: scripts/slurm/shards.sh --shards N (--catalog CSV --root DIR [--group G] [--kind K]
#                                [--max-nnz N] | PATH...) [--lists DIR] [--totals]
#   --shards N     the number of shards (array tasks)
#   --catalog CSV  SuiteSparse's catalogue (ssstats.csv), with --root DIR holding its files
#                  (Group/Name/Name.mtx, Group/Name.mtx, Group/Name.mtx.gz, Group/Name.tar.gz,
#                  Name.mtx, Name.mtx.gz, the first found); --group, --kind (a substring) and
#                  --max-nnz filter it as in batch
#   --lists DIR    also write DIR/<I>.list for every shard I: the absolute paths of its files
#                  that exist, one per line (a list file that `sparsetune collect` reads)
#   --totals       print one line per shard (shard, items, present, cost) instead of the items
# Output (stdout, tab-separated, with a header): shard, cost, name, path ("" when missing), in
# the items' given order.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "shards.sh: $*" >&2; exit 2; }

shards=""
catalog=""
root=""
group=""
kind=""
max_nnz=""
lists=""
totals=0
paths=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards) [ $# -ge 2 ] || die "--shards needs a value"; shards=$2; shift 2 ;;
    --catalog) [ $# -ge 2 ] || die "--catalog needs a value"; catalog=$2; shift 2 ;;
    --root) [ $# -ge 2 ] || die "--root needs a value"; root=$2; shift 2 ;;
    --group) [ $# -ge 2 ] || die "--group needs a value"; group=$2; shift 2 ;;
    --kind) [ $# -ge 2 ] || die "--kind needs a value"; kind=$2; shift 2 ;;
    --max-nnz) [ $# -ge 2 ] || die "--max-nnz needs a value"; max_nnz=$2; shift 2 ;;
    --lists) [ $# -ge 2 ] || die "--lists needs a value"; lists=$2; shift 2 ;;
    --totals) totals=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; paths+=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) paths+=("$1"); shift ;;
  esac
done
[[ $shards =~ ^[0-9]+$ ]] && [ "$shards" -ge 1 ] || die "--shards N needs a positive count"
[ -z "$max_nnz" ] || [[ $max_nnz =~ ^[0-9]+$ ]] || die "--max-nnz '$max_nnz' is not a count"
if [ -n "$catalog" ]; then
  [ ${#paths[@]} -eq 0 ] || die "give --catalog or paths, not both"
  [ -n "$root" ] || die "--catalog needs --root DIR"
  [ -f "$catalog" ] || die "$catalog: no such catalogue"
  [ -d "$root" ] || die "$root: --root is not a folder"
else
  [ ${#paths[@]} -gt 0 ] || die "give --catalog CSV --root DIR, or matrix files or folders"
  [ -z "$root$group$kind$max_nnz" ] || die "--root, --group, --kind and --max-nnz go with --catalog"
fi

# Items as "cost<TAB>name<TAB>path" lines, in their given order.
catalog_items() {
  # ssstats.csv: a count, a date, then group,name,nrows,ncols,nnz,...,kind,nnz_with_zeros
  # (the kind may hold commas). Prints group<TAB>name<TAB>nnz for the entries kept.
  awk -F, -v group="$group" -v kind="$kind" -v max_nnz="$max_nnz" -v file="$catalog" '
    NR == 1 { declared = $1 + 0; next }
    NR == 2 || $0 == "" { next }
    {
      sub(/\r$/, "")
      if (NF < 13) {
        printf "shards.sh: %s:%d: expected 13 comma-separated fields, found %d\n", file, NR, NF > "/dev/stderr"
        failed = 1
        exit 2
      }
      if ($5 !~ /^[0-9]+$/) {
        printf "shards.sh: %s:%d: nnz is not a non-negative integer: %s\n", file, NR, $5 > "/dev/stderr"
        failed = 1
        exit 2
      }
      k = $12
      for (f = 13; f < NF; ++f) k = k "," $f
      ++listed
      if (group != "" && $1 != group) next
      if (kind != "" && index(k, kind) == 0) next
      if (max_nnz != "" && $5 + 0 > max_nnz + 0) next
      print $1 "\t" $2 "\t" $5
    }
    END {
      if (failed) exit 2
      if (listed != declared) {
        printf "shards.sh: %s: the first line declares %d matrices but the file lists %d\n", file, declared, listed > "/dev/stderr"
        exit 2
      }
    }' "$catalog" | while IFS=$'\t' read -r g n nnz; do
    path=""
    for candidate in "$root/$g/$n/$n.mtx" "$root/$g/$n.mtx" "$root/$g/$n.mtx.gz" \
                     "$root/$g/$n.tar.gz" "$root/$n.mtx" "$root/$n.mtx.gz"; do
      if [ -f "$candidate" ]; then path=$(realpath -s -- "$candidate"); break; fi
    done
    printf '%s\t%s\t%s\n' "$nnz" "$g/$n" "$path"
  done
}

# The readers' extensions (io: HasTensorFileExtension), any case.
is_tensor_file() {
  local lower=${1,,}
  case $lower in
    *.mtx|*.mtx.gz|*.tns|*.tns.gz|*.tar.gz|*.tgz) return 0 ;;
  esac
  return 1
}

# The file's name without its matrix or tensor extensions, as batch names it.
name_of() {
  local name=${1##*/} lower
  lower=${name,,}
  for ext in .mtx.gz .tns.gz .tar.gz .tgz .mtx .tns .gz; do
    if [[ $lower == *"$ext" ]]; then name=${name:0:${#name}-${#ext}}; break; fi
  done
  printf '%s' "$name"
}

path_items() {
  declare -A seen=()
  local path found
  # Each file once (by its resolved path); the item keeps the path as given, made absolute.
  add() {
    local canonical cost
    canonical=$(realpath -m -- "$1")
    [ -z "${seen[$canonical]:-}" ] || return 0
    seen[$canonical]=1
    cost=$(stat -L -c %s -- "$1" 2>/dev/null || echo 0)
    printf '%s\t%s\t%s\n' "$cost" "$(name_of "$1")" "$(realpath -s -m -- "$1")"
  }
  for path in "${paths[@]}"; do
    if [ -d "$path" ]; then
      # Regular files and links to them, sorted by path component (as batch sorts them).
      while IFS= read -r -d '' found; do
        [ -f "$found" ] && is_tensor_file "$found" && add "$found"
      done < <(find "$path" \( -type f -o -type l \) -print0 | tr '/' '\001' | LC_ALL=C sort -z \
               | tr '\001' '/')
    else
      add "$path"
    fi
  done
}

items=$(mktemp)
trap 'rm -f "$items"' EXIT
if [ -n "$catalog" ]; then catalog_items > "$items"; else path_items > "$items"; fi
[ -s "$items" ] || die "no item passes the filters"

# Number the items, sort by cost (stable), assign, and put them back in their given order.
assigned=$(awk -F'\t' '{ print NR "\t" $1 }' "$items" | LC_ALL=C sort -s -t$'\t' -k2,2nr \
  | awk -F'\t' -v n="$shards" '
      BEGIN { for (s = 0; s < n; ++s) load[s] = 0 }
      {
        best = 0
        for (s = 1; s < n; ++s) if (load[s] < load[best]) best = s
        print $1 "\t" best
        load[best] += ($2 > 0 ? $2 : 0)
      }' | LC_ALL=C sort -t$'\t' -k1,1n | cut -f2)

if [ -n "$lists" ]; then
  mkdir -p "$lists"
  for ((s = 0; s < shards; ++s)); do : > "$lists/$s.list"; done
fi
paste <(printf '%s\n' "$assigned") "$items" | {
  if [ "$totals" -eq 1 ]; then
    awk -F'\t' -v n="$shards" -v lists="$lists" '
      { items[$1]++; cost[$1] += $2; if ($4 != "") { present[$1]++; if (lists != "") print $4 >> (lists "/" $1 ".list") } }
      END {
        print "shard\titems\tpresent\tcost"
        for (s = 0; s < n; ++s) printf "%d\t%d\t%d\t%.0f\n", s, items[s], present[s], cost[s]
      }'
  else
    awk -F'\t' -v lists="$lists" '
      BEGIN { print "shard\tcost\tname\tpath" }
      { print; if (lists != "" && $4 != "") print $4 >> (lists "/" $1 ".list") }'
  fi
}
