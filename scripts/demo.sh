#!/usr/bin/env bash
# The embedded demo: seed the trace store, run the DAGs for yesterday with `airflow dags test`,
# print what happened. All state lives under .ragwatch/; tracked files are never modified.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export RAGWATCH_HOME="$root/.ragwatch"
export PATH="$root/.venv/bin:$PATH"
today=$(date -u +%F)
yesterday=$(date -u -d yesterday +%F)
logs="$RAGWATCH_HOME/logs"
mkdir -p "$logs"

ragwatch demo seed

echo "running DAG trace_sampling for $yesterday (airflow dags test; log: $logs/trace_sampling-$yesterday.log)"
# `dags test D` runs the data interval that ends at D: passing today processes yesterday.
if ! scripts/airflow.sh dags test trace_sampling "$today" >"$logs/trace_sampling-$yesterday.log" 2>&1; then
  tail -n 40 "$logs/trace_sampling-$yesterday.log"
  echo "trace_sampling failed; the whole log is $logs/trace_sampling-$yesterday.log" >&2
  exit 1
fi
ragwatch demo summary --date "$yesterday"
