"""Data contracts, in one place: the Trace read from production and the sampled partition.

Names here are part of the product (DESIGN.md § Data contracts); change them only with a
migration note.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SAMPLER_VERSION = "stratified-hash-1"
ANONYMIZER_VERSION = "rules-hmac-2"
"""Bumped whenever what the anonymizer replaces changes (2: clean technical text left alone, phone
and address families), so a partition says which rules wrote it."""


class Context(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_id: str
    text: str
    score: float | None = None


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Trace(BaseModel):
    """One production interaction, as the trace store holds it."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(min_length=1)
    ts: datetime
    question: str = Field(min_length=1)
    answer: str
    contexts: list[Context] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str | None = None
    app: str = "default"
    language: str = "und"
    user_feedback: Literal[-1, 0, 1] | None = None
    latency_ms: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("ts")
    @classmethod
    def _utc(cls, ts: datetime) -> datetime:
        from datetime import timezone

        return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


def _sampled_trace_schema():
    """Parquet schema of golden/traces/dt=YYYY-MM-DD. JSON-typed fields are JSON text."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("trace_id", pa.string(), nullable=False),
            pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("question", pa.string(), nullable=False),
            pa.field("answer", pa.string(), nullable=False),
            pa.field(
                "contexts",
                pa.list_(
                    pa.struct(
                        [("chunk_id", pa.string()), ("text", pa.string()), ("score", pa.float64())]
                    )
                ),
            ),
            pa.field(
                "tool_calls",
                pa.list_(pa.struct([("name", pa.string()), ("arguments", pa.string())])),
            ),
            pa.field("model", pa.string()),
            pa.field("app", pa.string(), nullable=False),
            pa.field("language", pa.string(), nullable=False),
            pa.field("user_feedback", pa.int8()),
            pa.field("latency_ms", pa.int64()),
            pa.field("metadata", pa.string()),
            pa.field("sample_rate", pa.float64(), nullable=False),
            pa.field("sampler_version", pa.string(), nullable=False),
            pa.field("anonymizer_version", pa.string(), nullable=False),
            pa.field("pii_counts", pa.string(), nullable=False),
        ]
    )


def _quarantine_schema():
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("trace_id", pa.string(), nullable=False),
            pa.field("reason", pa.string(), nullable=False),
            pa.field("field", pa.string()),
            pa.field("detail", pa.string(), nullable=False),
            pa.field("raw", pa.string(), nullable=False),
            pa.field("sampler_version", pa.string(), nullable=False),
            pa.field("anonymizer_version", pa.string(), nullable=False),
        ]
    )


QType = Literal["single_hop", "multi_hop", "adversarial", "tool"]
Source = Literal["corpus", "trace", "human"]
Split = Literal["dev", "test"]
Review = Literal["unreviewed", "pending", "accepted", "rejected"]


class GoldenItem(BaseModel):
    """One question of a golden dataset, with everything needed to score an answer to it."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    """Stable hash of (qtype, source_ref, question): the same item keeps its id across rebuilds."""
    question: str = Field(min_length=1)
    reference_answer: str
    gold_chunk_ids: list[str] = Field(default_factory=list)
    reference_contexts: list[str] = Field(default_factory=list)
    qtype: QType
    variant: str = "plain"
    """Finer stratum: plain, paraphrase, boundary, false_premise, not_in_corpus, production, ..."""
    language: str
    source: Source
    source_ref: str
    """Seed chunk ids, trace id or the human file's row the item came from."""
    expected_tool: str | None = None
    expected_args: dict[str, Any] | None = None
    split: Split = "test"
    review: Review = "unreviewed"
    generator_model: str
    corpus_version: str
    created_at: str
    """Logical date of the build that created the item (not wall-clock: rebuilds are
    reproducible)."""


