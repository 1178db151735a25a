#!/usr/bin/env bash
# The Airflow CLI against the embedded stack: state under .ragwatch/, DAGs and plugins from
# this checkout, SQLite metadata. Initialises the metadata DB and the ragwatch pools once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export RAGWATCH_HOME=${RAGWATCH_HOME:-$root/.ragwatch}
export AIRFLOW_HOME=${AIRFLOW_HOME:-$RAGWATCH_HOME/airflow}
export AIRFLOW__CORE__DAGS_FOLDER=${AIRFLOW__CORE__DAGS_FOLDER:-$root/dags}
export AIRFLOW__CORE__PLUGINS_FOLDER=${AIRFLOW__CORE__PLUGINS_FOLDER:-$root/plugins}
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__LOGGING__COLORED_CONSOLE_LOG=False
export GX_ANALYTICS_ENABLED=false DVC_NO_ANALYTICS=1 RAGAS_DO_NOT_TRACK=true
export PATH="$root/.venv/bin:$PATH"
mkdir -p "$AIRFLOW_HOME"
if [ ! -f "$AIRFLOW_HOME/.ragwatch-initialised" ]; then
  airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 || { cat "$AIRFLOW_HOME/db-migrate.log"; exit 1; }
  airflow pools set ragwatch_dvc 1 "DVC holds a repository lock: one DVC task at a time" >/dev/null
  airflow pools set ragwatch_llm 4 "Model calls: batches in flight against the vLLM servers" >/dev/null
  touch "$AIRFLOW_HOME/.ragwatch-initialised"
fi
exec airflow "$@"
