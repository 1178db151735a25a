"""What the CLI prints, as a person reads it: tables at 80 and 100 columns, and plain text into a
file."""

from __future__ import annotations

import re
import subprocess
import sys
from io import StringIO

import pytest
from rich.console import Console

from pipelines.cli.render.tables import ReadableTable
from tests.conftest import ROOT

METRICS = [
    "answer_correctness",
    "context_precision_share",
    "faithfulness",
    "noise_sensitivity_relevant",
    "tool_call_validity",
    "recall@5",
]
BOX = set("─━│┃┏┓┗┛╭╮╰╯┡┩├┤┼╇")


def cost_table() -> ReadableTable:
    """The run-cost table's shape: three name columns and six numbers, wider than 80 columns."""
    table = ReadableTable(
        title="cost of this run: 1,234 requests for 60 items (12 from the LLM cache)"
    )
    for column in ("stage", "metric", "model"):
        table.add_column(column, "name")
    for column in (
        "requests",
        "per item",
        "cache hits",
        "prompt tokens",
        "completion tokens",
        "LLM-s",
    ):
        table.add_column(column)
    for i, metric in enumerate(METRICS):
        table.add_row(
            "judge",
            metric,
            "Qwen/Qwen2.5-7B-Instruct",
            f"{1000 + i:,}",
            "16.70",
            "12",
            "1,234,567",
            "234,567",
            "123.4",
        )
    return table


def score_table() -> ReadableTable:
    table = ReadableTable(title="offline eval 2026-12-05 — reference-rag on v3 (60 items)")
    table.add_column("metric", "name")
    for column in ("n", "failed", "mean", "95 % CI"):
        table.add_column(column)
    table.add_column("interval", "text")
    for metric in METRICS:
        table.add_row(
            metric, "60", "0", "0.812", "[0.761, 0.858]", "BCa bootstrap, 10,000 resamples"
        )
    return table


def printed(renderable, width: int, terminal: bool) -> str:
    out = StringIO()
    Console(
        file=out,
        width=width,
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        legacy_windows=False,
    ).print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("make", [cost_table, score_table])
def test_a_table_keeps_every_metric_name_whole_and_fits_the_terminal(make, width):
    text = printed(make(), width, terminal=True)
    stripped = re.sub(r"\x1b\[[0-9;]*m", "", text)
    lines = stripped.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    for metric in METRICS:
        assert any(metric in line for line in lines), (metric, stripped)
    assert "…" not in stripped


def test_the_score_table_stays_a_grid_at_80_columns_and_the_cost_table_turns_vertical():
    scores = printed(score_table(), 80, terminal=True)
    assert "─" in scores  # the header rule of a grid
    cost = printed(cost_table(), 80, terminal=True)
    assert (
        "─" not in cost and "  requests: 1,000 · per item: 16.70" in cost
    )  # a block per row, `column: value`
    blocks = [line.strip() for line in cost.splitlines() if line.startswith("  ")]
    assert blocks and all(
        ": " in pair for line in blocks for pair in line.split(" · ")
    )  # no pair split over lines


@pytest.mark.parametrize("make", [cost_table, score_table])
def test_into_a_file_a_table_is_plain_text(make, tmp_path):
    log = tmp_path / "demo.log"
    with log.open("w", encoding="utf-8") as file:
        Console(file=file, width=200).print(
            make()
        )  # a file is not a terminal: Rich decides, as in `make demo`
    text = log.read_text(encoding="utf-8")
    assert "\x1b" not in text and not BOX & set(text)
    assert all(metric in text for metric in METRICS)


def test_importing_the_cli_loads_no_data_library():
    """`ragwatch --help` answers at once: the commands import pandas, SQLAlchemy and ragas only when
    they run."""
    heavy = (
        "pandas",
        "pyarrow",
        "numpy",
        "sqlalchemy",
        "ragas",
        "torch",
        "qdrant_client",
        "great_expectations",
    )
    code = (
        "import sys, pipelines.cli; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout.split()
    )
    assert "typer" in loaded and not loaded & set(heavy), loaded & set(heavy)
