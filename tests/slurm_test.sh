#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# slurm_test.sh: a sweep as a Slurm job array, end to end, on a single-node Slurm started here
# (make check-slurm). Starts munged (unless running), slurmctld and slurmd as root on private ports
# with a private configuration and state under a temporary folder, writes a 2 x 2 sweep with
# `tessera exp sweep --slurm`, submits it (sbatch --wait), merges the 4 runs' databases and checks
# them; stops what it started, whatever happens. Needs root and the Debian package slurm-wlm.
# Usage: slurm_test.sh PATH/TO/tessera   Prints "slurm: N passed, M failed".
set -u
bin=$(cd "$(dirname "${1:?usage: slurm_test.sh PATH/TO/tessera}")" && pwd)/$(basename "$1")
for c in slurmctld slurmd sbatch scontrol munged; do
    command -v $c >/dev/null || { echo "slurm: $c not found (Debian: apt-get install slurm-wlm)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "slurm: the daemons run as root here: run as root" >&2; exit 2; }
tmp=$(mktemp -d)
started_munge=0
export SLURM_CONF="$tmp/slurm.conf"
cleanup() {
    scontrol shutdown >/dev/null 2>&1
    sleep 1
    pkill -f -- "-f $SLURM_CONF" 2>/dev/null # the daemons started with this configuration
    [ "$started_munge" = 1 ] && [ -f "$tmp/munged.pid" ] && kill "$(cat "$tmp/munged.pid")" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "slurm: FAIL: $*" >&2; }

h=$(hostname)
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$SLURM_CONF" <<EOF
ClusterName=tessera-test
SlurmctldHost=$h
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
SlurmctldPort=6917
SlurmdPort=6918
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$h CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$h Default=YES MaxTime=INFINITE State=UP
EOF
if [ ! -S /run/munge/munge.socket.2 ]; then # no munged answering: one of our own
    mkdir -p /run/munge
    munged --force --pid-file="$tmp/munged.pid" 2>"$tmp/munged.err" ||
        { echo "slurm: munged did not start: $(cat "$tmp/munged.err")" >&2; exit 1; }
    started_munge=1
fi
slurmctld -f "$SLURM_CONF" && slurmd -f "$SLURM_CONF" || { echo "slurm: the daemons did not start" >&2; exit 1; }
for _ in $(seq 1 30); do # until the node takes jobs
    sinfo -h -o %t 2>/dev/null | grep -q idle && break
    sleep 1
done
sinfo -h -o %t | grep -q idle && ok || bad "the node is not idle after 30 s: $(sinfo 2>&1 | tail -1)"

printf -- '--policy dual sparse\n--rps 1 4\n--requests 20\n' >"$tmp/grid.txt"
"$bin" exp sweep "$tmp/grid.txt" "$tmp/out" --slurm >"$tmp/sweep.txt" 2>&1 && ok || bad "exp sweep --slurm: $(cat "$tmp/sweep.txt")"
timeout 120 sbatch --wait "$tmp/out/sweep.sbatch" >"$tmp/sbatch.txt" 2>&1 && ok ||
    bad "the job array did not finish in 120 s: $(cat "$tmp/sbatch.txt")"
"$bin" db merge "$tmp/out/sweep.db" "$tmp"/out/runs/run-{1,2,3,4}.db >"$tmp/merge.txt" 2>&1 && ok ||
    bad "merging the array's databases: $(cat "$tmp/merge.txt")"
got=$(sqlite3 "$tmp/out/sweep.db" "SELECT group_concat(json_extract(config_json, '$.policy') || ':' ||
    json_extract(config_json, '$.rps') || ':' || num_finished, ' ') FROM runs JOIN summary USING (run_id)" 2>&1)
[ "$got" = "dual:1.0:20 dual:4.0:20 sparse:1.0:20 sparse:4.0:20" ] && ok || bad "the array's runs: '$got'"
echo "slurm: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
