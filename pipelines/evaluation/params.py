"""What an offline eval run is asked to do: its parameters with their defaults and checks.

Light on purpose: the offline_eval DAG file imports it at parse time for its Param defaults.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ALL_JUDGE_METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "ragas_noise_sensitivity"]
GATED_METRICS = ["recall@5", "mrr", "faithfulness", "answer_relevancy", "context_precision", "context_recall"]
REFERENCE_TARGET = "reference-rag"


class EvalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    golden_name: str
    golden_version: str | None = None
    """e.g. "v3"; None means the latest release."""
    split: Literal["dev", "test"] = "test"
    k: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    """Cut-offs of recall@k and precision@k."""
    metrics: list[str] = Field(default_factory=lambda: list(ALL_JUDGE_METRICS))
    target_url: str | None = None
    """The team's RAG service (README § System under test); None runs the reference RAG."""
    target_name: str = REFERENCE_TARGET
    retrieval_k: int = Field(default=5, ge=1)
    retrieval_mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    prompt: str | None = None
    """The reference RAG's system prompt; None keeps the default."""
    noise_mode: Literal["hard", "random"] = "hard"
    noise_k: int = Field(default=2, ge=1)
    batch_size: int = Field(default=25, ge=1)
    fail_on_gate: bool = False
    limit: int | None = Field(default=None, ge=1)
    """Evaluate a stable subset of this many items."""


def eval_params(settings, **overrides) -> EvalParams:
    """Defaults, with every override that is not None; the golden set defaults to params.yaml's."""
    from pipelines.golden.dataset import default_golden_name

    given = {k: v for k, v in overrides.items() if v is not None}
    given.setdefault("golden_name", default_golden_name(settings))
    if "target_name" not in given and given.get("target_url"):
        given["target_name"] = given["target_url"]
    return EvalParams.model_validate(given)
