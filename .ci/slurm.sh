#!/usr/bin/env bash
# CI step: run a real multi-point target on a real one-node SLURM cluster, through
# workflow/profiles/slurm, exactly as the README's "On a SLURM cluster" section says, and check
#   1. every compute_points and extend_points job went through SLURM (seen by squeue while
#      running, and COMPLETED in slurmctld's job completion log — this cluster has no
#      accounting database, so sacct cannot answer; that is also the setting in which the
#      plugin's default, sacct, hangs),
#   2. the jobs ran in the partition given by SBATCH_PARTITION (not the cluster default), and
#   3. the table is byte-identical to a local run of the same target.
# Needs root on Debian (installs slurm-wlm and munge with apt when missing). The daemons run
# from a scratch directory with their own key, socket, state and logs, and are stopped by PID on
# exit, also on failure. The one file written outside it is /etc/slurm/slurm.conf (removed
# again on exit): the jobstep plugin strips SLURM_CONF from the environment of the srun it
# starts inside each job, so that srun only finds a configuration at the default path. An
# existing slurm.conf that this script did not write is never touched: the step stops instead.
# Usage: bash .ci/slurm.sh   (with the project's venv active, or snakemake on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
log() { echo "[slurm-ci $(($(date +%s) - t0))s] $*"; }

target=results/supermarket/supermarket-tail.csv # 3 points in the quick config
partition=lbrepro # the partition the run asks for; the cluster's default is another one
njobs_min=2

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
    ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
    log "installed slurm-wlm and munge"
fi

work=$(mktemp -d /tmp/lbrepro-slurm.XXXXXX)
# The quick profile packs the target's 3 cheap points (~0.6 s each) into one job; a smaller
# job_seconds, as a user's own overrides would set it, makes 2 jobs, one of them of 2 points.
printf 'simulation:\n  job_seconds: 1.2\n' >"$work/jobs.yaml"
configs=(config/config.yaml config/quick.yaml "$work/jobs.yaml")
local_pid=
pids=() # daemons and helpers this script started, stopped in reverse order on exit


teardown() {
    local rc=$?
    set +e
    if ((rc != 0)); then
        log "FAILED (exit $rc); daemon logs follow"
        for f in "$work"/slurmctld.log "$work"/slurmd.log "$work"/munged.log; do
            [[ -f $f ]] && { echo "--- $f"; tail -n 30 "$f"; }
        done
    fi
    # A local run still going (the step failed before waiting for it).
    if [[ -n ${local_pid:-} ]]; then
        kill "$local_pid" 2>/dev/null
        wait "$local_pid" 2>/dev/null
    fi
    # Cancel leftover jobs (a failed or timed-out run) while slurmctld can still do it.
    if [[ -n ${slurmctld_started:-} ]]; then
        scancel --full --partition="$partition" 2>/dev/null
    fi
    local i pid
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[i]}
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    if [[ -n ${conf_written:-} ]] && grep -qxF "$marker" "$conf" 2>/dev/null; then
        rm -f "$conf"
    fi
    if ((rc == 0)) && [[ -z ${LBREPRO_SLURM_KEEP:-} ]]; then
        rm -rf "$work"
    else
        log "kept $work for inspection"
    fi
    log "total $(($(date +%s) - t0)) s"
    exit "$rc"
}
trap teardown EXIT

# --- a one-node cluster -------------------------------------------------------------------
host=$(hostname -s)
cpus=$(nproc)
# Declare 90% of the memory: a node reporting less than it is declared with gets drained, and
# compute_points asks for --mem 1000.
mem_mb=$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
conf=/etc/slurm/slurm.conf
marker="# written by lbrepro .ci/slurm.sh"
if [[ -e $conf ]] && ! grep -qxF "$marker" "$conf"; then
    log "$conf exists and is not this script's: not replacing a real cluster's configuration"
    exit 1
fi
unset SLURM_CONF
mkdir -p "$work"/{state,spool,munge} /etc/slurm
chmod 700 "$work"/munge

# Its own key and socket: a munged of the machine, if any, is neither needed nor disturbed.
mungekey --create --keyfile="$work/munge/munge.key" --force
munged --foreground --force --socket="$work/munge/munge.socket" \
    --key-file="$work/munge/munge.key" --pid-file="$work/munge/munged.pid" \
    --log-file="$work/munged.log" --seed-file="$work/munge/munged.seed" 2>/dev/null &
pids+=($!)

cat >"$conf.tmp" <<EOF
$marker
# A one-node CI cluster; this file is removed when the step ends.
ClusterName=lbrepro-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
# No cgroups in a CI container: track processes by parent PID, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
# No accounting database (the case where sacct fails); finished jobs are written here.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$work/jobcomp.log
# Finished jobs stay visible to squeue this long (SLURM's default, stated because the
# profile's squeue status check relies on it).
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=$partition Nodes=$host Default=NO MaxTime=INFINITE State=UP
EOF
mv "$conf.tmp" "$conf"
conf_written=1