def _golden_schema():
    """Parquet schema of golden/datasets/<name>/items.parquet (expected_args as JSON text)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("item_id", pa.string(), nullable=False),
            pa.field("question", pa.string(), nullable=False),
            pa.field("reference_answer", pa.string(), nullable=False),
            pa.field("gold_chunk_ids", pa.list_(pa.string())),
            pa.field("reference_contexts", pa.list_(pa.string())),
            pa.field("qtype", pa.string(), nullable=False),
            pa.field("variant", pa.string(), nullable=False),
            pa.field("language", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("source_ref", pa.string(), nullable=False),
            pa.field("expected_tool", pa.string()),
            pa.field("expected_args", pa.string()),
            pa.field("split", pa.string(), nullable=False),
            pa.field("review", pa.string(), nullable=False),
            pa.field("generator_model", pa.string(), nullable=False),
            pa.field("corpus_version", pa.string(), nullable=False),
            pa.field("created_at", pa.string(), nullable=False),
        ]
    )


ScoreStatus = Literal["ok", "failed", "skipped"]
Suite = Literal["offline", "online"]


class Score(BaseModel):
    """One metric of one item in one run. A failed score has value None and says why, never 0 or
    NaN."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    suite: Suite
    item_id: str
    """Golden item id (offline) or trace id (online)."""
    stratum: str
    """The item's finest stratum, e.g. `single_hop/es` offline or `docs-assistant/es` online."""
    metric: str
    """A name from METRICS below, or `recall@5`-style retrieval names."""
    value: float | None
    status: ScoreStatus
    error: str | None = None
    judge_model: str | None = None
    dataset_version: str

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        import math

        if value is not None and not math.isfinite(value):
            raise ValueError(
                "a score is a finite number or None (failed/skipped), never NaN or inf"
            )
        return value


METRICS = {
    "faithfulness": "supported claims / all claims of the answer (ragas Faithfulness)",
    "answer_relevancy": "mean cosine between the question and questions generated back from the answer (ragas)",
    "context_precision": "the operating context precision: context_precision_share under its gauge's name; < 0.60 means "
    "contradictory answers",
    "context_precision_share": "chunks given to the generator that the judge found useful for the reference answer / "
    "chunks given: the operating context precision, judged (pushed as context_precision); "
    "< 0.60 means contradictory answers",
    "context_precision_ranked": "ragas ContextPrecisionWithReference: rank-weighted average precision of the judge's "
    "relevance verdicts (not useful / given: that is context_precision_share)",
    "context_recall": "gold-answer claims attributable to the retrieved contexts / all gold-answer claims (ragas)",
    "noise_delta_f": "F(clean) − F(noisy) of the system under test, irrelevant chunks injected; > 0.15 means fragile",
    "noise_delta_f_reference": "F(clean) − F(noisy) of the reference generator answering both arms from production's "
    "contexts (online, no production endpoint); > 0.15 means fragile",
    "noise_delta_f_control": "F(clean) − F(clean again): the same arm answered twice, no noise; the spread of ΔF "
    "when noise changes nothing",
    "ragas_noise_sensitivity": "ragas NoiseSensitivity (relevant mode): incorrect claims / all claims of the answer",
    "tool_selection_accuracy": "turns where the agent chose the expected tool / turns that expected a tool",
    "tool_call_accuracy": "ragas ToolCallAccuracy: expected tool and arguments matched",
    "tool_call_validity": "tool-call arguments valid against the tool's JSON schema (online)",
    "mrr": "1 / rank of the first gold chunk, 0 if absent",
    "answer_correctness": "1 if the judge finds the answer right against the reference answer (states its key facts, "
    "contradicts none; abstains exactly when the reference does), else 0",
}
"""Judge and tool metrics by name (context_precision: the name a stored metric is pushed under,
push.PUSHED_AS); retrieval adds recall@k and precision@k for each k."""


def gauge_name(metric: str) -> str:
    """Prometheus gauge of a metric: `recall@5` -> `rag_recall_at_5_score`."""
    return "rag_" + metric.replace("@", "_at_").replace("-", "_") + "_score"


@dataclass(frozen=True)
class Chunk:
    """One passage of the indexed corpus, with an id that survives re-indexing (see
    corpus.chunking)."""

    chunk_id: str
    document: str
    section: str
    ordinal: int
    type: str
    """md | html | txt | pydoc"""
    date: str
    language: str
    text: str
    content_hash: str
    """Full sha256 hex of `text`."""

    def payload(self) -> dict:
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: dict) -> Chunk:
        return cls(**{name: payload[name] for name in cls.__dataclass_fields__})


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def corpus_version(chunks: Iterable[Chunk]) -> str:
    """Content identity of a whole corpus: equal iff the same ids hold the same text."""
    lines = sorted(f"{chunk.chunk_id}\t{chunk.content_hash}" for chunk in chunks)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


_ARROW_SCHEMAS = {
    "SAMPLED_TRACE_SCHEMA": _sampled_trace_schema,
    "QUARANTINE_SCHEMA": _quarantine_schema,
    "GOLDEN_SCHEMA": _golden_schema,
}
"""The Arrow schemas, built on first use: importing pyarrow costs a process ~80 MB of RSS, and the
sampler's anonymizing workers (which need `Trace`, never a schema) are started once per CPU."""


def __getattr__(name: str):
    if name in _ARROW_SCHEMAS:
        schema = globals()[name] = _ARROW_SCHEMAS[name]()
        return schema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
