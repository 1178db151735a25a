"""What a golden build cost the model servers: requests and tokens, per generated and per kept item.

Requests are the HTTP requests sent (retries and repair rounds included, cache hits excluded), the
number a vLLM operator sees; tokens are what the server reported in `usage` (the offline backend
reports none); LLM-seconds the requests' summed wall time from sending to reply. Generation runs in
mapped batches, so each batch leaves its counters next to its items and the filter step, which knows
how many items survived, adds them up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

COUNTED = ("requests", "prompt_tokens", "completion_tokens", "cache_hits", "llm_seconds")


def model_usage(counters: Mapping[str, Any]) -> dict[str, int]:
    """The part of an `LLMCounters.summary()` that costs something."""
    return {
        "requests": int(counters.get("calls", 0)),
        "prompt_tokens": int(counters.get("prompt_tokens", 0)),
        "completion_tokens": int(counters.get("completion_tokens", 0)),
        "cache_hits": int(counters.get("cache_hits", 0)),
        "llm_seconds": round(float(counters.get("llm_seconds", 0.0)), 3),
    }


def added(usages: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total = dict.fromkeys(COUNTED, 0)
    for usage in usages:
        for key in COUNTED:
            total[key] += usage.get(key, 0)
    total["llm_seconds"] = round(total["llm_seconds"], 3)
    return total


def build_cost(
    generator: Mapping[str, int], judge: Mapping[str, int], *, generated: int, kept: int
) -> dict[str, Any]:
    """Totals by role and for the build, and the build's totals per generated and per kept item."""
    total = added([generator, judge])

    def per(n: int) -> dict[str, float | None]:
        return {
            key: (round(total[key] / n, 2) if n else None)
            for key in ("requests", "prompt_tokens", "completion_tokens")
        }

    return {
        "generator": dict(generator),
        "judge": dict(judge),
        "total": total,
        "generated": generated,
        "kept": kept,
        "per_generated_item": per(generated),
        "per_kept_item": per(kept),
    }
