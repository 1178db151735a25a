import json
import subprocess
import sys

import ir_measures
import pytest
from ir_measures import RR, P, Success

from pipelines.evaluation.metrics.retrieval import (
    attribute,
    check_ks,
    depth,
    metric_names,
    precision_at_k,
    query_metrics,
    recall_at_k,
    reciprocal_rank,
    score_run_file,
)
from tests.conftest import ROOT

RETRIEVED = ["c9", "c2", "c7", "c1", "c5"]
GOLD = ["c1", "c7"]


def test_hand_computed_per_query_metrics():
    assert recall_at_k(RETRIEVED, GOLD, 1) == 0.0
    assert recall_at_k(RETRIEVED, GOLD, 3) == 1.0
    assert precision_at_k(RETRIEVED, GOLD, 5) == pytest.approx(2 / 5)
    assert precision_at_k(RETRIEVED, GOLD, 3) == pytest.approx(1 / 3)
    assert reciprocal_rank(RETRIEVED, GOLD) == pytest.approx(1 / 3)
    assert reciprocal_rank(RETRIEVED, ["zz"]) == 0.0


def test_the_briefs_worked_example_context_precision():
    # 5 retrieved chunks of which 3 relevant -> context precision 0.60
    assert precision_at_k(["a", "x", "b", "y", "c"], ["a", "b", "c"], 5) == pytest.approx(0.60)


def test_a_duplicate_id_counts_once_at_its_first_rank():
    # Without de-duplication: precision@3 would be 3/3 and the gold id would fill the list.
    twice = ["g", "g", "g", "x", "g", "y"]
    assert precision_at_k(twice, ["g"], 3) == pytest.approx(1 / 3)  # top 3 distinct: g, x, y
    assert query_metrics(twice, ["g"], [3]) == {
        "recall@3": 1.0,
        "precision@3": pytest.approx(1 / 3),
        "mrr": 1.0,
    }
    # A repeated non-gold id does not push the gold id down the ranking either.
    assert reciprocal_rank(["x", "x", "x", "g"], ["g"]) == pytest.approx(1 / 2)
    assert recall_at_k(["x", "x", "g"], ["g"], 2) == 1.0
    # Duplicates shorten the list: 6 entries are 3 distinct ids, and @5 counts ranks 4-5 as not
    # relevant.
    assert depth(twice) == 3 and precision_at_k(twice, ["g"], 5) == pytest.approx(1 / 5)


def test_a_list_shorter_than_k_is_measured_with_its_missing_ranks_not_relevant():
    # A service with a similarity cut-off returns its 2 best passages: every k is measured all the
    # same.
    two = ["c1", "x"]
    metrics = query_metrics(two, ["c1"], [1, 3, 5, 10])
    assert set(metrics) == set(metric_names([1, 3, 5, 10]))
    assert [metrics[f"recall@{k}"] for k in (1, 3, 5, 10)] == [1.0, 1.0, 1.0, 1.0]
    assert [metrics[f"precision@{k}"] for k in (1, 3, 5, 10)] == pytest.approx(
        [1.0, 1 / 3, 1 / 5, 1 / 10]
    )
    # Nothing returned: every figure 0, never left out.
    assert query_metrics([], ["c1"], [1, 5]) == {
        "recall@1": 0.0,
        "precision@1": 0.0,
        "recall@5": 0.0,
        "precision@5": 0.0,
        "mrr": 0.0,
    }


# Lists shorter than, equal to and longer than the cut-offs, duplicates, several gold ids, no hit.
AGAINST_TREC_EVAL = {
    "short-hit": (["g", "x"], ["g"]),
    "short-late": (["x", "y", "g"], ["g", "h"]),
    "short-miss": (["x"], ["g"]),
    "one": (["g"], ["g"]),
    "duplicates": (["x", "x", "g", "x", "h"], ["g", "h"]),
    "exact-5": (["a", "b", "c", "d", "g"], ["g"]),
    "long": ([f"d{n}" for n in range(12)] + ["g"], ["g", "d3", "d11"]),
}


