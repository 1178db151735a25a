"""Golden-build parameters: the data workspace's params.yaml, else the project's default one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from pipelines.core import inputs
from pipelines.core.settings import Settings
from pipelines.core.workspace import Workspace

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class GoldenParams(BaseModel):
    """The `golden:` section of params.yaml (see that file for what each knob does)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, AfterValidator(inputs.golden_name)]
    seeds: int = Field(ge=0)
    questions_per_seed: int = Field(ge=1, le=5)
    multi_hop: int = Field(ge=0)
    adversarial: int = Field(ge=0)
    tool_triples: int = Field(ge=0)
    from_traces: int = Field(ge=0)
    trace_days: int = Field(ge=0)
    dev_fraction: float = Field(ge=0, le=1)
    review_fraction: float = Field(gt=0, le=1)
    near_duplicate_cosine: float = Field(gt=0, le=1)
    batch_size: int = Field(ge=1)


def load_golden_params(
    settings: Settings, path: Path | None = None, **overrides: Any
) -> GoldenParams:
    """params.yaml's `golden` section with `overrides` (None values ignored) replacing its keys."""
    source = path or next(
        p
        for p in (Workspace.from_settings(settings).params_file, PROJECT_ROOT / "params.yaml")
        if p.exists()
    )
    values = {
        **(yaml.safe_load(source.read_text()) or {}).get("golden", {}),
        **{k: v for k, v in overrides.items() if v is not None},
    }
    try:
        return GoldenParams.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'golden'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise ValueError(
            f"golden parameters ({source} and overrides) are invalid: {problems}"
        ) from None
