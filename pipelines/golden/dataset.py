"""A published golden set as a Hugging Face `datasets.Dataset` or a ragas evaluation dataset."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pipelines.golden.store import ITEMS_FILE, GoldenPaths, read_items_parquet
from pipelines.records import GoldenItem
from pipelines.settings import Settings
from pipelines.versioning import dvc


def load_golden_items(settings: Settings, name: str, version: str | None = None) -> list[GoldenItem]:
    """The published items; with `version` (e.g. "v2"), that tag's data, fetched from DVC."""
    p = GoldenPaths(settings.resolved_workspace, name)
    if version is None:
        if not (p.published / ITEMS_FILE).exists():
            raise FileNotFoundError(f"golden set {name!r} is not published yet: run `ragwatch golden build` first")
        return read_items_parquet(p.published / ITEMS_FILE)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / name
        dvc("get", str(p.workspace), str(p.published_relative), "--rev", f"golden/{name}/{version}", "-o", str(target),
            cwd=p.workspace)  # fmt: skip
        return read_items_parquet(target / ITEMS_FILE)


def load_golden_dataset(settings: Settings, name: str, *, version: str | None = None, split: str | None = "test"):
    """One call from a published version to a `datasets.Dataset` (expected_args stays a JSON string)."""
    import json

    from datasets import Dataset

    rows = []
    for item in load_golden_items(settings, name, version):
        if split is None or item.split == split:
            row = item.model_dump(mode="json")
            row["expected_args"] = None if item.expected_args is None else json.dumps(item.expected_args, ensure_ascii=False)
            rows.append(row)
    return Dataset.from_list(rows)


def to_ragas_dataset(dataset):
    """ragas `EvaluationDataset` (user_input, reference, reference_contexts) from a golden Dataset."""
    from ragas import EvaluationDataset

    return EvaluationDataset.from_list([
        {"user_input": row["question"], "reference": row["reference_answer"], "reference_contexts": row["reference_contexts"]}
        for row in dataset
    ])  # fmt: skip
