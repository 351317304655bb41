#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for trying scripts/slurm/ and for its long test:
# munged, slurmctld and slurmd (Debian's slurmctld, slurmd, slurm-client and munge packages:
# scripts/setup.sh --slurm) started directly, without systemd, with a generated slurm.conf and
# every file (configuration, munge key and socket, state, spool, logs) under one folder.
#
# The daemons run in their own network namespace, where the loopback interface is the only
# one: nothing they open is reachable from outside, and their fixed ports cannot collide with
# anything on the machine. They also run in their own PID namespace, so stopping the cluster
# ends every daemon and job process at once and nothing outlives it. It needs root: slurmd runs
# jobs as their users, and both daemons drop supplementary groups (setgroups), which an
# unprivileged user namespace forbids. Where namespaces cannot be made, `--host` runs the
# daemons on the machine's own network instead, on free ports; slurmctld and slurmd then listen
# on every interface.
#
# Usage: scripts/slurm/local_cluster.sh start DIR [--cpus N] [--host]
#        scripts/slurm/local_cluster.sh run DIR COMMAND [ARG...]
#        scripts/slurm/local_cluster.sh status DIR
#        scripts/slurm/local_cluster.sh stop DIR
#   start   writes DIR/slurm.conf (one node, "localnode", with N CPUs, default all; one
#           partition, "local"; ProctrackType=proctrack/linuxproc, TaskPlugin=task/none, no
#           accounting; finished jobs are logged to DIR/log/jobcomp.log), starts the daemons
#           and waits until the node is idle. The daemons (and so the jobs) inherit this
#           script's nice value.
#   run     runs COMMAND where the cluster is reachable, with SLURM_CONF set (sbatch, squeue,
#           scancel, scontrol, and scripts that call them)
#   status  prints sinfo and squeue
#   stop    shuts the cluster down: every daemon and every job process ends
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "local_cluster.sh: $*" >&2; exit 2; }

[ $# -ge 1 ] || { usage >&2; exit 2; }
command=$1
shift
case $command in
  -h|--help) usage; exit 0 ;;
  start|run|status|stop) ;;
  *) die "unknown command '$command' (start, run, status, stop; see --help)" ;;
