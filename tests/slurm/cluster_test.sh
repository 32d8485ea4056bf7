#!/usr/bin/env bash
# The Slurm example (examples/slurm) on a real Slurm: a single-node cluster on this machine
# (Debian's slurmctld and slurmd, 22.05; AuthType=auth/none, so no munge key is needed; two
# generic GPUs, /dev/null and /dev/zero, so --gres=gpu:1 schedules), the job array of
# tune-shard.sbatch with the scripted measuring process (no GPU), the merge job after it, and the
# merged winners against those of the same tune run unsharded. The daemons are stopped afterwards.
# Installs the packages where they are missing and this runs as root with apt-get; otherwise skips
# (exit 77) and says why.
# Usage: cluster_test.sh CM_TUNE SCRIPTED_WORKER SOURCE_DIR
set -uo pipefail
bin="$1" worker="$2" src="$3"
shards=3
sizes="64,96x80x72:nt,128"

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

missing=()
for c in slurmctld slurmd sbatch squeue scontrol sinfo; do command -v "$c" > /dev/null || missing+=("$c"); done
if ((${#missing[@]})); then
  [ "$(id -u)" -eq 0 ] || skip "Slurm is not installed (${missing[*]} missing) and installing it needs root"
  command -v apt-get > /dev/null || skip "Slurm is not installed (${missing[*]} missing) and there is no apt-get"
  echo "installing slurmctld, slurmd and slurm-client (Debian's slurm-wlm)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client > /dev/null 2>&1 ||
    { apt-get update -qq > /dev/null 2>&1 &&
      apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client > /dev/null; } ||
    fail "apt-get could not install slurmctld, slurmd and slurm-client"
fi
[ "$(id -u)" -eq 0 ] || skip "slurmd runs jobs as their user only when it runs as root, and this is not root"

dir="$(mktemp -d /tmp/cmt-slurm-XXXXXX)"
export SLURM_CONF="$dir/slurm.conf"
stop_cluster() {
  for d in slurmd slurmctld; do
    [ -f "$dir/$d.pid" ] && kill "$(cat "$dir/$d.pid")" 2> /dev/null
  done
  for _ in $(seq 50); do
    { [ -f "$dir/slurmd.pid" ] && kill -0 "$(cat "$dir/slurmd.pid")" 2> /dev/null; } ||
      { [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2> /dev/null; } || break
    sleep 0.1
  done
  rm -rf "$dir"
}
trap stop_cluster EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
host="$(hostname -s)"
mkdir -p "$dir/state" "$dir/spool" "$dir/shards"
cat > "$SLURM_CONF" <<CONF
ClusterName=cmtune-test
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu
NodeName=$host CPUs=$(nproc) RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
printf 'AutoDetect=off\nNodeName=%s Name=gpu File=/dev/null\nNodeName=%s Name=gpu File=/dev/zero\n' "$host" "$host" \
  > "$dir/gres.conf"
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -5 "$dir/slurmctld.log" 2> /dev/null)"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start: $(tail -5 "$dir/slurmd.log" 2> /dev/null)"
for _ in $(seq 100); do
  [ "$(sinfo -h -o %t 2> /dev/null)" = "idle" ] && break
  sleep 0.2
done
[ "$(sinfo -h -o %t)" = "idle" ] || fail "the node did not come up: $(sinfo 2>&1); $(tail -5 "$dir/slurmctld.log")"
echo "single-node Slurm $(sinfo -V | cut -d' ' -f2) up on $host"

cat > "$dir/preset.toml" << 'PRESET'
name = "slurm-test"
description = "the generic default at four block heights"
[templates.blocktile2d]
BM = [32, 64, 128, 256]
BN = [64]
BK = [8]
TM = [8]
TN = [4]
PRESET
export CMTUNE_MEASURE_WORKER="$worker" CMTUNE_SCRIPT_HASHED=1   # the same answers in every shard
tune_args="--config $dir/preset.toml --no-calibrate --seed 3 --jobs 1"

# The same run unsharded, for comparison.
# shellcheck disable=SC2086
"$bin" --quiet --db "$dir/whole.db" tune --device 0 --sizes "$sizes" $tune_args || fail "the unsharded tune failed"

# The example as a user runs it: the array, then the merge job after it.
cd "$dir" || fail "no $dir"
submitted="$(CMTUNE_BIN="$bin" CMTUNE_SIZES="$sizes" CMTUNE_TUNE_ARGS="$tune_args" CMTUNE_SHARDS="$dir/shards" \
  CMTUNE_DB="$dir/merged.db" CMTUNE_HEADER="$dir/merged.cuh" "$src/examples/slurm/submit.sh" "$shards")" ||
  fail "submit.sh failed: $submitted"
echo "$submitted"
merge_job="$(echo "$submitted" | sed -n 's/.*merge and export: job \([0-9]*\).*/\1/p')"
[ -n "$merge_job" ] || fail "no merge job id in: $submitted"
state=""
for _ in $(seq 600); do
  state="$(scontrol show job "$merge_job" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')"
  case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | OUT_OF_MEMORY | NODE_FAIL) break ;; esac
  sleep 0.3
done
for f in "$dir"/cm-tune-*.out; do echo "--- $(basename "$f")"; cat "$f"; done
[ "$state" = "COMPLETED" ] || fail "the merge job ended $state"
[ "$(ls "$dir"/shards/shard-*.db | wc -l)" -eq "$shards" ] || fail "expected $shards shard databases: $(ls "$dir/shards")"
[ -s "$dir/merged.cuh" ] || fail "the merge job exported no header"

# Every shard measured a share, and the merged winners are the unsharded run's.
python3 - "$dir" "$shards" << 'PY' || exit 1
import sqlite3, sys
folder, shards = sys.argv[1], int(sys.argv[2])
def rows(db, sql):
    return sorted(sqlite3.connect(f"file:{folder}/{db}?mode=ro", uri=True).execute(sql).fetchall())
trials = "SELECT template_name, params, m, n, k, layout FROM trials"
whole = rows("whole.db", trials)
shares = [rows(f"shards/shard-{i}.db", trials) for i in range(shards)]
for i, s in enumerate(shares):
    if not s:
        sys.exit(f"FAIL: shard {i} measured nothing")
union = sorted(t for s in shares for t in s)
if union != whole:
    sys.exit(f"FAIL: the shards' trials are not the unsharded run's: {len(union)} against {len(whole)}")
winners = ("SELECT d.uuid, w.m, w.n, w.k, w.layout, w.dtype, w.scope, w.template_name, w.params "
           "FROM winners w JOIN devices d ON d.id = w.device_id")
if rows("merged.db", winners) != rows("whole.db", winners):
    sys.exit("FAIL: the merged winners differ from the unsharded run's:\n"
             f"{rows('merged.db', winners)}\n{rows('whole.db', winners)}")
print(f"PASS: {shards} shards of {len(whole)} trials; the merged database's "
      f"{len(rows('merged.db', winners))} winners are the unsharded run's")
PY
