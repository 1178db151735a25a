"""One settings object for every entry point: CLI, DAG tasks, dvc stages and tests.

Values come from `RAGWATCH_*` environment variables (nested with `__`), then embedded defaults
that keep all state under `.ragwatch/` so a demo never touches tracked files.
"""

from __future__ import annotations

import os
import re
import secrets
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pipelines.core import inputs
from pipelines.core.language import DEFAULT_LANGUAGES, UNDETERMINED
from pipelines.core.redact import redact_url
from pipelines.core.user_question import QuestionRule

ENV_PREFIX = "RAGWATCH_"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class TraceColumns(BaseModel):
    """Column names of the production trace table; the defaults are the Trace contract."""

    # Field docstrings are the configuration reference (docs/hooks/settings_reference.py reads
    # them).
    model_config = ConfigDict(use_attribute_docstrings=True)

    trace_id: str = "trace_id"
    """Unique id of the trace; the sampling hash is computed from it."""
    ts: str = "ts"
    """When the trace happened (UTC); the day's interval is selected on it."""
    question: str = "question"
    """The user's question."""
    answer: str = "answer"
    """The assistant's answer."""
    contexts: str = "contexts"
    """Retrieved contexts, a JSON list of `{chunk_id, text, score}` in rank order."""
    tool_calls: str = "tool_calls"
    """Agent tool calls, a JSON list of `{name, arguments}`."""
    model: str = "model"
    """The model that answered."""
    app: str = "app"
    """The application the trace came from (a stratum)."""
    language: str = "language"
    """The question's language (a stratum)."""
    user_feedback: str = "user_feedback"
    """The user's feedback: -1, 0, 1 or null (a stratum)."""
    latency_ms: str = "latency_ms"
    """The answer's latency in milliseconds."""
    metadata: str = "metadata"
    """Free-form JSON metadata (anonymized like every text field)."""

    @field_validator("*")
    @classmethod
    def _plain_identifier(cls, name: str) -> str:
        if not IDENTIFIER.match(name):
            raise ValueError(f"column name {name!r} is not a plain SQL identifier")
        return name


class ModelEndpoint(BaseModel):
    """One OpenAI-compatible endpoint (vLLM serves `/v1/chat/completions` and `/v1/embeddings`)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    base_url: str = Field(default="http://localhost:8000/v1", repr=False)
    """The server's OpenAI-compatible base URL (ending in `/v1`)."""
    model: str
    """The model name the server serves; each role's default is in `DEFAULT_MODELS`."""
    api_key: SecretStr = SecretStr("EMPTY")
    """Sent as the bearer token; vLLM without `--api-key` accepts any."""
    max_concurrency: int = Field(default=8, ge=1)
    """Requests in flight at once; match the server's batch capacity."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Seconds one request may take before it is retried."""
    max_retries: int = Field(default=4, ge=0)
    """Retries, with backoff, after a 429, a 5xx or a timeout."""

    def __repr_args__(self):
        yield "base_url", redact_url(self.base_url)
        yield from super().__repr_args__()


SELECTION_TIMEOUT_S = 10_800.0
"""The selection's default statement timeout, 3 h: a 100 M-row day on a 2-core server, with a margin
(docs/explanation/sampling.md has the arithmetic)."""

DEFAULT_MODELS = {
    "generator": "Qwen/Qwen2.5-7B-Instruct",
    "judge": "meta-llama/Llama-3.1-8B-Instruct",
    "embeddings": "BAAI/bge-m3",
}