def test_every_figure_equals_ir_measures_on_lists_shorter_and_longer_than_k():
    # ir_measures' trec_eval provider (pytrec_eval) as the standard: Success@k = our recall@k (the
    # brief's "any gold chunk in the top k"), P@k = precision@k, RR = the per-query reciprocal rank
    # MRR averages.
    ks = [1, 3, 5, 10]
    qrels = {q: {g: 1 for g in gold} for q, (_, gold) in AGAINST_TREC_EVAL.items()}
    # A run is scored documents: a falling score per distinct id keeps our rank order (no ties to
    # break).
    run = {
        q: {cid: float(100 - rank) for rank, cid in enumerate(dict.fromkeys(retrieved))}
        for q, (retrieved, _) in AGAINST_TREC_EVAL.items()
    }
    ours_of = {"Success": "recall", "P": "precision"}
    measures = [Success @ k for k in ks] + [P @ k for k in ks] + [RR]
    theirs = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.pytrec_eval.iter_calc(measures, qrels, run)
    }
    assert len(theirs) == len(AGAINST_TREC_EVAL) * len(measures)
    for query, (retrieved, gold) in AGAINST_TREC_EVAL.items():
        ours = query_metrics(retrieved, gold, ks)
        for k in ks:
            for measure, kind in ours_of.items():
                assert ours[f"{kind}@{k}"] == pytest.approx(theirs[(query, f"{measure}@{k}")]), (
                    query,
                    kind,
                    k,
                )
        assert ours["mrr"] == pytest.approx(theirs[(query, "RR")]), query


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "5"])
def test_k_below_one_or_not_an_integer_is_an_error(bad):
    with pytest.raises(ValueError, match="integer ≥ 1"):
        check_ks([1, bad])
    with pytest.raises(ValueError):
        recall_at_k(RETRIEVED, GOLD, bad)


@pytest.mark.parametrize(
    ("contexts", "gold", "correct", "supported", "label"),
    [
        (["a", "b"], [], True, True, "not_applicable"),  # no gold chunks: nothing to attribute
        (["a", "b"], ["g"], None, None, "unknown"),  # no correctness verdict
        (
            ["a", "b"],
            ["g"],
            True,
            True,
            "ok",
        ),  # right without the gold chunk: not a retrieval failure
        (["a", "b"], ["g"], True, None, "ok"),  # right; faithfulness not scored
        (
            ["a", "b"],
            ["g"],
            True,
            False,
            "generation_failure",
        ),  # right but unsupported by its contexts
        (
            ["a", "b"],
            ["g"],
            False,
            True,
            "retrieval_failure",
        ),  # wrong, gold never reached the generator
        (
            ["g1", "b"],
            ["g1", "g2"],
            False,
            True,
            "partial_retrieval_failure",
        ),  # multi-hop: one of two gold chunks
        (
            ["g1", "g2"],
            ["g1", "g2"],
            False,
            True,
            "generation_failure",
        ),  # wrong with every gold chunk in context
    ],
)
def test_attribution_follows_the_correctness_verdict_and_every_gold_chunk(
    contexts, gold, correct, supported, label
):
    assert attribute(contexts, gold, correct, supported) == label


def test_cli_scores_a_run_file_and_names_bad_lines(tmp_path):
    run = tmp_path / "run.jsonl"
    rows = [
        {"query_id": "q1", "retrieved_ids": RETRIEVED, "gold_ids": GOLD},
        {
            "query_id": "q2",
            "retrieved_ids": ["c1", "c2", "c1"],
            "gold_ids": ["c1"],
        },  # 2 distinct ids
    ]
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli = [sys.executable, "-m", "pipelines.cli", "metrics", "retrieval", "--in", str(run)]
    out = subprocess.run([*cli, "--k", "1,5"], capture_output=True, text=True, check=True, cwd=ROOT)
    # By hand, over both queries: @1 c9 miss, c1 hit; @5 q1 hits 2 of 5, q2 (2 distinct ids) hits 1
    # of 5 (ranks 3-5 not relevant): recall 1, precision (2/5 + 1/5) / 2; MRR (1/3 + 1) / 2.
    assert json.loads(out.stdout) == {
        "recall@1": 0.5,
        "precision@1": 0.5,
        "recall@5": 1.0,
        "precision@5": 0.3,
        "mrr": pytest.approx(2 / 3, abs=1e-6),
        "n_short@1": 0,
        "n_short@5": 1,
        "mean_depth": 3.5,
        "n": 2,
    }
    assert "k=5: 1 of 2 queries retrieved fewer than 5 distinct ids" in out.stderr

    zero = subprocess.run([*cli, "--k", "0,5"], capture_output=True, text=True, cwd=ROOT)
    # Refused by the CLI's one check of cut-offs (pipelines/core/inputs.py), as a usage error.
    assert zero.returncode == 2 and "cut-offs k '0,5' are not allowed" in " ".join(
        zero.stderr.split()
    )

    run.write_text('{"query_id": "q1", "retrieved_ids": ["a"]}\n')
    with pytest.raises(ValueError, match="run.jsonl:1"):
        score_run_file(run)
    bad = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 1 and "run.jsonl:1" in bad.stdout