esac
[ $# -ge 1 ] || die "$command needs the cluster's folder"
dir=$1
shift

# Runs a command inside the cluster's namespaces (or directly in --host mode).
enter() {
  # shellcheck source=/dev/null
  source "$dir/cluster.env"
  export SLURM_CONF=$dir/slurm.conf
  if [ "$mode" = host ]; then
    "$@"
    return
  fi
  kill -0 "$init_pid" 2> /dev/null || die "the cluster in $dir is not running"
  nsenter --target "$init_pid" --net --mount --pid --wd="$PWD" -- "$@"
}

stop_cluster() {
  [ -f "$dir/cluster.env" ] || die "$dir holds no cluster"
  # shellcheck source=/dev/null
  source "$dir/cluster.env"
  (enter scontrol shutdown) > /dev/null 2>&1 || true
  if [ "$mode" = host ]; then
    local pid_file pid
    for pid_file in "$dir/slurmctld.pid" "$dir/slurmd.pid" "$dir/munge/munged.pid"; do
      pid=$(cat "$pid_file" 2> /dev/null || true)
      [ -z "$pid" ] || kill -TERM "$pid" 2> /dev/null || true
    done
    sleep 2
    for pid_file in "$dir/slurmctld.pid" "$dir/slurmd.pid" "$dir/munge/munged.pid"; do
      pid=$(cat "$pid_file" 2> /dev/null || true)
      [ -z "$pid" ] || kill -KILL "$pid" 2> /dev/null || true
    done
    kill -KILL "$init_pid" 2> /dev/null || true
  else
    # The namespace's first process: when it ends, the kernel ends every process inside.
    for _ in 1 2 3 4 5; do
      kill -0 "$init_pid" 2> /dev/null || break
      sleep 1
    done
    kill -KILL "$init_pid" 2> /dev/null || true
  fi
  rm -f "$dir/cluster.env"
}

if [ "$command" = run ]; then
  [ $# -ge 1 ] || die "run needs a command"
  [ -f "$dir/cluster.env" ] || die "$dir holds no cluster (start it first)"
  enter "$@"
  exit $?
fi
if [ "$command" = status ]; then
  [ -f "$dir/cluster.env" ] || die "$dir holds no cluster"
  enter sinfo
  enter squeue
  exit 0
fi
if [ "$command" = stop ]; then
  stop_cluster
  exit 0
fi

# --- start ---------------------------------------------------------------------------------
cpus=$(nproc)
host_mode=0
while [ $# -gt 0 ]; do
  case $1 in
    --cpus) [ $# -ge 2 ] || die "--cpus needs a value"; cpus=$2; shift 2 ;;
    --host) host_mode=1; shift ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
[[ $cpus =~ ^[0-9]+$ ]] && [ "$cpus" -ge 1 ] || die "--cpus needs a positive count"
for tool in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
  command -v "$tool" > /dev/null ||
    die "$tool not found: install Slurm with scripts/setup.sh --slurm"
done
[ ! -f "$dir/cluster.env" ] || die "$dir already holds a cluster (stop it first)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# The munge socket's path must fit a Unix socket address (108 bytes).
[ ${#dir} -le 80 ] || die "$dir: path too long for the munge socket (80 characters at most)"

[ "$(id -u)" -eq 0 ] ||
  die "needs root: slurmd runs jobs as their users and the daemons call setgroups"
if [ "$host_mode" -eq 0 ]; then
  command -v unshare > /dev/null && command -v nsenter > /dev/null && command -v ip > /dev/null ||
    die "unshare, nsenter and ip (util-linux, iproute2) are needed; or use --host"
  mode=netns
  namespaces=(--net --pid --fork --mount-proc)
  unshare "${namespaces[@]}" true 2> /dev/null ||
    die "cannot create namespaces here (unshare ${namespaces[*]}); use --host"
  ctld_port=6817
  slurmd_port=6818
else
  mode=host
  # Two free ports: nothing answers on them.
  free_port() {
    local port
    for ((port = $1; port < $1 + 2000; ++port)); do
      if ! (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then echo "$port"; return; fi
    done
    die "no free port from $1"
  }
  ctld_port=$(free_port 26817)
  slurmd_port=$(free_port $((ctld_port + 1)))
fi

# munged refuses a socket below a folder that not everyone may search.
check=$dir
while [ "$check" != / ]; do
  [ "$(stat -c %A "$check" | cut -c10)" = x ] || [ "$(stat -c %A "$check" | cut -c10)" = t ] ||
    die "munged needs every folder above its socket searchable by all: chmod o+x $check"
  check=$(dirname "$check")
done

rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" "$dir/munge-key"
mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" "$dir/munge-key"
# munged wants its socket folder readable by all and its key private to its user.
chmod 755 "$dir" "$dir/munge"
chmod 700 "$dir/munge-key"
head -c 1024 /dev/urandom > "$dir/munge-key/munge.key"
chmod 400 "$dir/munge-key/munge.key"

cat > "$dir/slurm.conf" <<EOF
# A one-node cluster for sparsetune's Slurm scripts (scripts/slurm/local_cluster.sh).
ClusterName=sparsetune-local
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.log
ReturnToService=2
KillWait=15
SchedulerParameters=sched_interval=5
NodeName=localnode NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=localnode Default=YES MaxTime=INFINITE State=UP
EOF

# The namespace's first process: brings up loopback, starts the daemons and reaps what ends.
cat > "$dir/init.sh" <<EOF
set -euo pipefail
if [ "$mode" != host ]; then
  ip link set lo up
  # glibc's getaddrinfo with AI_ADDRCONFIG, which Slurm uses, resolves IPv4 names only where
  # a non-loopback IPv4 address exists: one from a documentation range, on loopback.
  ip addr add 192.0.2.1/32 dev lo
fi
export SLURM_CONF=$dir/slurm.conf
munged --foreground --socket=$dir/munge/munge.socket --key-file=$dir/munge-key/munge.key \\
  --pid-file=$dir/munge/munged.pid --log-file=$dir/log/munged.log \\
  --seed-file=$dir/munge-key/munged.seed > $dir/log/munged.out 2>&1 &
for _ in \$(seq 100); do [ -S $dir/munge/munge.socket ] && break; sleep 0.1; done
[ -S $dir/munge/munge.socket ] || { echo "munged did not start: see $dir/log/munged.out" >&2; exit 1; }
slurmctld -D -f $dir/slurm.conf > $dir/log/slurmctld.out 2>&1 &
ctld=\$!
slurmd -D -N localnode -f $dir/slurm.conf > $dir/log/slurmd.out 2>&1 &
node=\$!
# Until a daemon ends (the first process also reaps the orphans of finished jobs meanwhile).
wait -n \$ctld \$node || true
echo "a Slurm daemon ended: see $dir/log" >&2
exit 1
EOF

if [ "$mode" = host ]; then
  setsid bash "$dir/init.sh" > "$dir/log/init.out" 2>&1 < /dev/null &
  init_pid=$!
else
  setsid unshare "${namespaces[@]}" bash "$dir/init.sh" > "$dir/log/init.out" 2>&1 < /dev/null &
  unshare_pid=$!
  # unshare --fork: the namespace's first process is its child.
  init_pid=""
  for _ in $(seq 50); do
    init_pid=$(cat "/proc/$unshare_pid/task/$unshare_pid/children" 2> /dev/null | awk '{print $1}')
    [ -z "$init_pid" ] || break
    sleep 0.1
  done
  [ -n "$init_pid" ] || die "the namespace did not start (see $dir/log/init.out)"
fi
printf 'mode=%s\ninit_pid=%s\n' "$mode" "$init_pid" > "$dir/cluster.env"

# Ready when the node is idle.
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ] && kill -0 "$init_pid" 2> /dev/null; do
  state=$(enter timeout 10 sinfo -h -n localnode -o %T 2> /dev/null || true)
  if [ "$state" = idle ]; then
    echo "local_cluster.sh: Slurm is up in $dir ($mode, $cpus CPUs); run commands with:" \
      "$0 run $dir COMMAND" >&2
    exit 0
  fi
  sleep 0.5
done
echo "local_cluster.sh: the cluster did not start (the node is not idle after a minute); logs:" >&2
tail -n 20 "$dir"/log/*.log "$dir"/log/*.out >&2 || true
stop_cluster || true
exit 3
