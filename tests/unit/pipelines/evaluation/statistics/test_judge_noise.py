"""The judge-noise statistics on synthetic judgements with a known noise, and which items the retest
picks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipelines.core.records import Score
from pipelines.evaluation.metrics.judge_retest import retested
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.judge_noise import (
    MIN_RETESTS,
    NOT_ENOUGH,
    judge_noise,
    run_judge_noise,
)

JUDGE_SD = 0.1
"""The synthetic judge's noise: each judgement is the item's true score + N(0, 0.1²), so σ²_judge =
0.01."""


def judgements(n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.uniform(
        0.2, 0.8, n
    )  # item variance 0.6²/12 = 0.03: the judge's 0.01 is a quarter of the total
    return truth, truth + rng.normal(0, JUDGE_SD, n), truth + rng.normal(0, JUDGE_SD, n)


def scores(values, metric: str = "answer_relevancy") -> list[Score]:
    return [
        Score(
            run_id="r",
            suite="offline",
            item_id=f"i{k}",
            stratum="s",
            metric=metric,
            value=float(v),
            status="ok",
            dataset_version="v",
        )
        for k, v in enumerate(values)
    ]


def test_the_judge_noise_variance_its_share_and_the_icc_come_out_as_simulated():
    _, first, second = judgements(2_000)
    [noise] = run_judge_noise(scores(first), scores(second), aggregate(scores(first)))
    assert noise.n_retested == noise.n_items == 2_000
    assert noise.judge_variance == pytest.approx(JUDGE_SD**2, rel=0.1)
    truth_variance = 0.6**2 / 12
    assert noise.noise_share == pytest.approx(JUDGE_SD**2 / (truth_variance + JUDGE_SD**2), rel=0.1)
    assert noise.icc == pytest.approx(truth_variance / (truth_variance + JUDGE_SD**2), abs=0.05)
    # |N(0, 2σ²)| has mean 2σ/√π.
    assert noise.mean_abs_difference == pytest.approx(2 * JUDGE_SD / math.sqrt(math.pi), rel=0.1)
    # The projections shrink the run's own half-width: two judgements a little, twice the items by
    # 1/√2.
    assert noise.half_width > noise.half_width_two_judgements > noise.half_width_noiseless_judge > 0
    assert noise.half_width_double_items == pytest.approx(noise.half_width / math.sqrt(2))
    assert noise.half_width_two_judgements == pytest.approx(
        noise.half_width * math.sqrt(1 - noise.noise_share / 2)
    )
    assert (
        "item sampling dominates" in noise.verdict and f"±{noise.half_width:.3f}" in noise.verdict
    )
    assert (
        noise.kappa is None and noise.verdict_agreement is None
    )  # answer relevancy has no 0/1 form


def test_a_noisy_judge_dominates_and_a_steady_one_agrees_perfectly():
    rng = np.random.default_rng(3)
    truth = np.full(200, 0.6) + rng.normal(
        0, 0.02, 200
    )  # items barely differ: almost all spread is the judge's
    first, second = truth + rng.normal(0, 0.2, 200), truth + rng.normal(0, 0.2, 200)
    noisy = judge_noise(
        "faithfulness", first, second, first, aggregate(scores(first, "faithfulness"))[0]
    )
    assert noisy.noise_share > 0.9 and "the judge's noise is most of it" in noisy.verdict
    assert (
        noisy.verdict_agreement is not None and noisy.verdict_agreement < 0.9
    )  # faithfulness' 0/1 form
    steady = judge_noise(
        "faithfulness", first, first, first, aggregate(scores(first, "faithfulness"))[0]
    )
    assert (steady.judge_variance, steady.noise_share, steady.mean_abs_difference) == (0, 0, 0)
    assert steady.icc == 1 and steady.kappa == 1 and steady.verdict_agreement == 1
    assert (
        steady.half_width_two_judgements == steady.half_width
        and "same score twice" in steady.verdict
    )


def test_too_few_retests_state_no_figure():
    _, first, second = judgements(MIN_RETESTS - 1)
    few = judge_noise("faithfulness", first, second, first, None)
    assert few.n_retested == MIN_RETESTS - 1 and not few.enough
    assert (few.judge_variance, few.noise_share, few.icc, few.kappa) == (None, None, None, None)
    assert few.verdict.startswith(NOT_ENOUGH) and few.to_dict()["enough"] is False


def test_only_pairs_with_both_judgements_ok_count():
    _, first, second = judgements(30)
    retests = scores(second)
    failed = [
        s.model_copy(update={"value": None, "status": "failed", "error": "timeout"})
        for s in retests[:5]
    ]
    [noise] = run_judge_noise(scores(first), failed + retests[5:], aggregate(scores(first)))
    assert (noise.n_retested, noise.n_items) == (25, 30)


def test_the_retested_share_is_stable_and_about_the_share_asked():
    items = [f"item-{k}" for k in range(4_000)]
    chosen = {i for i in items if retested("offline/2026-11-30/reference-rag", i, 0.1)}
    assert 340 < len(chosen) < 460  # binomial(4000, 0.1): mean 400, sd 19
    assert chosen == {i for i in items if retested("offline/2026-11-30/reference-rag", i, 0.1)}
    assert chosen <= {
        i for i in items if retested("offline/2026-11-30/reference-rag", i, 0.2)
    }  # a larger share grows
    assert not any(retested("r", i, 0.0) for i in items) and all(
        retested("r", i, 1.0) for i in items
    )


def test_a_judge_noisier_than_the_items_spread_is_capped_and_says_so():
    rng = np.random.default_rng(5)
    first = rng.normal(0.5, 0.02, 50)
    second = first + rng.normal(
        0, 0.1, 50
    )  # σ²_judge ≈ 0.005, ten times the first judgements' whole variance
    noise = judge_noise("answer_relevancy", first, second, first, aggregate(scores(first))[0])
    assert noise.noise_share == 1 and "share capped at 1" in noise.verdict
    assert noise.half_width_noiseless_judge == 0 and noise.icc < 0.3