for _ in $(seq 50); do [[ -S $work/munge/munge.socket ]] && break; sleep 0.1; done
# In the foreground (-D) so that $! is the daemon; they log to their files, stderr repeats it.
slurmctld -D 2>/dev/null &
pids+=($!)
slurmctld_started=1
slurmd -D 2>/dev/null &
pids+=($!)

state=
for _ in $(seq 60); do
    state=$(sinfo -h -N -n "$host" -p "$partition" -o %t 2>/dev/null || true)
    [[ $state == idle ]] && break
    sleep 0.5
done
[[ $state == idle ]] || { log "node $host not idle after 30 s (state: '${state:-none}')"; exit 1; }
log "cluster up: node $host, $cpus CPUs, partitions debug (default) and $partition"

# --- the README's command, on the cluster, and the same target locally ----------------------
# Both in scratch directories, so that a checkout's own results/ neither masks nor receives
# anything. The local reference run goes alongside: the SLURM run spends most of its time
# waiting between status checks.
timeout -k 20 300 snakemake "$target" --cores 1 \
    --directory "$work/local" --configfile "${configs[@]}" >"$work/snakemake-local.log" 2>&1 &
local_pid=$!

# Watch the queue while the workflow runs: the second, independent proof of submission.
(while sleep 0.5; do squeue -h -o '%i %j %P %T' 2>/dev/null; done >"$work/squeue.txt") &
pids+=($!)

export SBATCH_PARTITION=$partition
# timeout: a status check that never sees the jobs finish (sacct without accounting) must fail
# the step, not hang CI. -k: on SIGTERM Snakemake waits for its running jobs to finish, which
# in that very case never happens (seen: still waiting 10 minutes after the job COMPLETED).
timeout -k 20 300 snakemake "$target" --workflow-profile workflow/profiles/slurm \
    --directory "$work/slurm" --configfile "${configs[@]}" >"$work/snakemake-slurm.log" 2>&1 ||
    { tail -n 40 "$work/snakemake-slurm.log"; log "SLURM run failed"; exit 1; }
unset SBATCH_PARTITION
log "SLURM run done"

# --- checks --------------------------------------------------------------------------------
# The plugin names every job after its run ID: the jobs counted below are this run's.
run_id=$(sed -n 's/^SLURM run ID: //p' "$work/snakemake-slurm.log" | head -n 1)
[[ -n $run_id ]] || { log "the run did not use the SLURM executor"; exit 1; }
# The cluster really has no accounting: sacct fails (the plugin's default status command).
if sacct -n -X >/dev/null 2>&1; then
    log "sacct unexpectedly works on this cluster"; exit 1
fi
njobtables=$(find "$work/slurm/results" -path '*/jobs/*.csv' | wc -l)
((njobtables >= njobs_min)) || { log "only $njobtables job tables (want >= $njobs_min)"; exit 1; }
# and one extension per artifact with simulated points (rule extend_points), submitted too
nextensions=$(find "$work/slurm/results" -name extended.csv | wc -l)
nsubmitted=$((njobtables + nextensions))
ours=$(grep -F " Name=$run_id " "$work/jobcomp.log" || true)
njobs=$(grep -c 'JobState=' <<<"$ours" || true)
ncompleted=$(grep -c 'JobState=COMPLETED' <<<"$ours" || true)
nright=$(grep 'JobState=COMPLETED' <<<"$ours" | grep -c " Partition=$partition " || true)
nseen=$(awk -v id="$run_id" '$2 == id {print $1}' "$work/squeue.txt" | sort -u | wc -l)
log "job tables $njobtables, extensions $nextensions; SLURM jobs: $njobs finished, $ncompleted COMPLETED," \
    "$nright in partition $partition; $nseen distinct job ids seen by squeue"
if ((njobs != nsubmitted || ncompleted != nsubmitted || nright != nsubmitted ||
    nseen < nsubmitted)); then
    echo "--- jobcomp.log"; cat "$work/jobcomp.log" 2>/dev/null
    log "expected every one of the $nsubmitted compute_points and extend_points jobs" \
        "COMPLETED on SLURM in" \
        "$partition"
    exit 1
fi

rc=0
wait "$local_pid" || rc=$?
local_pid=
((rc == 0)) || { tail -n 40 "$work/snakemake-local.log"; log "local run failed"; exit 1; }
cmp "$work/slurm/$target" "$work/local/$target" ||
    { log "$target differs between the SLURM and the local run"; exit 1; }
log "OK: $target byte-identical on SLURM and locally"
