# Two entry points, each sets itself up: `make demo` and `make test`; `make up` / `make down` run
# docker-compose.yml's stack on this machine without Docker (deploy/local_stack/).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ragwatch-installed
PYTEST_ARGS ?=

.PHONY: demo test up down install system-deps real-model constraints docs clean

demo: install
	scripts/demo.sh

# The real-model setup (scripts/real-model.sh) runs inside scripts/test.sh, overlapping the suite.
test: install
	scripts/test.sh $(PYTEST_ARGS)

# `make up EXECUTOR=celery WORKERS=2`: Redis and two Celery workers instead of the LocalExecutor
# (docs/how-to/several-machines.md); a later `make up` keeps the stack's executor, another one needs `make down` first.
up: install
	PYTHONPATH=$(CURDIR) $(BIN)/python -m deploy.local_stack up $(if $(EXECUTOR),--executor $(EXECUTOR)) $(if $(WORKERS),--workers $(WORKERS))

down: install
	PYTHONPATH=$(CURDIR) $(BIN)/python -m deploy.local_stack down

install: $(STAMP) system-deps

# The harness (harness/: benchmarks, the demo) is a distribution of its own, installed beside the product: its entry
# points add `ragwatch bench` and `ragwatch demo`.
$(STAMP): pyproject.toml harness/pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[airflow,bench,dev,docs]' -e ./harness
	$(BIN)/python -m pip check
	touch $@

system-deps:
	scripts/system-deps.sh

# The small real LLM of tests/integration/test_real_model.py (docs/how-to/real-model.md): the llama-cpp-python wheel, built
# once per machine into ~/.cache/ragwatch (only the first run pays), and the Gemma 3 270M GGUF.
real-model: $(STAMP)
	PYTHON=$(BIN)/python scripts/real-model.sh >/dev/null

# The documentation site (mkdocs.yml) into .ragwatch/site. --strict: a broken link, or a setting or command without
# its docstring or help, fails the build (the reference pages are generated from the code by docs/hooks/).
docs: $(STAMP)
	PYTHONPATH=$(CURDIR):$(CURDIR)/harness NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Re-resolve the pinned set after changing dependencies in pyproject.toml (then run make test).
constraints:
	rm -rf /tmp/ragwatch-resolve && $(PYTHON) -m venv /tmp/ragwatch-resolve
	/tmp/ragwatch-resolve/bin/pip install -q --upgrade pip && /tmp/ragwatch-resolve/bin/pip install -q '.[airflow,bench,dev,docs]' ./harness
	/tmp/ragwatch-resolve/bin/pip install -q --only-binary llama-cpp-python \
		--find-links "$$(PYTHON=/tmp/ragwatch-resolve/bin/python scripts/real-model.sh --wheel)" '.[real-model]'
	/tmp/ragwatch-resolve/bin/pip freeze --exclude ragwatch --exclude ragwatch-harness | grep -v '^-e' > constraints.txt

clean:
	rm -rf .ragwatch
