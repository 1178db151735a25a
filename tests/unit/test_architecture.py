"""The house keeps its shape: arrows point down, one owner of workspace paths, light DAG files,
every prompt in the registry."""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import json
import os
import pkgutil
import re
import subprocess
import sys
import tokenize
import tomllib
from pathlib import Path

import pytest

import pipelines
from pipelines.cli.prompt_catalog import all_prompts
from pipelines.models.prompts import Prompt
from tests.conftest import ROOT

HEAVY = (
    "ragas",
    "qdrant_client",
    "great_expectations",
    "torch",
    "sentence_transformers",
    "pandas",
    "pyarrow",
    "openai",
    "datasets",
    "numpy",
)
"""What a DAG file must not import at parse time: the scheduler and dag-processor parse it often."""
WORKSPACE_SEGMENTS = re.compile(
    r"""["'](golden|runs|inbox|\.staging|reports|datasets|_manifest\.json|selected\.parquet|plan\.json|items\.parquet|run\.json)["']"""
)


def test_import_arrows_point_one_way():
    """import-linter's contracts in pyproject.toml: the product never imports the harness (the
    harness's own arrows: cli -> bench -> demo); in the product, entry points -> stages -> stores ->
    models -> core, stages side by side (evaluation reads golden sets through
    `pipelines.golden.dataset` only); inside the evaluation, runs -> outputs -> coverage ->
    statistics -> metrics -> online_selection -> results and allocation, none ignored; in models,
    the backends -> the HTTP client -> the base (no cycle between the base and a backend); in core,
    versioning and validation -> the rest (the workspace never imports its versioning)."""
    lint_imports = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "harness")]))
    lint = subprocess.run(
        [lint_imports, "--config", "pyproject.toml", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr[-2000:]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    assert f"{len(contracts)} kept, 0 broken" in lint.stdout


def test_the_code_keeps_its_formatting():
    """`ruff format` at pyproject.toml's line length, with nothing skipped: a diff here is a file to
    reformat."""
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    check = subprocess.run(
        [ruff, "format", "--check", "--diff", "."], capture_output=True, text=True, cwd=ROOT
    )
    assert check.returncode == 0, (
        f"run `.venv/bin/ruff format .`:\n{check.stdout[-4000:]}{check.stderr[-2000:]}"
    )
    skipped = subprocess.run(
        ["git", "grep", "-n", "-E", "# fmt: (skip|off)", "--", "*.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert skipped.stdout == "", f"formatting switched off:\n{skipped.stdout[:2000]}"


LONG_LINES_SHARE = 0.03
"""Lines past the formatter's width: only a string literal it cannot split may carry one there."""


def test_a_line_passes_the_width_only_for_a_long_literal():
    """ruff's E501 at pyproject.toml's line length, read per line: every line it flags goes past the
    width inside a string literal (a message, a pattern, a URL) that is not a docstring, and such
    lines stay rare."""
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    check = subprocess.run(
        [ruff, "check", "--select", "E501", "--output-format", "json", "--exit-zero", "."],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    flagged: dict[Path, set[int]] = {}
    for finding in json.loads(check.stdout):
        flagged.setdefault(Path(finding["filename"]), set()).add(finding["location"]["row"])
    width = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["line-length"]
    not_literal = [
        f"{path.relative_to(ROOT)}:{row}"
        for path, rows in flagged.items()
        for row in sorted(rows - literal_rows_past(path.read_text(), width))
    ]
    assert not not_literal, f"rewrap these comments, docstrings or code lines: {not_literal[:40]}"
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], capture_output=True, text=True, cwd=ROOT, check=True
    )
    lines = sum(len((ROOT / name).read_text().splitlines()) for name in listed.stdout.split())
    long_lines = sum(len(rows) for rows in flagged.values())
    assert long_lines <= LONG_LINES_SHARE * lines, (long_lines, lines)


def literal_rows_past(source: str, width: int) -> set[int]:
    """The rows a literal carries past `width`: without its longest string literal (not a docstring)
    the row would fit; or a Markdown table row of a docstring, which cannot wrap."""
    docstrings = {
        node.value.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    lines = source.splitlines()
    spans, opened = [], []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        name = tokenize.tok_name[token.type]
        if name == "FSTRING_START":  # Python 3.12 splits an f-string into tokens
            opened.append(token.start)
        elif name == "FSTRING_END":
            spans.append((opened.pop(), token.end))
        elif token.type == tokenize.STRING and not opened:
            spans.append((token.start, token.end))
    rows, longest = set(), {}
    for (first_row, first_col), (last_row, last_col) in spans:
        for row in range(first_row, last_row + 1):
            if first_row in docstrings:
                if lines[row - 1].lstrip().startswith("|"):
                    rows.add(row)
                continue
            start = first_col if row == first_row else 0
            end = last_col if row == last_row else len(lines[row - 1])
            longest[row] = max(longest.get(row, 0), end - start)
    return rows | {row for row, length in longest.items() if len(lines[row - 1]) - length <= width}


MAX_LINES = 800
"""A module a newcomer can read (about 700 lines at 120 columns, the same text at 100); past this,
split it along its seams (statistics/ was 1,511 lines)."""


TOO_LONG_ON_PURPOSE = {
    "tests/integration/test_stack.py": "test cases around one running stack: a second file would "
    "start a second one",
    "tests/unit/pipelines/evaluation/statistics/gate/test_rule.py": "test cases of one rule, each a "
    "scenario of the gate",
    "tests/support/one_traffic.py": "one traffic as each trace source exports it, the exporters side "
    "by side",
}


def test_no_module_runs_past_the_line_limit():
    too_long = {
        str(path.relative_to(ROOT)): lines
        for folder in ("pipelines", "harness", "dags", "plugins", "deploy", "docs", "tests")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert set(too_long) <= set(TOO_LONG_ON_PURPOSE), too_long


def test_only_the_workspace_joins_workspace_paths():
    offenders = []
    for path in sorted([*(ROOT / "pipelines").rglob("*.py"), *(ROOT / "harness").rglob("*.py")]):
        if path.name == "workspace.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if WORKSPACE_SEGMENTS.search(line) and "/" in line:
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], (
        "build workspace paths with pipelines.core.workspace.Workspace:\n" + "\n".join(offenders)
    )


@pytest.mark.airflow
@pytest.mark.parametrize("dag_file", sorted(p.name for p in (ROOT / "dags").glob("*.py")))
def test_a_dag_file_parses_quickly_without_heavy_imports(dag_file):
    code = (
        "import json, sys\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(ROOT / 'dags' / dag_file)!r})\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(json.dumps({'errors': {k: str(v) for k, v in bag.import_errors.items()}, 'heavy': heavy,\n"
        "                  'seconds': sum(s.duration.total_seconds() for s in bag.dagbag_stats)}))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    parsed = json.loads(result.stdout.strip().splitlines()[-1])
    assert parsed["errors"] == {}
    assert parsed["heavy"] == [], (
        f"{dag_file} imports {parsed['heavy']} at parse time: import inside the task"
    )
    # Measured 0.4-1.4 s on a quiet 2-core machine (2.7-10.9 s while DAG files imported ragas). The
    # heavy-import check above is what keeps it so; the bound here is Airflow's own: a file slower
    # than dagbag_import_timeout (30 s) is an import error, whatever else the machine is running.
    assert parsed["seconds"] < 30, parsed


DAG_PARTS = ROOT / "plugins" / "ragwatch_airflow" / "dag_parts.py"
"""The tasks every eval DAG shares (push): their imports are task imports too."""
TASK_IMPORT = re.compile(r"^\s+from (pipelines[\w.]*) import (\w+)", re.MULTILINE)


@pytest.mark.airflow
def test_the_processes_that_fork_tasks_preload_every_module_a_task_imports():
    """plugins/airflow_local_settings.py: the scheduler (LocalExecutor) and Celery workers import
    the task modules once, so forked tasks inherit them; the api-server, dag-processor and the CLI
    import none of them."""
    sys.path.insert(0, str(ROOT / "plugins"))
    from airflow_local_settings import _task_forking_role

    assert _task_forking_role(["airflow", "scheduler"])
    assert _task_forking_role(["airflow", "celery", "worker", "-q", "x"])
    for argv in (
        ["airflow", "api-server"],
        ["airflow", "dag-processor"],
        ["airflow", "dags", "test", "x"],
        ["pytest"],
    ):
        assert not _task_forking_role(argv), argv
    imported = sorted(
        {
            f"{module}.{name}"
            if (ROOT / module.replace(".", "/") / f"{name}.py").exists()
            else module
            for text in map(Path.read_text, [*(ROOT / "dags").glob("*.py"), DAG_PARTS])
            for module, name in TASK_IMPORT.findall(text)
        }
    )
    assert (
        "pipelines.evaluation.runs.judge_batch" in imported and "pipelines.traces.steps" in imported
    )
    code = (
        "import json, sys\n"
        "sys.argv = ['airflow', 'scheduler']\n"
        "import airflow_local_settings\n"
        f"print(json.dumps([m for m in {imported!r} if m not in sys.modules]))\n"
    )
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "plugins"), str(ROOT)]),
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [], (
        "add them to airflow_local_settings.TASK_MODULES"
    )
    assert (
        "ragwatch preloaded its task modules" in result.stderr
        and "could not preload" not in result.stderr
    )


def _prompt_classes() -> set[type]:
    for module in pkgutil.walk_packages(pipelines.__path__, "pipelines."):
        importlib.import_module(module.name)
    found, todo = set(), list(Prompt.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if not inspect.isabstract(cls) and cls.__module__.startswith("pipelines."):
            found.add(cls)
    return found


def test_every_prompt_ragwatch_sends_is_in_the_registry():
    registry = all_prompts()
    registered = {type(registry.get(name)) for name in registry.names}
    missing = {f"{c.__module__}.{c.__qualname__}" for c in _prompt_classes() - registered}
    assert missing == set(), (
        f"add these to pipelines.cli.prompt_catalog.all_prompts(): {sorted(missing)}"
    )
    assert {"golden_chunk_questions", "rag_answer", "ragas_NLIStatementOutput"} <= set(
        registry.names
    )