class Settings(BaseSettings):
    # Field docstrings are the configuration reference (docs/hooks/settings_reference.py reads them,
    # and tests/unit/test_docs.py fails on a field without one).
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="ignore",
        use_attribute_docstrings=True,
    )

    home: Path = Path(".ragwatch")
    """Root of all embedded state (SQLite files, Airflow home, DVC remote, keys)."""

    trace_store_url: str | None = None
    """SQLAlchemy URL of the production trace store; SQLite under `home` when unset."""
    trace_table: str = "traces"
    """The table of the trace store that holds the traces (a plain SQL identifier, in
    `trace_tables_allowed`)."""
    trace_tables_allowed: list[str] = Field(default_factory=lambda: ["traces"])
    """The only tables ragwatch may read traces from, so a mistyped `trace_table` cannot point it at
    another table."""
    trace_columns: TraceColumns = Field(default_factory=TraceColumns)
    """Column names of your trace table, where they differ from the Trace contract's (e.g.
    `RAGWATCH_TRACE_COLUMNS__QUESTION=user_query`)."""
    trace_batch_size: int = Field(default=500, ge=1, le=100_000)
    """Traces read from the trace store (or a file source) at a time: memory follows it, not the
    day."""
    trace_source: Literal["sql", "otlp", "openinference", "langfuse-export"] = "sql"
    """Where production traces are read: the SQL trace store, or span exports
    (docs/how-to/trace-sources/, one page per source)."""
    trace_source_path: str | None = None
    """The export a file source reads: a file or a folder (`otlp`, `openinference`), a folder or an
    `s3://` prefix (`langfuse-export`)."""
    question_attribute: str | None = None
    """A span attribute that holds the user's question in your traces (read before the retrieval
    query, the root's input and the last user message); for span sources."""
    question_pattern: str | None = None
    """A regular expression whose group `question` (else its first group) extracts the user's
    question from the prompt your app sends (e.g. `Question:\\s*(?P<question>.+?)\\s*Answer:`);
    every source."""
    otlp_endpoint: str | None = None
    """OTLP/HTTP endpoint (e.g. http://otel-collector:4318) each online score is sent to as a
    gen_ai.evaluation.result event on the span it judged (not-applicable scores are not sent);
    unset, none is sent."""
    statement_timeout_s: int = Field(default=60, ge=1)
    """PostgreSQL statement timeout of every trace-store query but the day's selection (reads by id
    are short)."""
    selection_statement_timeout_s: float = Field(default=SELECTION_TIMEOUT_S, gt=0)
    """Statement timeout of the day's selection, which counts and ranks every row of the day: it
    grows with the day (docs/explanation/sampling.md has the arithmetic for 100 M rows)."""

    workspace: Path | None = None
    """Data workspace: a git + DVC repository holding `golden/`; under `home` when unset."""
    dvc_remote: str | None = None
    """DVC remote URL (local path, s3://...); a directory under `home` when unset. Committed in the
    workspace's .dvc/config, so never with credentials: S3's come from the AWS_* environment
    variables."""

    sample_rate: float = Field(default=0.05, gt=0.0, le=1.0)
    """Share of a day's traces the sampling keeps, per stratum; a higher rate selects a superset."""
    strata: list[str] = Field(default_factory=lambda: ["app", "language", "user_feedback"])
    """Trace columns the sampling stratifies on."""
    languages: list[str] = Field(default_factory=lambda: list(DEFAULT_LANGUAGES), min_length=1)
    """Languages a question or passage is told apart in (ISO 639-1 codes, e.g.
    `["es","ca","en","pt","fr","de", "it"]`; pipelines/core/language.py): text in none of them, or
    too short to tell, is `und`. Add each language your users write in: an Italian question is
    otherwise `und`, or filed under the nearest language listed."""
    min_per_stratum: int = Field(default=2, ge=0)
    """Fewest traces each stratum keeps (all it has when fewer), so small strata are represented."""
    max_field_chars: int = Field(default=200_000, ge=1_000)
    """Longer text fields send their trace to quarantine (multi-MB answers are logging bugs)."""
    sample_workers: int = Field(default=0, ge=0, le=256)
    """Processes that anonymize a day's sample in each shard; 0 = one per CPU, 1 = the task's own
    process only."""
    sample_shards: int = Field(default=1, ge=1, le=256)
    """Mapped tasks that anonymize and write a day's sample, each a contiguous range of its parts
    (at most one per part). They change which task writes a part, never its bytes."""
    sample_part_rows: int = Field(default=50_000, ge=1, le=1_000_000)
    """Selected traces per part file of a sampled partition (the last part holds the rest). It sets
    the published layout, hence the DVC hash: change it and every day you resample gets new
    files."""

    anonymizer_key: SecretStr | None = None
    """HMAC key for pseudonyms; generated once under `home` when unset."""

    # Models. "offline" is the deterministic backend (labelled as such in every output);
    # "openai" is any OpenAI-compatible server, e.g. vLLM.
    llm_backend: Literal["offline", "openai"] = "offline"
    """"offline": the deterministic stand-in `ragwatch-offline-deterministic`, named in every output
    it produces; "openai": the `generator` and `judge` endpoints (any OpenAI-compatible server, e.g.
    vLLM)."""
    generator: ModelEndpoint = Field(
        default_factory=lambda: ModelEndpoint(model=DEFAULT_MODELS["generator"])
    )
    """The model that writes golden questions and reference answers, and answers as the reference
    RAG."""
    judge: ModelEndpoint = Field(
        default_factory=lambda: ModelEndpoint(model=DEFAULT_MODELS["judge"])
    )
    """The model that filters golden items and judges the metrics; the same model as the generator
    logs a self-preference warning."""
    llm_cache: bool = True
    """Content-addressed cache of model calls, so reruns and backfills cost no calls: SQLite under
    `home`, or `llm_cache_url`."""
    llm_cache_url: str | None = None
    """SQLAlchemy URL of a PostgreSQL database holding the LLM cache (table `ragwatch_llm_cache`)
    that every worker shares: a batch retried on another machine sends no request again. Unset, each
    machine keeps its own under `home`."""
    llm_budget_tokens: int | None = Field(default=None, ge=0)
    """Prompt + completion tokens one eval run (or golden build) may spend; unset, no cap. Once
    spent, no request is sent and each score that needed one is `skipped` with the reason "budget"
    (models/budget.py, evaluation/runs/budget.py say how it is counted and shared between
    batches)."""
    judge_implementation: Literal["ragwatch", "ragas"] = "ragwatch"
    """Who asks the judge: ragwatch's consolidated prompts (3 requests per item for the four main
    metrics), or ragas' own metrics, one request per ragas call (the reference implementation). Same
    definitions."""

    embeddings_backend: Literal["local", "openai"] = "local"
    """"local": all-MiniLM-L6-v2, shipped on PyPI and run in process; "openai": the `embeddings`
    endpoint."""
    embeddings: ModelEndpoint = Field(
        default_factory=lambda: ModelEndpoint(model=DEFAULT_MODELS["embeddings"])
    )
    """Used when embeddings_backend is "openai"; "local" is the all-MiniLM-L6-v2 model shipped on
    PyPI."""

    qdrant_url: str | None = None
    """Qdrant server URL; local mode under `home` when unset."""
    qdrant_api_key: SecretStr | None = None
    """API key of the Qdrant server at `qdrant_url`, when it asks for one."""
    qdrant_path: Path | None = None
    """Qdrant local mode's folder, when qdrant_url is unset; under `home` when unset. Workers on one
    machine with homes of their own share the index by pointing this at one folder; workers on
    several machines need a server."""
    corpus_collection: str = "ragwatch_corpus"
    """The Qdrant collection that holds the corpus index."""
    qdrant_local_lock_wait_s: float = Field(default=600.0, ge=0)
    """Local mode allows one process per path: how long a task waits for another to close it."""

    results_url: str | None = None
    """SQLAlchemy URL of the eval results DB (runs + scores); SQLite under `home` when unset."""
    online_target_url: str | None = None
    """The production RAG service (docs/how-to/real-services.md, the system under test). When set,
    the online eval's noise arms call it (metric `noise_delta_f`); unset, the reference generator
    answers them (`noise_delta_f_reference`)."""
    online_max_traces: int = Field(default=2_000, ge=1)
    """Traces the daily online eval judges at most (of the day's sample), stratified by app and
    language (online_selection.py). Cost grows with this, not with the day's traffic."""
    online_min_per_stratum: int = Field(default=30, ge=0)
    """Judged traces each app/language stratum gets first (all it has when fewer), before the rest
    of the budget goes in proportion: at 30, a faithfulness mean's 95 % interval is about ±0.09 for
    a typical spread (sd 0.25), tight enough to tell the operating bands apart, and 3× the
    diagnosis' `diagnosis_min_n`."""
    online_noise_share: float = Field(default=0.25, ge=0.0, le=1.0)
    """Share of the judged traces (per stratum, at least one) that also get noise sensitivity. A
    trace's clean scores cost 3 requests (faithfulness 2, answer relevancy 1), its noise ΔF about 5
    more (the clean, noisy and control arms answered again, and judged): at 0.25 a judged trace
    costs about 4.3 requests instead of 8, and ΔF still rests on 500 traces a day at the default
    budget."""
    online_target_half_width: float | None = Field(default=None, gt=0.0, lt=1.0)
    """When set (e.g. 0.03), each stratum is judged on as many traces as its faithfulness interval
    needs to be about ±this wide, from the spread of the last online runs; `online_max_traces` still
    caps the day."""
    coverage_max_questions: int = Field(default=5_000, ge=1)
    """The day's traces whose questions the online eval's golden-coverage step reads at most,
    stratified by app/language like the judged budget (pipelines/evaluation/coverage); repeats are
    folded into distinct questions before embedding. The local model embeds ~70 short questions a
    second on 2 cores, so ~70 s a day at most (plus the golden set's passages and user questions),
    whatever the day's size."""
    coverage_threshold: float | None = Field(default=None, gt=-1.0, le=1.0)
    """Question-to-passage cosine at or above which a day's question counts as covered by its
    nearest golden reference passage. Unset: calibrated on the golden set's user questions (items
    from traces or imported by people, never its generated ones; coverage/threshold.py), and
    coverage fails with the reason ("uncalibrated") when there are fewer than 10 or the model does
    not separate them (ROC AUC < 0.7). Set: used as is, and the report, CLI and gauge say it is this
    setting, not a calibrated value."""
    coverage_min_cluster_size: int = Field(default=5, ge=2)
    """Fewest distinct uncovered questions of a day that make a topic (coverage/clusters.py; a
    question asked many times counts once); smaller groups are one-offs."""
    coverage_inbox_topics: int = Field(default=5, ge=0)
    """Largest uncovered topics queued in the review inbox each day (three questions each); the next
    golden build's trace questions start from them."""
    gate_min_pairs: int = Field(default=10, ge=2)
    """Fewest items scored ok in both runs for the regression gate to decide on a metric."""
    diagnosis_min_n: int = Field(default=10, ge=1)
    """Fewest ok scores for the diagnosis to state a band for a metric in a stratum."""
    diagnosis_correction: Literal["benjamini-hochberg", "none"] = "benjamini-hochberg"
    """How the diagnosis corrects its band claims for their number: Benjamini–Hochberg bounds the
    share of false claims a report makes; "none" states each claim its own printed 95 % interval
    supports, which finds a stratum 15 points worse more often (62–63 % of runs against 46–50 % at
    30 items) but lets false claims grow with the number of strata near a band's edge
    (statistics/diagnose.py, `ragwatch bench diagnose`)."""
    judge_audit_per_day: int = Field(default=20, ge=0)
    """Judged items each eval run queues for people to label yes/no (inbox/judge-audit-*.csv),
    spread over the (metric, judge verdict) strata of the metrics with a 0/1 form; 0 queues none."""
    judge_audit_half_width: float = Field(default=0.05, gt=0.0, lt=1.0)
    """The half-width of the corrected (judge-error-rate) interval the report counts the labels
    needed for."""
    judge_retest_share: float = Field(default=0.1, ge=0.0, le=1.0)
    """Share of the judged items judged a second time, by requests that bypass the LLM cache (with a
    distinct seed where the judge samples), to measure the judge's own noise
    (statistics/judge_noise.py); 0 retests none. Which items: those whose hash of (run, item) falls
    in the lowest `share` of the hash space, so a rerun retests the same ones. Costs about `share` ×
    the judge's requests."""
    pushgateway_url: str | None = None
    """Prometheus Pushgateway, e.g. `http://pushgateway:9091`; a textfile under `home` when
    unset."""
    pushgateway_job: str = "ragwatch"
    """The `job` label of every pushed group (the alert rules select `job="ragwatch"`)."""
    prometheus_url: str | None = None
    """The Prometheus that scrapes the Pushgateway, e.g. `http://prometheus:9090`: the demo reads
    the alerts it evaluates from its API; unset, no alert is read."""

    target_headers: dict[str, SecretStr] = Field(default_factory=dict)
    """HTTP headers sent to the system under test (e.g. {"Authorization": "Bearer …"}): credentials
    never go in its URL. The Airflow connection `ragwatch_target` overrides them inside tasks."""
    target_hosts_allowed: list[str] = Field(default_factory=list)
    """When set, the only hosts a target URL (from a DAG param or the CLI) may name; empty allows
    any."""

    airflow_api_url: str = "http://localhost:8080"
    """Airflow's REST API, where `ragwatch corpus refresh --notify` posts the `ragwatch_corpus`
    asset event."""
    airflow_username: str | None = None
    """The Airflow user whose token posts the asset event; unset, a token is asked for without
    credentials (which only Airflow's simple auth manager with every user an admin hands out)."""
    airflow_password: SecretStr | None = None
    """That user's password."""

    @field_validator("generator", "judge", "embeddings", mode="before")
    @classmethod
    def _role_defaults(cls, value, info):
        # Setting one field of a role from the environment (RAGWATCH_JUDGE__BASE_URL) keeps the
        # role's default model instead of failing for want of RAGWATCH_JUDGE__MODEL.
        if isinstance(value, dict) and "model" not in value:
            return {**value, "model": DEFAULT_MODELS[info.field_name]}
        return value

    @field_validator("question_pattern")
    @classmethod
    def _pattern_with_group(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(
                f"RAGWATCH_QUESTION_PATTERN is not a regular expression: {exc}"
            ) from exc
        if not compiled.groups:
            raise ValueError(
                "RAGWATCH_QUESTION_PATTERN needs a group, (?P<question>...), around the question"
            )
        return pattern

    @property
    def question_rule(self) -> QuestionRule:
        return QuestionRule.of(self.question_attribute, self.question_pattern)

    @field_validator("trace_table")
    @classmethod
    def _table_identifier(cls, name: str) -> str:
        if not IDENTIFIER.match(name):
            raise ValueError(f"table name {name!r} is not a plain SQL identifier")
        return name

    @field_validator("dvc_remote")
    @classmethod
    def _remote_without_secrets(cls, url: str | None) -> str | None:
        if url is not None and redact_url(url) != url:
            raise ValueError(
                "the DVC remote's URL carries a password or token, which DVC would commit to the data workspace's "
                "git (.dvc/config): give it none and pass credentials through the environment (AWS_ACCESS_KEY_ID, "
                "AWS_SECRET_ACCESS_KEY for S3; docs/how-to/s3.md)"
            )
        return url

    @field_validator("languages")
    @classmethod
    def _language_codes(cls, codes: list[str]) -> list[str]:
        codes = list(dict.fromkeys(code.strip().lower() for code in codes))
        wrong = [
            code for code in codes if not re.fullmatch(r"[a-z]{2,3}", code) or code == UNDETERMINED
        ]
        if wrong:
            raise ValueError(
                f"{wrong} are not ISO 639 language codes of a language (`und` is what none gives)"
            )
        return codes

    @field_validator("strata")
    @classmethod
    def _known_strata(cls, names: list[str]) -> list[str]:
        return inputs.strata(names)

    def __repr_args__(self):
        # URLs may carry a password or a token: a repr (in a log, a traceback) shows them redacted.
        for name, value in super().__repr_args__():
            yield (
                name,
                redact_url(value) if name in _URL_FIELDS and isinstance(value, str) else value,
            )

    @property
    def resolved_trace_store_url(self) -> str:
        return self.trace_store_url or f"sqlite:///{(self.home / 'traces.db').resolve()}"

    @property
    def resolved_qdrant_path(self) -> Path:
        return (self.qdrant_path or self.home / "qdrant").resolve()

    @property
    def resolved_cache_dir(self) -> Path:
        return (self.home / "cache").resolve()

    @property
    def resolved_workspace(self) -> Path:
        return (self.workspace or self.home / "workspace").resolve()

    @property
    def resolved_results_url(self) -> str:
        return self.results_url or f"sqlite:///{(self.home / 'results.db').resolve()}"

    @property
    def resolved_dvc_remote(self) -> str:
        return self.dvc_remote or str((self.home / "dvc-remote").resolve())

    @cached_property
    def pseudonym_key(self) -> bytes:
        if self.anonymizer_key is not None:
            return self.anonymizer_key.get_secret_value().encode()
        return _local_key(self.home / "anonymizer.key")


def _local_key(path: Path) -> bytes:
    """A per-installation random key, created once with owner-only permissions."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        candidate = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
        try:
            os.link(
                candidate, path
            )  # atomic and exclusive: the first task to finish wins, others read its key
        except FileExistsError:
            pass
        finally:
            candidate.unlink()
    return path.read_text().strip().encode()


_URL_FIELDS = (
    "trace_store_url",
    "results_url",
    "llm_cache_url",
    "qdrant_url",
    "pushgateway_url",
    "airflow_api_url",
    "dvc_remote",
)


class SettingsError(ValueError):
    """The configuration is invalid; one line per problem, each naming the variable to set."""


def load_settings(**overrides) -> Settings:
    """The settings from the environment (and `overrides`), or a SettingsError that says what to
    fix."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(
            "\n".join(_problem(error) for error in exc.errors(include_url=False))
        ) from None


def _problem(error: dict) -> str:
    # Values are left out: a misplaced secret must not reach a log through its error message.
    variable = ENV_PREFIX + "__".join(str(part) for part in error["loc"]).upper()
    return f"{variable}: {error['msg']}"
