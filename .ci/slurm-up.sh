#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the tests of the `slurm` feature.
#
# Debian's packages: munge (authentication), slurmctld (the scheduler), slurmd (the node,
# this host), slurm-client (sbatch, squeue, scontrol, ...). Run as root. Idempotent: when
# the cluster already answers it returns at once; otherwise it installs what is missing,
# writes /etc/slurm/slurm.conf, starts the three daemons and waits for the node to be idle.
# Stop it with: pkill -x slurmd; pkill -x slurmctld; pkill -x munged
set -euo pipefail

node=$(hostname -s)
if sinfo -h -n "$node" -o %t 2>/dev/null | grep -qx idle; then
    echo "slurm: already up (node $node idle)"
    exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q slurmctld slurmd slurm-client munge >/dev/null
fi

# munge: a key shared by every daemon (one host here); munged runs as the munge user
if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null \
        || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
pgrep -x munged >/dev/null || runuser -u munge -- munged

# slurm.conf: one node, this host, 2 CPUs. linuxproc and task/none need no cgroups (none
# in containers); cred_expire=10 is how long a requeued job waits before it starts again.
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cpus=$(nproc)
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$node
AuthType=auth/munge
AuthInfo=cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmUser=root
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MinJobAge=300
KillWait=10
InactiveLimit=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF

pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
    state=$(sinfo -h -n "$node" -o %t 2>/dev/null || true)
    case "$state" in
        idle) echo "slurm: up (node $node, $cpus CPUs)"; exit 0 ;;
        down*|drain*) scontrol update nodename="$node" state=resume 2>/dev/null || true ;;
    esac
    sleep 1
done
echo "slurm: node $node is not idle after 60 s (state: ${state:-none}); see /var/log/slurm/" >&2
exit 1
