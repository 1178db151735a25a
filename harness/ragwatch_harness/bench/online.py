"""The daily online eval on a day of N sampled traces, against the model simulator: cost, time,
memory.

A sampled partition of N realistic rows is published in a scratch workspace (`sampled_day`), the
demo corpus is indexed in local Qdrant, and the online eval runs once as an Airflow task would: in
a fresh process, judge and generator being the simulator (`ragwatch simulate-llm` in a process of
its own, fixed latency per request and fixed capacity, as in `bench eval`), embeddings local. Then
it runs once more on the same LLM cache, which should send no request at all.

What it reports:
- the rows of the day per stratum, the traces judged per stratum and the traces given noise ΔF;
- the requests the run recorded per stage (its usage files, `pipelines.evaluation.runs.cost`), their
  sum and per model against what the simulator served (`/admin/stats`): equal, exactly; per judged
  trace per stage; against what the eval's code sends per trace (`JUDGE_PER_JUDGED_TRACE`,
  `GENERATOR_PER_NOISE_TRACE`, `NOISE_JUDGE_PER_TRACE_MAX`: the judge's noise part is a bound), and
  against the distinct requests the fresh LLM cache holds after the run: equal means none was sent
  twice or retried;
- the eval's wall time against the ideal requests × latency ÷ capacity (every slot of the server
  busy all the time), efficiency = ideal ÷ wall;
- peak RSS of the task process (getrusage) and of the task with its workers (sampled every 0.2 s,
  `bench.sample`), for the build of the day too.
"""

from __future__ import annotations

import io
import queue
import resource
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pipelines.core.settings import ModelEndpoint, Settings
from pipelines.core.workspace import Workspace
from pipelines.evaluation.results.run import RunCost
from pipelines.models.cache import LLMCache
from pipelines.models.simulator import SimulatorKnobs, served_stats
from pipelines.stores.partitions import read_parts
from ragwatch_harness.bench.eval import _ideal, _served, simulator_process
from ragwatch_harness.bench.sample import _TreeRss, in_spawned_process
from ragwatch_harness.bench.sampled_day import (
    DAY,
    POOL_SIZE,
    cited_chunks,
    index_demo_corpus,
    sampled_pool,
    write_sampled_day,
)

JUDGE_MODEL = "sim-judge"
GENERATOR_MODEL = "sim-generator"
DEFAULT_LATENCY_S = 1.0
DEFAULT_CAPACITY = 16
"""A judge on a GPU server: about a second per request of ~1,500 prompt tokens, 16 at once. Faster
knobs ask more of this machine's 2 cores than of the eval: with the client and the simulator on
them, a request costs ~25 ms of CPU between the two (100 traces with no latency: 17 s), so at 0.2 s
and 16 (80 requests/s) the CPU, not the server, would set the pace."""
JUDGE_PER_JUDGED_TRACE = 3
"""Judge requests per judged trace (faithfulness and answer relevancy through ragwatch's judge,
`judge.py`): the claim extraction, the claim verification, and the relevancy questions back (n = 3
in one request). Every row of the bench's day has its own question and answer, so none of them is
shared with another trace."""
CLAIMS_PER_TRACE = 2
"""Of those, the claim requests: a trace whose answer abstains has its faithfulness skipped without
them."""
GENERATOR_PER_NOISE_TRACE = 3
"""Generator requests per trace given noise ΔF (`online.py`, `noise.py`): the three arms answered
from the trace's question and contexts, the clean contexts (sample 0), the noisy ones and the clean
ones again (the control, sample 1); 2 when no chunk of the pool is eligible as noise. The trace's
logged answer is not an arm."""
NOISE_JUDGE_PER_TRACE_MAX = 6
"""Judge requests per noise trace, at most: each arm's answer judged for faithfulness (claim
extraction + verification). Fewer when an arm abstains (nothing to judge; the other arms are then
not judged either when it is the clean one) or repeats another arm's answer (its claims and verdicts
are reused): the offline generator answers every arm alike when the noise changes nothing, and
abstains on most Spanish questions about the English pydoc chunks, as the demo does. So this part is
a bound, the rest is exact."""


