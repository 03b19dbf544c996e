#!/bin/bash
# Submits a sharded run: the shard array (shards.sbatch) with a start instant a few minutes
# ahead, and the merge (merge.sbatch) to run once every shard has succeeded.
#
#   LLMIB_URL=http://gpu-node-1:8000 OPENAI_API_KEY=… deploy/slurm/submit.sh
#
# Environment: SHARDS (default 4), LEAD_MINUTES (default 3: time for every task to start and
# probe the server before START_AT), START_AT (to choose the instant yourself), RESULTS,
# SBATCH_OPTS (options for both jobs, word-split, after the scripts' own #SBATCH lines so they
# win: your cluster's `--partition=gpu-clients --account=perf`, or fewer CPUs per shard), and
# the LLMIB_* settings read by shards.sbatch.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
SHARDS="${SHARDS:-4}"
LEAD_MINUTES="${LEAD_MINUTES:-3}"
START_AT="${START_AT:-$(date -u -d "+$LEAD_MINUTES min" +%Y-%m-%dT%H:%M:%SZ)}"
RESULTS="${RESULTS:-results}"
export SHARDS START_AT RESULTS

# The logs go to results/ (the #SBATCH --output lines); Slurm does not create it.
mkdir -p results "$RESULTS"

# --array here overrides the script's 0-3, so SHARDS sizes both the array and the merge.
# --parsable prints "jobid" or "jobid;cluster".
read -r -a opts <<<"${SBATCH_OPTS:-}"
array_id="$(sbatch --parsable "${opts[@]}" --array="0-$((SHARDS - 1))" --export=ALL "$here/shards.sbatch")"
array_id="${array_id%%;*}"
# A failed shard makes the dependency impossible: --kill-on-invalid-dep cancels the merge
# (sacct shows it CANCELLED, the failed task FAILED with its exit code) instead of leaving it
# pending forever with DependencyNeverSatisfied.
merge_id="$(sbatch --parsable "${opts[@]}" --dependency="afterok:$array_id" --kill-on-invalid-dep=yes \
  --export=ALL "$here/merge.sbatch")"
merge_id="${merge_id%%;*}"

echo "start at $START_AT: shards job $array_id (${SHARDS} tasks), merge job $merge_id"
echo "merged results: $RESULTS/merged"
