#!/usr/bin/env bash
# The Phoenix server of tests/integration/test_trace_source_snippets.py, in a venv of its own outside the repo:
# Phoenix runs beside the app as a service, and its releases that install with ragwatch's pins fail on pandas 3.
# Pinned by tests/support/phoenix-server-constraints.txt; built once per machine (~1 min, ~0.9 GB), then quick.
# Prints the venv's python.
#
#   RAGWATCH_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/ragwatch)
#   PYTHON          the interpreter the venv is made from (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own venv sees nothing of the checkout: `make test` exports PYTHONPATH=<repo>, whose ragwatch.egg-info would
# make pip check the venv against ragwatch's requirements.
unset PYTHONPATH

PYTHON=${PYTHON:-.venv/bin/python}
CACHE=${RAGWATCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragwatch}
PINS=tests/support/phoenix-server-constraints.txt
VERSION=$(sed -n 's/^arize-phoenix==//p' "$PINS")
VENV=$CACHE/phoenix-server-$VERSION-$(sha256sum "$PINS" | cut -c1-12)

if [ ! -f "$VENV/.installed" ]; then
  mkdir -p "$CACHE"
  # Checkouts on one machine share the cache: one installer at a time.
  exec 9>"$CACHE/.phoenix-server.lock"
  flock 9
  if [ ! -f "$VENV/.installed" ]; then
    "$PYTHON" -m venv --clear "$VENV"
    "$VENV/bin/python" -m pip install -q -c "$PINS" "arize-phoenix==$VERSION"
    "$VENV/bin/python" -m pip check
    touch "$VENV/.installed"
  fi
fi
echo "$VENV/bin/python"
