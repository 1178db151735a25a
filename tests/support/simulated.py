"""Settings that send every model call over HTTP to a running simulator
(pipelines.models.simulator)."""

from __future__ import annotations

from typing import Any

from pipelines.core.settings import Settings


def on_simulator(
    settings: Settings, url: str, *, cache: bool = True, max_retries: int = 2, **more: Any
) -> Settings:
    """`settings` with the generator (model `gen-model`) and the judge (`judge-model`) served by the
    simulator at `url`; `more` updates any other setting (a shared cache URL, a workspace)."""
    endpoint = {"base_url": url, "max_retries": max_retries, "timeout_s": 10}
    return settings.model_copy(
        update={
            "llm_backend": "openai",
            "llm_cache": cache,
            **more,
            "generator": settings.generator.model_copy(update={**endpoint, "model": "gen-model"}),
            "judge": settings.judge.model_copy(update={**endpoint, "model": "judge-model"}),
        }
    )
