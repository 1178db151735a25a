import json
import subprocess
import sys

import pytest

from pipelines.evaluation.retrieval import attribute, precision_at_k, query_metrics, reciprocal_rank, recall_at_k, score_run_file

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


def test_precision_does_not_reward_short_lists():
    assert precision_at_k(["c1"], GOLD, 5) == pytest.approx(0.2)


def test_attribution_separates_retrieval_from_generation():
    assert attribute(RETRIEVED, ["zz"], answer_ok=False) == "retrieval_failure"
    assert attribute(RETRIEVED, GOLD, answer_ok=False) == "generation_failure"
    assert attribute(RETRIEVED, GOLD, answer_ok=True) == "ok"
    assert attribute(RETRIEVED, [], answer_ok=True) == "not_applicable"


def test_cli_scores_a_run_file_and_names_bad_lines(tmp_path):
    run = tmp_path / "run.jsonl"
    rows = [
        {"query_id": "q1", "retrieved_ids": RETRIEVED, "gold_ids": GOLD},
        {"query_id": "q2", "retrieved_ids": ["c1", "c2"], "gold_ids": ["c1"]},
    ]
    run.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, "-m", "pipelines.cli", "metrics", "retrieval", "--in", str(run), "--k", "1,5"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    result = json.loads(out.stdout)
    assert result == {"recall@1": 0.5, "precision@1": 0.5, "recall@5": 1.0, "precision@5": pytest.approx(0.3),
                      "mrr": pytest.approx((1 / 3 + 1) / 2, abs=1e-6), "n": 2}  # fmt: skip
    assert query_metrics(RETRIEVED, GOLD, [5])["recall@5"] == 1.0

    run.write_text('{"query_id": "q1", "retrieved_ids": ["a"]}\n')
    with pytest.raises(ValueError, match="run.jsonl:1"):
        score_run_file(run)
    bad = subprocess.run([sys.executable, "-m", "pipelines.cli", "metrics", "retrieval", "--in", str(run)],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 1 and "run.jsonl:1" in bad.stdout
