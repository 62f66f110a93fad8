#!/usr/bin/env bash
# A throw-away single-host Slurm (Debian 12's slurmctld, slurmd, slurm-client and munge: Slurm 22.05) for the tests,
# in a folder of its own: munged on its own socket and key, slurmctld and slurmd on free localhost ports, one node with
# two fake GPUs (gres.conf names two empty files as their File=), no accounting (completion records go to a text file
# through jobcomp/filetxt), so nothing of the machine's own Slurm or munge is touched.
#
#   tests/slurm/slurm_cluster.sh start DIR   write the configuration, start munged, slurmctld, slurmd; wait until the
#                                            node is idle; prints the SLURM_CONF path
#   tests/slurm/slurm_cluster.sh stop DIR    stop the three daemons (TERM, then KILL after 5 s) and remove DIR
#   tests/slurm/slurm_cluster.sh run CMD...  start in a new temporary folder, run CMD with SLURM_CONF set, stop (also
#                                            when CMD fails), exit with CMD's status
#
# Exits 77 (CTest's skip code), saying why, when a binary is missing. Runs the daemons as the current user
# (SlurmUser = SlurmdUser = the caller): root in CI's container, anyone else on a laptop.
set -euo pipefail

need() {
  for b in "$@"; do
    if ! command -v "$b" > /dev/null 2>&1 && [ ! -x "/usr/sbin/$b" ]; then
      echo "slurm_cluster: $b is not installed (scripts/install-deps.sh --test installs slurmctld slurmd" \
           "slurm-client munge); skipping" >&2
      exit 77
    fi
  done
}
bin() { command -v "$1" 2>/dev/null || echo "/usr/sbin/$1"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start() {
  local dir=$1
  need munged mungekey slurmctld slurmd sbatch squeue scontrol scancel
  mkdir -p "$dir"/{state,spool,log,munge}
  chmod 700 "$dir/munge"
  local user host ctl_port d_port
  user=$(id -un)
  host=$(hostname -s)
  ctl_port=$(free_port)
  d_port=$(free_port)
  while [ "$d_port" = "$ctl_port" ]; do d_port=$(free_port); done
  "$(bin mungekey)" --create --keyfile="$dir/munge/munge.key" --force > /dev/null 2>&1 ||
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  "$(bin munged)" --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" --force
  touch "$dir/gpu0" "$dir/gpu1"
  # 16 CPUs whatever the machine has (config_overrides): the tests run small evaluations side by side, and a
  # 2-core CI runner would otherwise run two tasks at a time.
  local cpus=16 mem
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
  cat > "$dir/gres.conf" <<GRES
NodeName=$host Name=gpu Type=fake File=$dir/gpu0
NodeName=$host Name=gpu Type=fake File=$dir/gpu1
GRES
  cat > "$dir/slurm.conf" <<CONF
ClusterName=xsptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerParameters=sched_interval=1
MinJobAge=600
KillWait=2
OverTimeLimit=0
InactiveLimit=0
SlurmdTimeout=30
MessageTimeout=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:fake:2 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$host MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  "$(bin slurmctld)" -f "$dir/slurm.conf" -i > "$dir/log/slurmctld.out" 2>&1
  "$(bin slurmd)" -f "$dir/slurm.conf" > "$dir/log/slurmd.out" 2>&1
  local deadline=$((SECONDS + 60))
  until scontrol show node "$host" 2>/dev/null | grep -Eq 'State=IDLE'; do
    if [ $SECONDS -ge $deadline ]; then
      echo "slurm_cluster: the node did not become idle in 60 s" >&2
      scontrol show node "$host" >&2 || true
      tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
      stop "$dir"
      exit 1
    fi
    sleep 0.5
  done
  echo "$dir/slurm.conf"
}

kill_pidfile() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  kill_pidfile "$dir/slurmd.pid"
  kill_pidfile "$dir/slurmctld.pid"
  kill_pidfile "$dir/munge/munged.pid"
  rm -rf "$dir"
}

case "${1:-}" in
  start) start "$2" ;;
  stop) stop "$2" ;;
  run)
    shift
    need munged slurmctld slurmd sbatch
    dir=$(mktemp -d /tmp/xsp-slurm.XXXXXX)
    trap 'stop "$dir"' EXIT
    SLURM_CONF=$(start "$dir")
    export SLURM_CONF
    set +e
    "$@"
    rc=$?
    set -e
    exit $rc
    ;;
  *)
    echo "usage: $0 start DIR | stop DIR | run CMD..." >&2
    exit 2
    ;;
esac
