"""`ragwatch simulate-llm`: the offline backend served as an OpenAI-compatible API."""

from __future__ import annotations

from typing import Annotated

import typer


def simulate_llm(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8000,
    latency_s: Annotated[float, typer.Option(help="Seconds each request takes.")] = 0.0,
    capacity: Annotated[int, typer.Option(help="Requests served at once; the rest queue.")] = 16,
    error_rate: Annotated[
        float, typer.Option(help="Share of requests answered with HTTP 500.")
    ] = 0.0,
    malformed_rate: Annotated[
        float, typer.Option(help="Share of replies that are not valid JSON.")
    ] = 0.0,
    timeout_rate: Annotated[
        float, typer.Option(help="Share of requests that never answer in time.")
    ] = 0.0,
) -> None:
    """Serve the OpenAI-compatible API (chat with json_schema and tools, embeddings, models) from
    the offline backend.

    It answers every prompt ragwatch sends (golden generation, the reference RAG, the ragas
    judge)."""
    from pipelines.cli.prompt_catalog import all_prompts
    from pipelines.models.simulator import SimulatorKnobs, serve

    serve(
        all_prompts(),
        port,
        SimulatorKnobs(
            latency_s=latency_s,
            capacity=capacity,
            error_rate=error_rate,
            malformed_rate=malformed_rate,
            timeout_rate=timeout_rate,
        ),
    )
