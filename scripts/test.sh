#!/usr/bin/env bash
# `make test`: the whole suite, as two pytest runs that overlap, to stay within 20 minutes on 2 cores:
#   - the main suite (all but marker real_model), in the foreground, on one pytest-xdist worker per CPU and one
#     more (RAGWATCH_TEST_WORKERS overrides); a test file runs whole on one worker, so module fixtures are
#     built once; it prints its ten slowest tests;
#   - in the background, the real-model setup (scripts/real-model.sh: on a machine that never built
#     llama-cpp-python, a 7-15 min build, at the lowest CPU priority so the tests keep their CPU),
#     then the real-model tests (docs/how-to/real-model.md). Their output is printed after the main suite's.
# Exit status: the first failing run's.
#   scripts/test.sh [pytest args...]   e.g. scripts/test.sh tests/unit/pipelines/evaluation/statistics/gate/test_rule.py -x
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD
mkdir -p .ragwatch
setup_log=.ragwatch/real-model-setup.log
real_log=.ragwatch/real-model-tests.log

# pytest's exit status 5 means "no test selected": a run narrowed to other tests selected none here.
run_pytest() { .venv/bin/python -m pytest "$@"; local rc=$?; [ "$rc" -eq 5 ] && rc=0; return "$rc"; }

(
  if ! PYTHON=.venv/bin/python nice -n 19 scripts/real-model.sh >"$setup_log" 2>&1; then
    echo "scripts/real-model.sh failed, so the real-model tests could not run; $setup_log ends with:"
    tail -n 40 "$setup_log"
    exit 1
  fi
  run_pytest -m real_model --durations=5 "$@"
) >"$real_log" 2>&1 &
real=$!

# The Phoenix server's venv (once per machine, ~1 min) builds beside the suite at the lowest CPU priority, as the
# real-model setup does; its test waits on the same lock.
PYTHON=.venv/bin/python nice -n 19 scripts/phoenix-server.sh >.ragwatch/phoenix-server.log 2>&1 &

# One worker more than the CPUs: the worker that holds tests/integration/test_stack.py mostly waits on the stack's scheduler
# (~10 of its ~11 minutes), and on 2 cores a third of the CPU sat idle with one worker per CPU.
workers=${RAGWATCH_TEST_WORKERS:-$(($(nproc) + 1))}
run_pytest -m "not real_model" -n "$workers" --dist loadfile --durations=10 "$@"
suite=$?

wait "$real"
real_status=$?
echo "===================== real-model tests (ran alongside; $real_log) ====================="
cat "$real_log"
exit $((suite != 0 ? suite : real_status))
