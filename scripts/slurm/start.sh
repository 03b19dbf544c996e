#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine for the tests (issue 34): munge,
# slurmctld and slurmd on loopback, from Debian's packages (installed here when missing).
#
#   eval "$(scripts/slurm/start.sh [DIR])"     # prints `export SLURM_CONF=…` on stdout
#
# Idempotent: a cluster already answering on this configuration is reused. Everything but
# the export line goes to stderr. Stop it with scripts/slurm/stop.sh [DIR].
#
# The settings are the smallest that work as root in a container without systemd or a
# writable cgroup tree (docs/distributed.md, "A one-node Slurm cluster", says why each):
#   - auth/munge with the key Debian's munge package generates (Slurm 22.05 has no working
#     auth/none for job launch);
#   - proctrack/linuxproc and task/none: no cgroups needed;
#   - select/cons_tres with the node's CPUs taken from this file (config_overrides), so a
#     2-core runner can hold several 1-CPU shards at once, as a cluster holds one per node;
#   - jobcomp/filetxt, read by `sacct --completion`: a job's end state and reason without
#     slurmdbd and a MySQL server;
#   - SlurmUser=root, state and spool under DIR, so nothing in /etc or /var is touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="$(realpath -m "${1:-target/tmp/slurm}")"
log() { printf 'slurm: %s\n' "$*" >&2; }

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1 \
  || ! command -v sbatch >/dev/null 2>&1; then
  log "installing Debian's slurmctld, slurmd, slurm-client and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

conf="$dir/slurm.conf"
export SLURM_CONF="$conf"
if [[ -f "$conf" ]] && timeout 5 sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
  log "reusing the cluster at $dir"
  echo "export SLURM_CONF=$conf"
  exit 0
fi

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
# munge: its key comes with the package; its socket directory does not exist without systemd.
if [[ ! -f /etc/munge/munge.key ]]; then
  log "creating a munge key"
  mungekey --create >&2 || /usr/sbin/create-munge-key -f >&2
  chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
fi
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null || { log "munged did not start"; exit 1; }

host="$(hostname -s)"
cpus="${SLURM_TEST_CPUS:-8}"
mem="$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)"
cat >"$conf" <<CONF
ClusterName=llmib-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
# Seconds, not minutes: a test waits on these.
SchedulerParameters=sched_interval=2
MinJobAge=600
KillWait=5
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF

# A previous cluster on another configuration: stop it first.
pkill -x slurmctld 2>/dev/null || true
pkill -x slurmd 2>/dev/null || true
sleep 0.5
log "starting slurmctld and slurmd ($host, $cpus CPUs) at $dir"
# A fresh start: no jobs from an earlier cluster (-c), and no completions of theirs either,
# since job ids start again at 1 and the tests find their jobs in sacct by id.
rm -f "$dir/log/jobcomp.log"
slurmctld -f "$conf" -c
slurmd -f "$conf"
for _ in $(seq 100); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    log "up: $(sinfo -h -o '%P %D %T %c' | head -1)"
    echo "export SLURM_CONF=$conf"
    exit 0
  fi
  sleep 0.2
done
log "the node did not become idle; last lines of the logs:"
tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
exit 1
