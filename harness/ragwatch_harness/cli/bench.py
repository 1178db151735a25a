"""`ragwatch bench ...`: benchmarks measured side by side in one run."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from pipelines.cli.render.console import console, fail

app = typer.Typer(help="Benchmarks measured side by side in one run.", no_args_is_help=True)
SeedOption = typer.Option(
    "--seed", help="Seed of the simulated draws: the same seed gives the same figures."
)


@app.command("anonymize")
def bench_anonymize(
    traces: Annotated[int, typer.Option(help="Generated traces in the labelled set.")] = 2000,
    clean_traces: Annotated[
        int,
        typer.Option(
            min=2, help="Clean traces cut from this machine's documentation (half per language)."
        ),
    ] = 1000,
    seed: Annotated[int, SeedOption] = 11,
) -> None:
    """Throughput and recall of ragwatch's anonymizer against presidio-analyzer's pattern
    recognizers, and how much clean technical text it touches or quarantines."""
    from ragwatch_harness.bench.anonymize import format_anonymize_bench, run_anonymize_bench

    console.print(
        format_anonymize_bench(
            run_anonymize_bench(n_traces=traces, seed=seed, clean_traces=clean_traces)
        )
    )


@app.command("index")
def bench_index(
    chunks: Annotated[int, typer.Option(min=1, help="Chunks in the generated corpus.")] = 10_000,
    items: Annotated[
        int, typer.Option(min=1, help="Hand-written items for `golden import`.")
    ] = 1_000,
    embedder: Annotated[
        str, typer.Option(help="local (the model) or hashing (a stand-in: all but the model).")
    ] = "local",
    rule_sample: Annotated[
        int, typer.Option(min=1, help="Passages also matched by the one-by-one rule.")
    ] = 50,
    seed: Annotated[int, SeedOption] = 11,
) -> None:
    """Chunks per second for parsing, embedding and upserting; unchanged re-index; golden import at
    scale."""
    if embedder not in ("local", "hashing"):
        fail(f"--embedder is local or hashing, not {escape(embedder)!r}")
    from ragwatch_harness.bench.index import format_index_bench, run_index_bench

    result = run_index_bench(
        chunks=chunks,
        items=items,
        seed=seed,
        embedder=embedder,
        rule_sample=rule_sample,
        progress=console.print,
    )
    console.print(format_index_bench(result))


@app.command("eval")
def bench_eval(
    items: Annotated[int, typer.Option(help="Generated golden-like items.")] = 200,
    latency: Annotated[float, typer.Option(help="Simulator latency per request, seconds.")] = 0.2,
    capacity: Annotated[int, typer.Option(help="Requests the simulator serves at once.")] = 16,
    seed: Annotated[int, SeedOption] = 5,
    ragas_embeddings: Annotated[
        str, typer.Option(help="ragas' embeddings: simulator or local.")
    ] = "simulator",
) -> None:
    """Wall time, requests and efficiency of ragwatch's judge (and its cached rerun) against
    ragas.evaluate()."""
    if ragas_embeddings not in ("simulator", "local"):
        fail(f"--ragas-embeddings is simulator or local, not {escape(ragas_embeddings)!r}")
    from ragwatch_harness.bench.eval import format_eval_bench, run_eval_bench

    result = run_eval_bench(
        n_items=items,
        latency_s=latency,
        capacity=capacity,
        seed=seed,
        ragas_embeddings=ragas_embeddings,
    )
    console.print(format_eval_bench(result))


@app.command("diagnose")
def bench_diagnose(
    reps: Annotated[
        int, typer.Option(min=1, help="Simulated runs per scenario and score model.")
    ] = 2000,
    items: Annotated[int, typer.Option(min=2, help="Items per stratum.")] = 30,
    seed: Annotated[int, SeedOption] = 17,
) -> None:
    """How often the diagnosis flags a stratum 15 points worse, and a healthy one (12 strata × 30
    items)."""
    from ragwatch_harness.bench.diagnose_power import format_diagnose_bench, run_diagnose_bench

    console.print(format_diagnose_bench(run_diagnose_bench(reps=reps, seed=seed, items=items)))


@app.command("judge-shift")
def bench_judge_shift(
    reps: Annotated[int, typer.Option(min=1, help="Simulated runs per cell.")] = 1000,
    judged: Annotated[int, typer.Option(min=2, help="Judged items per run (N).")] = 2000,
    seed: Annotated[int, SeedOption] = 29,
) -> None:
    """Coverage and width of the judge-only, labels-only and corrected means (p × labels × their
    origin)."""
    from ragwatch_harness.bench.judge_shift import format_judge_shift_bench, run_judge_shift_bench

    typer.echo(format_judge_shift_bench(run_judge_shift_bench(reps=reps, seed=seed, judged=judged)))


@app.command("gate")
def bench_gate(
    reps: Annotated[
        int, typer.Option(min=1, help="Simulated baseline/candidate pairs per scenario and n.")
    ] = 400,
    sizes: Annotated[str, typer.Option(help="Eval sizes n, comma-separated.")] = "30,60,100",
    draws: Annotated[
        int | None,
        typer.Option(
            min=100, help="Null draws of the gate's family test (default: the gate's, 10,000)."
        ),
    ] = None,
    seed: Annotated[int, SeedOption] = 17,
    targets: Annotated[
        bool,
        typer.Option(
            help="Instead: per metric, the power for a 10-point drop at n = 100 and "
            "200, for 15 points at n = 100, and the n reaching 90 % (sizes "
            "100–400; --sizes is not used)."
        ),
    ] = False,
    detectable: Annotated[
        bool,
        typer.Option(
            help="Instead: per n of --sizes and metric, the drop the gate states "
            "it catches 90 % of the time, and the power measured there."
        ),
    ] = False,
    whole: Annotated[
        bool,
        typer.Option(
            help="Instead: the whole gate of a run (baseline and reference, chosen by "
            "the gate from a SQLite results DB): false alarms and power per n of "
            "--sizes, --reps targets per cell."
        ),
    ] = False,
    chain: Annotated[
        bool,
        typer.Option(
            help="Instead: --reps chains of --weeks weekly runs (n = the first of "
            "--sizes), each gated and saved: false alarms per week and over the "
            "chain."
        ),
    ] = False,
    weeks: Annotated[int, typer.Option(min=2, help="--chain: weekly runs per chain.")] = 10,
    pin_releases: Annotated[
        bool, typer.Option(help="--chain: pin every run that passed as a release.")
    ] = False,
    drift: Annotated[
        float, typer.Option(min=0.0, help="--chain: faithfulness lost every week (0: unchanged).")
    ] = 0.0,
    first_partial: Annotated[
        bool,
        typer.Option(
            help="--chain: week 0 runs with the judge off and is pinned as a partial release."
        ),
    ] = False,
    refresh_every: Annotated[
        int, typer.Option(min=0, help="--chain: a golden refresh every that many weeks (0: none).")
    ] = 0,
    turnover: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="--chain: share of the items a refresh retires and replaces."
        ),
    ] = 0.2,
    until_caught: Annotated[
        bool, typer.Option(help="--chain: stop each chain at its first failed week.")
    ] = False,
) -> None:
    """False alarms, power and interval coverage of the regression gate, simulated with the gate
    itself."""
    from ragwatch_harness.bench.gate_power import (
        format_detectable_bench,
        format_gate_bench,
        format_target_bench,
        run_detectable_bench,
        run_gate_bench,
        run_target_bench,
    )

    progress = lambda line: console.print(escape(line))
    if targets:
        typer.echo(
            format_target_bench(
                run_target_bench(reps=reps, draws=draws, seed=seed, progress=progress)
            )
        )
        return
    try:
        ns = [int(n) for n in sizes.split(",")]
    except ValueError:
        fail(f"--sizes is a comma-separated list of integers, not {escape(sizes)!r}")
    if whole or chain:
        from ragwatch_harness.bench.run_gate_power import (
            format_chain_bench,
            format_whole_gate_bench,
            run_chain_bench,
            run_whole_gate_bench,
        )

        if chain:
            typer.echo(
                format_chain_bench(
                    run_chain_bench(
                        n=ns[0],
                        weeks=weeks,
                        chains=reps,
                        pin_releases=pin_releases,
                        drift=drift,
                        first_partial=first_partial,
                        refresh_every=refresh_every,
                        turnover=turnover,
                        until_caught=until_caught,
                        seed=seed,
                        progress=progress,
                    )
                )
            )
        else:
            typer.echo(
                format_whole_gate_bench(
                    run_whole_gate_bench(sizes=ns, reps=reps, seed=seed, progress=progress)
                )
            )
        return
    if detectable:
        typer.echo(
            format_detectable_bench(
                run_detectable_bench(sizes=ns, reps=reps, draws=draws, seed=seed, progress=progress)
            )
        )
        return
    result = run_gate_bench(sizes=ns, reps=reps, draws=draws, seed=seed, progress=progress)
    typer.echo(format_gate_bench(result))


@app.command("sample")
def bench_sample(
    rows: Annotated[int, typer.Option(min=1, help="Traces in the synthetic day.")] = 100_000,
    store: Annotated[
        str, typer.Option(help="sqlite, or postgres (a throwaway cluster unless --store-url).")
    ] = "sqlite",
    store_url: Annotated[
        str | None,
        typer.Option(
            help="A PostgreSQL database the bench may fill (one table it creates and drops)."
        ),
    ] = None,
    rate: Annotated[float, typer.Option(min=0.0001, max=1.0, help="Sample rate.")] = 0.05,
    workers: Annotated[
        int, typer.Option(min=0, help="Anonymizing processes; 0 = one per CPU.")
    ] = 0,
    version: Annotated[bool, typer.Option(help="Run the DVC version task too.")] = True,
    one_process: Annotated[
        bool,
        typer.Option(
            help="Every step in one process, as `ragwatch traces sample` runs "
            "them, instead of one process per DAG task."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Wall time, rows/s and peak RSS of the whole trace-sampling step on a synthetic day of N
    traces."""
    if store not in ("sqlite", "postgres"):
        fail(f"--store is sqlite or postgres, not {escape(store)!r}")
    if store_url and store != "postgres":
        fail("--store-url needs --store postgres")
    from ragwatch_harness.bench.sample import format_sample_bench, run_sample_bench

    result = run_sample_bench(
        rows,
        store=store,
        url=store_url,
        rate=rate,
        workers=workers,
        version=version,
        one_process=one_process,
    )
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        console.print(format_sample_bench(result))


