"""What an eval run is asked to do (offline and online): its parameters with their defaults and
checks.

Light on purpose: the offline_eval DAG file imports it at parse time for its Param defaults.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from pipelines.core import inputs
from pipelines.core.redact import has_credentials, redact_text, redact_url

ALL_JUDGE_METRICS = [
    "faithfulness",
    "answer_relevancy",
    "context_precision_ranked",
    "context_precision_share",
    "context_recall",
    "ragas_noise_sensitivity",
]
REFERENCE_TARGET = "reference-rag"
DEFAULT_K = (1, 3, 5, 10)
TARGET_URL_PATTERN = r"^https?://[^\s/@?#]+(/[^\s@]*)?$"
"""An http(s) URL without user info (the DAG Param's JSON-schema pattern; `target_url` checks the
rest)."""


OFFLINE_RUN_ID_PATTERN = r"^offline/[0-9]{4}-[0-9]{2}-[0-9]{2}/[A-Za-z0-9][A-Za-z0-9_.:@+-]{0,127}$"
"""An offline run id, `offline/<logical date>/<target name>` (the DAG Params' JSON-schema
pattern)."""


def offline_run_id(value: str) -> str:
    """An offline run's id, as a baseline or reference: `offline/YYYY-MM-DD/<target name>`."""
    if not re.fullmatch(OFFLINE_RUN_ID_PATTERN, value):
        raise ValueError(
            f"run id {value[:80]!r} is not an offline run id: use offline/YYYY-MM-DD/<target name>, "
            "e.g. offline/2026-11-30/reference-rag"
        )
    inputs.day(value.split("/")[1])
    inputs.target_name(value.split("/", 2)[2])
    return value


def target_url(url: str, allowed_hosts: list[str] | None = None) -> str:
    """The target's URL: http(s), no credentials in it (they go in headers), on an allowed host."""
    if not re.fullmatch(TARGET_URL_PATTERN, url) or has_credentials(url):
        raise ValueError(
            f"target URL {redact_url(url)!r} is not allowed: use http(s)://host[:port]/path without a user, password or "
            "token in it; send credentials as headers (RAGWATCH_TARGET_HEADERS or the ragwatch_target connection)"
        )
    host = urlsplit(url).hostname or ""
    if allowed_hosts and host not in allowed_hosts:
        raise ValueError(
            f"target host {host!r} is not in RAGWATCH_TARGET_HOSTS_ALLOWED {allowed_hosts}"
        )
    return url


def target_name_for(text: str) -> str:
    """A readable target name from a URL (host, port, path) or an A/B arm's text, other characters
    as `_`."""
    if re.match(r"^https?://", text):
        parts = urlsplit(text)
        text = f"{parts.netloc.rpartition('@')[2]}{parts.path}".rstrip("/")
    else:
        text = redact_text(text)
    name = re.sub(r"\.{2,}", "_", re.sub(r"[^A-Za-z0-9_.:@+-]", "_", text)).lstrip("._:@+-")[:128]
    return inputs.target_name(name or "target")


JUDGE_METRIC_KEYS = {"context_precision_ranked": "context_precision"}
"""Reported name -> the judge's metric key, where they differ. ragas' ContextPrecisionWithReference
is a rank-weighted average precision of judged verdicts, not the operating "relevant chunks in the
top k / k": it is reported as `context_precision_ranked`. The same verdicts counted unweighted are
`context_precision_share` (the operating figure, judged; the diagnosis' band), and the id-based
precision@k counts gold ids."""
AMBIGUOUS_METRICS = {
    "context_precision": "context_precision is ambiguous: ask for context_precision_share (judged useful chunks / "
    "chunks given) or context_precision_ranked (ragas' rank-weighted judge metric); the "
    "id-based precision@k is always computed for every k",
}


class EvalParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    golden_name: Annotated[str, AfterValidator(inputs.golden_name)]
    golden_version: Annotated[str, AfterValidator(inputs.golden_version)] | None = None
    """e.g. "v3"; None means the latest release."""
    split: Literal["dev", "test"] = "test"
    k: Annotated[list[int], AfterValidator(inputs.cutoffs)] = Field(
        default_factory=lambda: list(DEFAULT_K)
    )
    """Cut-offs of recall@k and precision@k. The reference RAG retrieves to the largest (and hands
    the generator its top `retrieval_k`); a target that returned fewer distinct chunks than k is
    measured at k all the same, its missing ranks counting as not relevant (trec_eval,
    ir_measures)."""
    metrics: list[str] = Field(default_factory=lambda: list(ALL_JUDGE_METRICS))
    target_url: Annotated[str, AfterValidator(lambda url: target_url(url))] | None = None
    """The team's RAG service (docs/how-to/real-services.md, "Your own RAG service as the system
    under test"); None runs the reference RAG."""
    target_name: Annotated[str, AfterValidator(inputs.target_name)] = REFERENCE_TARGET
    baseline_run: Annotated[str, AfterValidator(lambda rid: offline_run_id(rid))] | None = None
    """The run the gate compares with (a run id such as `offline/2026-11-30/reference-rag`); None:
    the previous run of the same target (statistics/gate/run_gate.py)."""
    reference_run: Annotated[str, AfterValidator(lambda rid: offline_run_id(rid))] | None = None
    """The run the gate also compares with so slow drift fails; None, per metric: the first release
    (`ragwatch eval pin`) that measured it since the reference last moved (`eval pin --reference`),
    else the first accepted run that measured it, across golden refreshes
    (`ResultsStore.references`)."""
    retrieval_k: int = Field(default=5, ge=1)
    """Chunks the reference RAG hands its generator: the retrieval depth the context-precision
    band is read at (precision@retrieval_k)."""
    retrieval_mode: Literal["hybrid", "dense", "sparse"] = "hybrid"
    prompt: str | None = None
    """The reference RAG's system prompt; None keeps the default."""
    noise_mode: Literal["hard", "random"] = "hard"
    noise_k: int = Field(default=2, ge=1)
    batch_size: int = Field(default=25, ge=1)
    fail_on_gate: bool = False
    limit: int | None = Field(default=None, ge=1)
    """Evaluate a stable subset of this many items, stratified by question type
    (prepare.stratified_subset)."""
    judge_retest_share: float = Field(default=0.1, ge=0.0, le=1.0)
    """Share of the judged items judged twice to measure the judge's noise
    (RAGWATCH_JUDGE_RETEST_SHARE); 0: none."""

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, metrics: list[str]) -> list[str]:
        for metric in metrics:
            if metric in AMBIGUOUS_METRICS:
                raise ValueError(AMBIGUOUS_METRICS[metric])
            if metric not in ALL_JUDGE_METRICS:
                raise ValueError(
                    f"unknown judge metric {metric!r}; choose from {', '.join(ALL_JUDGE_METRICS)}"
                )
        return list(dict.fromkeys(metrics))


def judge_metric_key(metric: str) -> str:
    """The judge's name (judge.JUDGE_METRICS) of a reported judge metric."""
    return JUDGE_METRIC_KEYS.get(metric, metric)


def reported_metric(judge_key: str) -> str:
    """The reported name of a judge metric key."""
    return next((name for name, key in JUDGE_METRIC_KEYS.items() if key == judge_key), judge_key)


def eval_params(settings, **overrides) -> EvalParams:
    """Defaults, with every override that is not None; the golden set defaults to params.yaml's."""
    from pipelines.golden.dataset import default_golden_name

    given = {k: v for k, v in overrides.items() if v is not None}
    given.setdefault("golden_name", default_golden_name(settings))
    given.setdefault("judge_retest_share", settings.judge_retest_share)
    if given.get("target_url"):
        target_url(given["target_url"], settings.target_hosts_allowed)
        given.setdefault("target_name", target_name_for(given["target_url"]))
    return EvalParams.model_validate(given)


class OnlineParams(BaseModel):
    """What a daily online eval is asked to do; `online_params` fills the budget from the
    settings."""

    model_config = ConfigDict(extra="forbid")

    max_traces: int = Field(default=2_000, ge=1)
    """Traces judged at most (RAGWATCH_ONLINE_MAX_TRACES), stratified by app and language."""
    min_per_stratum: int = Field(default=30, ge=0)
    """Judged traces each stratum gets first (RAGWATCH_ONLINE_MIN_PER_STRATUM)."""
    noise_share: float = Field(default=0.25, ge=0.0, le=1.0)
    """Share of each stratum's judged traces that also get noise ΔF
    (RAGWATCH_ONLINE_NOISE_SHARE)."""
    target_half_width: float | None = Field(default=None, gt=0.0, lt=1.0)
    """Size each stratum for faithfulness' 95 % interval to be about ±this
    (RAGWATCH_ONLINE_TARGET_HALF_WIDTH), from the last runs' spread; `max_traces` still caps the
    total. None: the budget alone."""
    noise_mode: Literal["hard", "random"] = "hard"
    noise_k: int = Field(default=2, ge=1)
    batch_size: int = Field(default=100, ge=1)
    """Traces per judge batch (a mapped task): 3 requests each, about 5 more per noise trace."""
    judge_retest_share: float = Field(default=0.1, ge=0.0, le=1.0)
    """Share of the judged traces judged twice to measure the judge's noise
    (RAGWATCH_JUDGE_RETEST_SHARE); 0: none."""


def online_params(settings, **overrides) -> OnlineParams:
    """The settings' budget, with every override that is not None."""
    given = {
        "max_traces": settings.online_max_traces,
        "min_per_stratum": settings.online_min_per_stratum,
        "noise_share": settings.online_noise_share,
        "target_half_width": settings.online_target_half_width,
        "judge_retest_share": settings.judge_retest_share,
    }
    given.update({k: v for k, v in overrides.items() if v is not None})
    return OnlineParams.model_validate(given)
