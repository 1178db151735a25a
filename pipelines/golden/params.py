"""Golden-build parameters: the data workspace's params.yaml, else the project's default one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pipelines.settings import Settings

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REQUIRED = {"name", "seeds", "questions_per_seed", "multi_hop", "adversarial", "tool_triples", "from_traces",
            "trace_days", "dev_fraction", "review_fraction", "near_duplicate_cosine", "batch_size"}  # fmt: skip


def load_golden_params(settings: Settings, path: Path | None = None, **overrides: Any) -> dict[str, Any]:
    source = path or next(p for p in (settings.resolved_workspace / "params.yaml", PROJECT_ROOT / "params.yaml") if p.exists())
    params = {**(yaml.safe_load(source.read_text()) or {}).get("golden", {}), **{k: v for k, v in overrides.items() if v is not None}}
    missing = REQUIRED - params.keys()
    if missing:
        raise ValueError(f"{source}: `golden` is missing {sorted(missing)}; see the project's params.yaml")
    return params