@app.command("language")
def bench_language(
    per_language: Annotated[
        int, typer.Option(min=1, help="Texts per language from this machine's gettext catalogs.")
    ] = 300,
    detectors: Annotated[
        str,
        typer.Option(help="Comma-separated: ragwatch, py3langid, lingua, lingua-low, previous."),
    ] = "ragwatch,py3langid,lingua,lingua-low,previous",
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Language detectors on short texts this machine holds in each language: accuracy per language,
    `und`, load time, memory and cost per text."""
    from pipelines.core.language import configured_languages
    from ragwatch_harness.bench.language import DETECTORS, format_language_bench, run_language_bench

    chosen = [name.strip() for name in detectors.split(",") if name.strip()]
    if unknown := [name for name in chosen if name not in DETECTORS]:
        fail(f"--detectors: {escape(', '.join(unknown))} unknown; one of {', '.join(DETECTORS)}")
    result = run_language_bench(
        configured_languages(),
        per_language,
        chosen,
        progress=lambda line: console.print(escape(line)),
    )
    typer.echo(json.dumps(result, indent=1) if as_json else format_language_bench(result))


@app.command("otlp")
def bench_otlp(
    traces: Annotated[
        int, typer.Option(min=1, help="Traces in the synthetic day of OTLP/JSON span files.")
    ] = 100_000,
    rate: Annotated[float, typer.Option(min=0.0001, max=1.0, help="Sample rate.")] = 0.05,
) -> None:
    """Peak RSS and wall time of the sampling's select and shard tasks reading a day of OTLP/JSON
    span files."""
    from ragwatch_harness.bench.otlp_day import bench_otlp_day

    typer.echo(json.dumps(bench_otlp_day(traces, rate=rate), indent=1))


@app.command("online")
def bench_online(
    rows: Annotated[
        int, typer.Option(min=1, help="Sampled traces in the synthetic day's partition.")
    ] = 1_000,
    latency: Annotated[
        float, typer.Option(min=0.0, help="Simulator latency per request, seconds.")
    ] = 1.0,
    capacity: Annotated[
        int, typer.Option(min=1, help="Requests the simulator serves at once.")
    ] = 16,
    max_traces: Annotated[
        int | None,
        typer.Option(
            min=1, help="Traces judged (RAGWATCH_ONLINE_MAX_TRACES); default: the eval's."
        ),
    ] = None,
    noise_share: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of the judged traces given noise ΔF (RAGWATCH_ONLINE_NOISE_SHARE); default: the eval's.",
        ),
    ] = None,
    seed: Annotated[int, SeedOption] = 11,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Requests (sent vs expected), wall vs ideal and peak RSS of the online eval on a day of N
    sampled traces."""
    from ragwatch_harness.bench.online import (
        format_online_bench,
        recorded_equals_served,
        run_online_bench,
    )

    try:
        result = run_online_bench(
            rows,
            latency_s=latency,
            capacity=capacity,
            max_traces=max_traces,
            noise_share=noise_share,
            seed=seed,
            progress=lambda line: console.print(escape(line)),
        )
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        typer.echo(format_online_bench(result))
    if not recorded_equals_served(result):
        fail(
            f"the run recorded {result['recorded_requests']:,} requests ({result['recorded_by_model']}) where the "
            f"simulator served {result['requests']:,} ({result['by_model']}): the usage accounting missed some"
        )


@app.command("plan")
def bench_plan(
    rows: Annotated[
        int, typer.Option(min=1, help="Sampled traces in each day's partition.")
    ] = 1_000_000,
    days: Annotated[
        int, typer.Option(min=1, help="Days the plan reads (the golden params' trace_days).")
    ] = 14,
    pick: Annotated[int, typer.Option(min=0, help="Trace questions the plan takes.")] = 100,
    previous_rows: Annotated[
        int,
        typer.Option(
            min=1,
            help="Rows per day the previous loader (every row a dict) is measured on, then scaled.",
        ),
    ] = 100_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Peak RSS and wall time of the golden plan's read of trace questions over DAYS days of ROWS
    traces, beside the previous loader."""
    from ragwatch_harness.bench.plan import run_plan_bench

    result = run_plan_bench(rows, days=days, n=pick, previous_rows=previous_rows)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
