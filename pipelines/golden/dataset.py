"""The golden dataset API: how a released golden set is read and written, and loaded for an eval.

Everything outside the golden stage reads a golden set through this module only: the items of a
release (latest or a tagged version, fetched from DVC), its version, and the same data as a Hugging
Face `datasets.Dataset` or a ragas `EvaluationDataset`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.core.records import GOLDEN_SCHEMA, GoldenItem
from pipelines.core.settings import Settings
from pipelines.core.workspace import GoldenPaths, StaleVersion, Workspace, release_remedy
from pipelines.golden.params import load_golden_params
from pipelines.stores.partitions import read_manifest


def default_golden_name(settings: Settings) -> str:
    """The golden set a run uses unless told otherwise (`golden.name` in params.yaml)."""
    return load_golden_params(settings).name


def write_items(path: Path, items: Sequence[GoldenItem]) -> None:
    """Items as parquet (GOLDEN_SCHEMA; expected_args as JSON text)."""
    rows = []
    for item in items:
        row = item.model_dump(mode="json")
        row["expected_args"] = (
            None
            if item.expected_args is None
            else json.dumps(item.expected_args, ensure_ascii=False, sort_keys=True)
        )
        rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=GOLDEN_SCHEMA), path, compression="zstd")


def read_items(path: Path) -> list[GoldenItem]:
    items = []
    for row in pq.read_table(path).to_pylist():
        row["expected_args"] = (
            None if row["expected_args"] is None else json.loads(row["expected_args"])
        )
        items.append(GoldenItem.model_validate(row))
    return items


def released_version(settings: Settings, name: str) -> str:
    """The version (`vN`) of the latest release of a golden set; StaleVersion if its `.dvc` file
    names other data, or its version was never tagged: a release that stopped after its
    promotion."""
    from pipelines.core.versioning import has_tag

    workspace = Workspace.from_settings(settings)
    paths = workspace.golden(name)
    if not paths.released_items.exists():
        raise FileNotFoundError(
            f"golden set {name!r} is not released yet: run `ragwatch golden build` first"
        )
    version = read_manifest(paths.released_manifest)["version"]
    if workspace.release_version(name) is not None and not has_tag(workspace, paths.tag(version)):
        raise StaleVersion(
            f"golden set {name!r} {version} was versioned but never tagged: {release_remedy(name)}"
        )
    return version


def load_golden_items(
    settings: Settings, name: str, version: str | None = None
) -> list[GoldenItem]:
    """The released items; with `version` (e.g. "v2"), that tag's data, fetched from DVC."""
    from pipelines.core.versioning import dvc

    workspace = Workspace.from_settings(settings)
    paths = workspace.golden(name)
    if version is None:
        if not paths.released_items.exists():
            raise FileNotFoundError(
                f"golden set {name!r} is not released yet: run `ragwatch golden build` first"
            )
        return read_items(paths.released_items)
    with tempfile.TemporaryDirectory() as tmp:
        fetched = GoldenPaths(Path(tmp), name).released
        dvc(
            "get",
            str(workspace.root),
            str(workspace.relative(paths.released)),
            "--rev",
            paths.tag(version),
            "-o",
            str(fetched),
            cwd=workspace.root,
        )
        return read_items(GoldenPaths(Path(tmp), name).released_items)


def load_golden_dataset(
    settings: Settings, name: str, *, version: str | None = None, split: str | None = "test"
):
    """One call from a released version to a `datasets.Dataset` (expected_args stays a JSON
    string)."""
    from datasets import Dataset

    rows = []
    for item in load_golden_items(settings, name, version):
        if split is None or item.split == split:
            row = item.model_dump(mode="json")
            row["expected_args"] = (
                None
                if item.expected_args is None
                else json.dumps(item.expected_args, ensure_ascii=False)
            )
            rows.append(row)
    return Dataset.from_list(rows)


def to_ragas_dataset(dataset):
    """ragas `EvaluationDataset` (user_input, reference, reference_contexts) from a golden
    Dataset."""
    from ragas import EvaluationDataset

    return EvaluationDataset.from_list(
        [
            {
                "user_input": row["question"],
                "reference": row["reference_answer"],
                "reference_contexts": row["reference_contexts"],
            }
            for row in dataset
        ]
    )
