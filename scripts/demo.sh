#!/usr/bin/env bash
# The embedded demo: seed the trace store, run the DAGs for yesterday with `airflow dags test`,
# then a regression drill: a line per step here, every table in .ragwatch/logs/demo.log, and one last screen
# (`ragwatch demo recap`) on what ran and where to click. All state lives under .ragwatch/ (or $RAGWATCH_HOME);
# tracked files are never modified.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export RAGWATCH_HOME="${RAGWATCH_HOME:-$root/.ragwatch}"
export PATH="$root/.venv/bin:$PATH"
# This checkout's code, whichever checkout the virtualenv was installed from (its `ragwatch` and Airflow's tasks import `pipelines`).
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
# The offline model errs like a real one, at known rates (docs/tutorial/demo.md), so scores spread; a rate the
# environment sets wins.
for fault in MADE_UP=0.06 SWAPPED=0.04 WRONG_ABSTENTION=0.04 WRONG_CONTEXT=0.05 WRONG_TOOL=0.1 WRONG_ARGUMENTS=0.1 \
  NOISE_SUSCEPTIBILITY=0.3; do
  name="RAGWATCH_OFFLINE_FAULTS__${fault%%=*}"
  export "$name=${!name:-${fault#*=}}"
done
# Enough judged items queued for labelling that each audited metric gets the 20 labels a κ verdict needs.
export RAGWATCH_JUDGE_AUDIT_PER_DAY="${RAGWATCH_JUDGE_AUDIT_PER_DAY:-60}"
# Enough items judged twice (of the 60) for the test-retest figures: 10 per metric at least.
export RAGWATCH_JUDGE_RETEST_SHARE="${RAGWATCH_JUDGE_RETEST_SHARE:-0.3}"
today=$(date -u +%F)
yesterday=$(date -u -d yesterday +%F)
logs="$RAGWATCH_HOME/logs"
mkdir -p "$logs"
# Every command's full output (its tables, written plainly: not a terminal) goes to one log; the terminal gets a
# line per step and, at the end, one screen (`ragwatch demo recap`).
demo_log="$logs/demo.log"
: >"$demo_log"

step() {  # step DESCRIPTION COMMAND...: one line here, the command's output in the demo log
  local description=$1
  shift
  echo "- $description"
  echo "=== $description: $*" >>"$demo_log"
  if ! "$@" >>"$demo_log" 2>&1; then
    tail -n 40 "$demo_log"
    echo "failed: $description; the whole output is in $demo_log" >&2
    exit 1
  fi
}

# Scores go to a real Pushgateway, scraped by a real Prometheus that evaluates the project's alert rules
# (deploy/local_stack's own service definitions, on loopback, state under $RAGWATCH_HOME/demo-monitoring,
# stopped at the end). Only when no Pushgateway binary exists do scores go to textfiles.
monitoring="$RAGWATCH_HOME/demo-monitoring"
if command -v prometheus-pushgateway >/dev/null; then
  trap 'PYTHONPATH="$root" python -m deploy.local_stack monitoring-down --home "$monitoring" >>"$demo_log" 2>&1' EXIT
  PYTHONPATH="$root" python -m deploy.local_stack monitoring-up --home "$monitoring" >"$logs/monitoring.env"
  . "$logs/monitoring.env"
  echo "- Pushgateway $RAGWATCH_PUSHGATEWAY_URL and Prometheus ${RAGWATCH_PROMETHEUS_URL:-(no prometheus binary: none)} started"
else
  echo "- no prometheus-pushgateway binary: scores go to textfiles under $RAGWATCH_HOME/metrics (scripts/system-deps.sh installs it)"
fi

if [ "${TRACE_SOURCE:-sql}" = otlp ]; then  # `make demo TRACE_SOURCE=otlp`: the traffic as OTLP/JSON span files
  export RAGWATCH_TRACE_SOURCE=otlp RAGWATCH_TRACE_SOURCE_PATH="${RAGWATCH_TRACE_SOURCE_PATH:-$RAGWATCH_HOME/otlp}"
fi
step "seeding 14 days of demo traffic" ragwatch demo seed

run_dag() {  # run_dag DAG_ID DATE [CONF]: one real DAG run, its log kept under .ragwatch/logs
  local log="$logs/$1-$2.log"
  echo "- DAG $1 for $2, by airflow dags test (log: ${log#"$root"/})"
  if ! scripts/airflow.sh dags test "$1" "$2" ${3:+--conf "$3"} >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "$1 failed; the whole log is $log" >&2
    exit 1
  fi
}

# `dags test D` runs the data interval that ends at D: passing yesterday processes the day before. The golden set is
# built from that day's sample (as last week's build would have been), before yesterday is sampled: yesterday 30 %
# of the users started asking about packaging, which the online eval's coverage then finds missing.
run_dag trace_sampling "$yesterday"

step "indexing the demo corpus (Python docs + Spanish guides) in Qdrant local mode" ragwatch demo corpus
# Coverage learns its threshold and the matcher's error rates on the golden set's user questions. A team imports
# reviewed questions like its users' with their passages; the demo does the same for the passages its users ask about.
reviewed="$RAGWATCH_HOME/demo/reviewed-questions.jsonl"
step "writing reviewed user questions on the passages the demo's users ask about" ragwatch demo reviewed "$reviewed"
step "importing them into the golden set" ragwatch golden import "$reviewed"
run_dag golden_build "$today"
step "golden set summary" ragwatch golden summary

run_dag trace_sampling "$today"
step "trace sample of $yesterday" ragwatch demo summary --date "$yesterday"

# The offline eval's logical date is the end of its weekly interval; a 60-item subset keeps the demo short.
run_dag offline_eval "$today" '{"limit": 60}'
step "offline eval summary" ragwatch eval summary --suite offline
step "offline gauges" ragwatch eval gauges --suite offline

# Can the judge be trusted? People label the day's judge-audit queue; the demo plants a reviewer's labels instead,
# and the next offline run (the drill's) reports Cohen's κ beside the judge-only mean; the mean corrected for the
# judge's error rates waits for 20 labels per metric from 2 runs at least (their error rates compared first).
step "planting a reviewer's labels on the judge-audit queue" ragwatch demo label-audit --suite offline

# The drill: a candidate that hallucinates more, on the same 60 items, gated against that run.
step "regression drill: a degraded candidate against the run above" ragwatch demo drill

run_dag online_eval "$today"
step "online eval summary" ragwatch eval summary --suite online
step "online gauges" ragwatch eval gauges --suite online

echo
ragwatch demo recap --date "$yesterday" --log "$demo_log"
