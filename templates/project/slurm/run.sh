#!/usr/bin/env bash
# Runs one training command inside a Slurm job; the *.sbatch scripts `exec` it, so it
# is the batch shell that receives the warning signal of `#SBATCH --signal=B:SIG@SECONDS`.
#
#   usage: slurm/run.sh FORWARD COMMAND...
#
# - Logs to slurm/logs/JOBNAME-JOBID-rN.log: one file per job and restart, N being
#   SLURM_RESTART_COUNT (0 on the first start, 1 after the first requeue, ...).
# - On the warning signal (or a preemption's TERM) it passes FORWARD to COMMAND: USR1 to
#   a python process, TERM to torchrun or srun (they pass TERM on to every rank; torchrun
#   would die of USR1). The run finishes its step, writes last.pt and exits 128+signal.
# - Then, outside any signal handler, the job requeues itself (scontrol requeue) unless
#   REQUEUE=0; the requeued job runs the same command, resumes from last.pt
#   (train.resume=auto, same out_dir) and continues metrics.csv. Only the warning signals
#   (USR1, USR2) requeue: a TERM is scancel or the time limit itself, and a job that was
#   cancelled stays cancelled (a preemption with PreemptMode=REQUEUE requeues by itself).
# - scontrol missing or failing: one line says so; last.pt is written all the same and
#   the exit status (not 0) says the job did not finish. Submit it again to continue.
set -uo pipefail

forward=$1
shift
restart=${SLURM_RESTART_COUNT:-0}
mkdir -p slurm/logs
exec >>"slurm/logs/${SLURM_JOB_NAME:-job}-${SLURM_JOB_ID:-0}-r${restart}.log" 2>&1
echo "slurm: job ${SLURM_JOB_ID:-?} restart ${restart} on $(hostname -s): $*"

received=""
child="" # a signal before the run has started reaches no one; the run then goes on
pass_on() {
    received=$1
    echo "slurm: SIG$1 received; passing SIG$forward on (the run saves last.pt and stops)"
    kill -s "$forward" "$child" 2>/dev/null || true
}
for sig in USR1 USR2 TERM INT; do
    trap "pass_on $sig" "$sig"
done

"$@" &
child=$!
status=0
wait "$child" || status=$?
while kill -0 "$child" 2>/dev/null; do # a signal interrupted `wait`: wait for the run itself
    status=0
    wait "$child" || status=$?
done

if [ "$status" -eq 0 ]; then
    echo "slurm: finished"
    exit 0
elif [ -z "$received" ]; then
    echo "slurm: the run failed (exit status $status): not requeued"
elif [ "$received" != USR1 ] && [ "$received" != USR2 ]; then
    echo "slurm: stopped by SIG$received (scancel or the time limit): not requeued (submit again to resume)"
elif [ "${REQUEUE:-1}" != 1 ]; then
    echo "slurm: stopped by SIG$received; REQUEUE=$REQUEUE: not requeued (submit again to resume)"
elif ! command -v scontrol >/dev/null; then
    echo "slurm: stopped by SIG$received; not requeued: scontrol is not on PATH (submit again to resume)"
elif problem=$(scontrol requeue "${SLURM_JOB_ID:-}" 2>&1); then
    echo "slurm: stopped by SIG$received; requeued job $SLURM_JOB_ID: restart $((restart + 1)) resumes from last.pt"
else
    echo "slurm: stopped by SIG$received; not requeued: scontrol requeue failed: ${problem//$'\n'/ } (submit again to resume)"
fi
exit "$status"
