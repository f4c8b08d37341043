#!/usr/bin/env bash
# Stops what tests/slurm/start.sh started: slurmd, slurmctld and (when start.sh started it) munged,
# each by the pid it recorded under DIR; then removes DIR's state. Safe to run twice.
set -uo pipefail
dir=${1:-${PYREPRO_SLURM_DIR:-${TMPDIR:-/tmp}/pyrepro-slurm}}
for name in slurmd slurmctld munged; do
  pidfile="$dir/$name.pid"
  [ -s "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$pidfile"
done
rm -rf "$dir/state" "$dir/spool"
exit 0