def online_eval_once(settings: Settings, day: date) -> Any:
    """The online eval of `day`, prepare to finalize, as the CLI runs it (the budget from the
    settings the bench builds); returns its RunSummary. No push: the bench measures the eval, not
    the Pushgateway."""
    from pipelines.evaluation.runs.online import run_online_eval
    from pipelines.evaluation.runs.params import online_params

    return run_online_eval(settings, day, online_params(settings), push=False)


# -- one task per process ----------------------------------------------------------------------


def _run_measured(target: Callable[..., dict[str, Any]], args: tuple, results) -> None:
    """`target(*args)` in this (fresh) process; puts its result with its wall time and peak RSS."""
    tree = _TreeRss()
    tree.start()
    started = time.perf_counter()
    result = target(*args)
    wall = time.perf_counter() - started
    tree.stop()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results.put(
        {**result, "wall_s": wall, "peak_rss_mb": own, "tree_peak_rss_mb": max(own, tree.peak_mb)}
    )


def in_fresh_process(target: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """Run `target(*args)` in a spawned process, as Airflow runs a task; its result and figures."""
    outcome, wall = in_spawned_process(_run_measured, (target, args), target.__name__)
    return dict(outcome, process_wall_s=wall)


def in_this_process(target: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """`target(*args)` here, with the same figures (this process's RSS, whatever it held before):
    for tests, where a fresh interpreter per task costs more than the task."""
    results: queue.Queue = queue.Queue()
    started = time.perf_counter()
    _run_measured(target, args, results)
    return dict(results.get(), process_wall_s=time.perf_counter() - started)


def build_day(
    settings: Settings, rows: int, seed: int, whole_corpus: bool, pool_size: int
) -> dict[str, Any]:
    """The day's partition and the corpus index (a task of its own: it is not part of the eval)."""
    pool = sampled_pool(settings, pool_size, seed)
    day = write_sampled_day(settings, rows, pool=pool, seed=seed)
    written = Workspace.from_settings(settings).traces_partition(DAY).parts
    cited = None if whole_corpus else cited_chunks(read_parts(written, columns=["contexts"]))
    indexed = index_demo_corpus(settings, cited)
    return {**day, "indexed": indexed}


def eval_task(settings: Settings, day: date) -> dict[str, Any]:
    """The online eval as the task runs it; what it judged, read back from the results store."""
    from pipelines.stores.results import ResultsStore

    started = time.perf_counter()
    summary = online_eval_once(settings, day)
    eval_s = time.perf_counter() - started
    store = ResultsStore.from_settings(settings)
    scores = store.scores(summary.run_id)
    store.dispose()
    judged = {s.item_id: s.stratum for s in scores if s.metric == "faithfulness"}
    # An answer that abstains (or lacks what faithfulness needs) is skipped before any claim is
    # extracted.
    unclaimed = sum(1 for s in scores if s.metric == "faithfulness" and s.status == "skipped")
    noise_scores = [
        s
        for s in scores
        if s.metric.startswith("noise_delta_f") and s.metric != "noise_delta_f_control"
    ]
    noise = {s.item_id for s in noise_scores}
    # No chunk of the pool was eligible as noise: the noisy arm is not asked for.
    no_noise = sum(1 for s in noise_scores if (s.error or "").startswith("no eligible"))
    statuses = Counter(s.status for s in scores)
    return {
        "eval_s": eval_s,
        "run_id": summary.run_id,
        "items": summary.items,
        "cost": summary.cost.model_dump() if summary.cost else None,
        "judged": dict(sorted(Counter(judged.values()).items())),
        "noise": len(noise),
        "unclaimed": unclaimed,
        "no_noise": no_noise,
        "scores": dict(statuses),
    }


# -- the benchmark -----------------------------------------------------------------------------


def bench_settings(
    home: Path, base_url: str, capacity: int, max_traces: int | None, noise_share: float | None
) -> Settings:
    """Judge and generator on the simulator (each may fill its capacity), a fresh LLM cache, local
    embeddings. No judge retest: the bench checks the eval's requests per judged trace exactly, and
    the retest's share is a random draw."""
    budget = {
        k: v
        for k, v in (("online_max_traces", max_traces), ("online_noise_share", noise_share))
        if v is not None
    }
    return Settings(
        home=home,
        anonymizer_key="ragwatch-bench-key",
        llm_backend="openai",
        llm_cache=True,
        judge_retest_share=0.0,
        judge=ModelEndpoint(base_url=base_url, model=JUDGE_MODEL, max_concurrency=capacity),
        generator=ModelEndpoint(base_url=base_url, model=GENERATOR_MODEL, max_concurrency=capacity),
        **budget,
    )


def expected_requests(
    judged: int, noise: int, unclaimed: int = 0, no_noise: int = 0
) -> dict[str, tuple[int, int]]:
    """(fewest, most) requests per model that `judged` judged traces send, `unclaimed` of them with
    an answer that abstains, `noise` of them given noise ΔF, `no_noise` of those with no eligible
    noise chunk."""
    judge = judged * JUDGE_PER_JUDGED_TRACE - unclaimed * CLAIMS_PER_TRACE
    return {
        JUDGE_MODEL: (judge, judge + noise * NOISE_JUDGE_PER_TRACE_MAX),
        GENERATOR_MODEL: (noise * GENERATOR_PER_NOISE_TRACE - no_noise,) * 2,
    }


def expected_formula() -> str:
    return (
        f"judge = judged × {JUDGE_PER_JUDGED_TRACE} − abstaining answers × {CLAIMS_PER_TRACE} + noise × "
        f"0…{NOISE_JUDGE_PER_TRACE_MAX}; generator = noise × {GENERATOR_PER_NOISE_TRACE} − no-noise-chunk traces"
    )


def run_online_bench(
    rows: int,
    *,
    latency_s: float = DEFAULT_LATENCY_S,
    capacity: int = DEFAULT_CAPACITY,
    max_traces: int | None = None,
    noise_share: float | None = None,
    seed: int = 11,
    whole_corpus: bool = True,
    pool_size: int = POOL_SIZE,
    fresh_processes: bool = True,
    home: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Build a day of `rows` sampled traces, run the online eval on it and rerun it cached; the
    figures. `whole_corpus`: index the whole demo corpus (else only the chunks the day's traces
    cite: a faster set-up); `pool_size`: demo traces the day's rows are drawn from (a small pool may
    lack the rarest strata); `fresh_processes`: each task in a fresh process as Airflow runs it
    (False: in this one, for tests)."""
    home = Path(tempfile.mkdtemp(prefix="ragwatch-bench-online-")) if home is None else home
    knobs = SimulatorKnobs(latency_s=latency_s, capacity=capacity)
    task = in_fresh_process if fresh_processes else in_this_process
    try:
        with simulator_process(knobs) as url:
            settings = bench_settings(home, url, capacity, max_traces, noise_share)
            progress(f"building a day of {rows:,} sampled traces and indexing the demo corpus")
            built = task(build_day, settings, rows, seed, whole_corpus, pool_size)
            progress(f"online eval of {DAY} ({built['bytes'] / 2**20:.0f} MB partition)")
            before = served_stats(url)
            first = task(eval_task, settings, DAY)
            after = served_stats(url)
            cached = LLMCache.in_directory(settings.resolved_cache_dir).count()
            progress("online eval again, on the same cache")
            rerun = task(eval_task, settings, DAY)
            again = served_stats(url)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    served = _served(before, after)
    models = {m: n - before.get("models", {}).get(m, 0) for m, n in after.get("models", {}).items()}
    judged = sum(first["judged"].values())
    expected = expected_requests(judged, first["noise"], first["unclaimed"], first["no_noise"])
    ideal = _ideal(served["requests"], latency_s, capacity)
    recorded = RunCost.model_validate(first["cost"])
    rerun_cost = RunCost.model_validate(rerun["cost"])
    return {
        "rows": rows,
        "latency_s": latency_s,
        "capacity": capacity,
        "seed": seed,
        "max_traces": max_traces,
        "noise_share": noise_share,
        "build": built,
        "judged_per_stratum": first["judged"],
        "judged": judged,
        "noise": first["noise"],
        "abstaining_answers": first["unclaimed"],
        "no_noise_chunk": first["no_noise"],
        "scores": first["scores"],
        "requests": served["requests"],
        "endpoints": served["endpoints"],
        "by_model": models,
        "expected": expected,
        "distinct_requests": cached,
        "recorded": {
            stage: int(counts["requests"]) for stage, counts in recorded.by_stage().items()
        },
        "recorded_by_model": recorded.by_model(),
        "recorded_requests": int(recorded.total("requests")),
        "recorded_cache_hits": int(recorded.total("cache_hits")),
        "recorded_tokens": {
            "prompt": int(recorded.total("prompt_tokens")),
            "completion": int(recorded.total("completion_tokens")),
        },
        "llm_seconds": recorded.total("llm_seconds"),
        "prompt_tokens": served["prompt_tokens"],
        "completion_tokens": served["completion_tokens"],
        "max_concurrent": after["max_concurrent"],
        "eval_s": first["eval_s"],
        "task_s": first["process_wall_s"],
        "ideal_s": ideal,
        "efficiency": ideal / first["eval_s"] if first["eval_s"] else None,
        "peak_rss_mb": first["peak_rss_mb"],
        "tree_peak_rss_mb": first["tree_peak_rss_mb"],
        "rerun": {
            "requests": again["requests"] - after["requests"],
            "eval_s": rerun["eval_s"],
            "recorded_requests": int(rerun_cost.total("requests")),
            "recorded_cache_hits": int(rerun_cost.total("cache_hits")),
            "task_s": rerun["process_wall_s"],
            "judged": sum(rerun["judged"].values()),
            "peak_rss_mb": rerun["peak_rss_mb"],
            "tree_peak_rss_mb": rerun["tree_peak_rss_mb"],
        },
    }


def format_online_bench(result: dict[str, Any]) -> str:
    """The figures as a rich table, as text."""
    build, rerun = result["build"], result["rerun"]
    table = Table(
        title=(
            f"Online eval of a day of {result['rows']:,} sampled traces on the simulator "
            f"(latency {result['latency_s']:g} s, capacity {result['capacity']})"
        )
    )
    table.add_column("", justify="left")
    table.add_column("value", justify="right")
    table.add_column("", justify="left")
    table.add_row(
        "rows in the partition",
        f"{result['rows']:,}",
        f"{build['bytes'] / 2**20:.0f} MB, "
        f"{len(build['per_stratum'])} strata drawn from {build['pool']:,} sampled demo traces",
    )
    for stratum, n in build["per_stratum"].items():
        table.add_row(
            f"  {stratum}", f"{n:,}", f"judged {result['judged_per_stratum'].get(stratum, 0):,}"
        )
    table.add_row(
        "judged traces",
        f"{result['judged']:,}",
        f"{_budget(result)}; {result['abstaining_answers']:,} logged answers abstain (no claim to check)",
    )
    table.add_row(
        "noise ΔF traces",
        f"{result['noise']:,}",
        ("" if result["noise_share"] is None else f"share {result['noise_share']:g}; ")
        + f"{result['no_noise_chunk']:,} with no eligible noise chunk",
    )
    table.add_section()
    judged, noise = result["judged"], result["noise"]
    for stage, n in result["recorded"].items():
        per = f"{n / judged:.3f} per judged trace" if judged else ""
        if stage.startswith("noise") and noise:
            per += f", {n / noise:.3f} per noise trace"
        table.add_row(f"requests recorded by the run, {stage}", f"{n:,}", per)
    verdict = "equal" if recorded_equals_served(result) else "DIFFERENT"
    table.add_row(
        "requests recorded, all",
        f"{result['recorded_requests']:,}",
        f"{result['recorded_requests'] / judged:.3f} per judged trace; the simulator served "
        f"{result['requests']:,}: {verdict}"
        if judged
        else verdict,
    )
    for model, sent in sorted(result["by_model"].items()):
        mine = result["recorded_by_model"].get(model, 0)
        low, high = result["expected"].get(model, (None, None))
        bound = (
            ""
            if low is None
            else f"; per trace expected {low:,}" + (f" … {high:,}" if high != low else "")
        )
        table.add_row(
            f"  {model}",
            f"{mine:,}",
            f"simulator {sent:,} ({'equal' if mine == sent else 'DIFFERENT'}){bound}",
        )
    table.add_row(
        "tokens recorded (prompt + completion)",
        f"{result['recorded_tokens']['prompt']:,} + {result['recorded_tokens']['completion']:,}",
        f"simulator {result['prompt_tokens']:,} + "
        f"{result['completion_tokens']:,}; {result['llm_seconds']:,.0f} LLM-seconds",
    )
    repeated = result["requests"] - result["distinct_requests"]
    table.add_row(
        "distinct requests (cache entries)",
        f"{result['distinct_requests']:,}",
        "equal to sent: none sent twice or retried"
        if not repeated
        else f"{repeated:,} sent twice or retried",
    )
    extra = {m: n for m, n in result["by_model"].items() if m not in result["expected"]}
    if extra:
        table.add_row("  other models", str(extra), "")
    table.add_section()
    table.add_row(
        "eval wall (the call)",
        f"{result['eval_s']:.1f} s",
        f"task process {result['task_s']:.1f} s (with its imports)",
    )
    table.add_row("ideal: requests × latency ÷ capacity", f"{result['ideal_s']:.1f} s", "")
    table.add_row(
        "efficiency (ideal ÷ wall)",
        "—" if result["efficiency"] is None else f"{result['efficiency']:.0%}",
        f"most requests in flight {result['max_concurrent']}",
    )
    table.add_row(
        "peak RSS, eval task",
        f"{result['peak_rss_mb']:.0f} MB",
        f"with its workers {result['tree_peak_rss_mb']:.0f} MB",
    )
    table.add_section()
    table.add_row(
        "cached rerun: requests sent",
        f"{rerun['requests']:,}",
        f"recorded {rerun['recorded_requests']:,} "
        f"and {rerun['recorded_cache_hits']:,} cache hits; wall {rerun['eval_s']:.1f} s, "
        f"peak RSS {rerun['peak_rss_mb']:.0f} MB / with workers {rerun['tree_peak_rss_mb']:.0f} MB",
    )
    table.add_row(
        "building the day (not the eval)",
        f"{build['wall_s']:.1f} s",
        f"peak RSS {build['peak_rss_mb']:.0f} MB / with workers {build['tree_peak_rss_mb']:.0f} MB; "
        f"{build['indexed']['chunks']} chunks indexed in {build['indexed']['index_s']:.0f} s",
    )
    console = Console(file=io.StringIO(), width=130)
    console.print(table)
    return console.file.getvalue()


def recorded_equals_served(result: dict[str, Any]) -> bool:
    """Whether the run's own usage records add up to what the simulator served, in all and per
    model."""
    return (
        result["recorded_requests"] == result["requests"]
        and result["recorded_by_model"] == result["by_model"]
    )


def _budget(result: dict[str, Any]) -> str:
    if result["max_traces"] is None:
        return "budget: the eval's default"
    return f"budget {result['max_traces']:,}"
