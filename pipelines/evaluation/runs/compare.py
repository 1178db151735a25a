"""A/B test of two configurations of the system under test on the same golden items.

Both configurations answer the same items and are judged by the same judge; the report is the paired
difference B − A per metric and stratum with its 95 % CI (`stats.paired_difference_interval`) and a
p-value adjusted by Benjamini–Hochberg over all rows (`stats.compare_runs`) — what a team runs
before changing chunk size, k, the retrieval mode, the prompt or the service behind a URL.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pipelines.core.records import Score
from pipelines.core.settings import Settings
from pipelines.core.workspace import RunPaths
from pipelines.evaluation.runs.folder import load_scores
from pipelines.evaluation.runs.judge_batch import judge_offline_batch
from pipelines.evaluation.runs.params import EvalParams, target_name_for, target_url
from pipelines.evaluation.runs.prepare import prepare_offline_eval
from pipelines.evaluation.statistics.compare import compare_runs


def parse_config(text: str) -> dict[str, Any]:
    """`k=3,mode=dense` or `url=http://…` -> eval parameters for one arm."""
    aliases = {
        "k": "retrieval_k",
        "mode": "retrieval_mode",
        "url": "target_url",
        "prompt": "prompt",
    }
    config: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key not in aliases or not value:
            raise ValueError(
                f"cannot read {part!r}: use k=N, mode=hybrid|dense|sparse, url=URL or prompt=TEXT"
            )
        config[aliases[key]] = int(value) if key == "k" else value
    return config


def run_arm(settings: Settings, params: EvalParams, logical_date: date) -> list[Score]:
    prepared = prepare_offline_eval(settings, params, logical_date=logical_date)
    for start, end in prepared.batches:
        judge_offline_batch(settings, prepared.run_dir, start, end)
    return load_scores(RunPaths(prepared.run_dir))


def compare(
    settings: Settings, base: EvalParams, a: str, b: str, *, logical_date: date
) -> list[dict[str, Any]]:
    """Run both arms, then one row per metric and stratum: see `stats.compare_runs` for the columns
    (n_pairs, a, b, diff, ci_low, ci_high, ci_method, p_value, p_adjusted, significant,
    correction)."""
    arms = {}
    for label, text in (("A", a), ("B", b)):
        config = parse_config(text)
        if config.get("target_url"):
            target_url(config["target_url"], settings.target_hosts_allowed)
        params = EvalParams.model_validate(
            {**base.model_dump(), **config, "target_name": target_name_for(f"{label}-{text}")}
        )
        arms[label] = run_arm(settings, params, logical_date)
    return compare_runs(arms["B"], arms["A"])
