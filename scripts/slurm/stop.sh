#!/usr/bin/env bash
# Stops the one-node test cluster scripts/slurm/start.sh started (slurmd, slurmctld; munged
# is left running, as other tools on the machine may use it).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="$(realpath -m "${1:-target/tmp/slurm}")"
for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
  if [[ -f "$pidfile" ]]; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
  fi
done
