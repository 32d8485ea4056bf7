#!/bin/bash
# Submits a sharded cm-tune run to Slurm: N tasks of tune-shard.sbatch, one GPU each, then
# merge.sbatch once every task has succeeded (--dependency=afterok). Prints both job ids.
# Usage: examples/slurm/submit.sh N [sbatch options for the array, e.g. --partition gpu]
# The settings of tune-shard.sbatch and merge.sbatch (CMTUNE_SIZES, CMTUNE_TUNE_ARGS, ...) are taken
# from the environment.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
n="${1:?usage: submit.sh N [sbatch options]}"
shift
case "$n" in
  '' | *[!0-9]* | 0) echo "submit.sh: N must be a whole number of at least 1, not '$n'" >&2; exit 2 ;;
esac
array=$(sbatch --parsable --array="0-$((n - 1))" "$@" "$here/tune-shard.sbatch")
array="${array%%;*}"
merge=$(sbatch --parsable --dependency="afterok:$array" "$here/merge.sbatch")
merge="${merge%%;*}"
echo "tune array: job $array ($n shards); merge and export: job $merge (after the array succeeds)"
