"""The offline eval end to end: target, judge, results DB upserts, the gate, the push, HTTP targets."""

import json
import shutil
from contextlib import contextmanager
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipelines.corpus.steps import index_corpus
from pipelines.evaluation.gate import GateFailed
from pipelines.evaluation.offline import run_offline_eval
from pipelines.evaluation.params import eval_params
from pipelines.evaluation.push import read_back
from pipelines.golden import steps
from pipelines.golden.params import load_golden_params
from pipelines.settings import Settings
from pipelines.stores.results import ResultsStore
from pipelines.workspace import Workspace
from tests.conftest import ROOT

# A tool triple on each of the 9 chunks the test corpus can seed: 8 tool items land in the test split.
SMALL = {"seeds": 8, "questions_per_seed": 2, "multi_hop": 3, "adversarial": 2, "tool_triples": 9, "from_traces": 0,
         "batch_size": 8}  # fmt: skip
TOOL_METRICS = ("tool_selection_accuracy", "tool_call_accuracy")
FAST = {"metrics": ["faithfulness", "context_recall"], "batch_size": 10}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    home = tmp_path_factory.mktemp("eval")
    settings = Settings(home=home / "home", anonymizer_key="k")
    shutil.copytree(ROOT / "tests" / "data" / "corpus", home / "corpus")
    index_corpus(settings, home / "corpus")
    steps.build_golden(settings, load_golden_params(settings, **SMALL), logical_date=date(2026, 11, 30))
    return settings


def runs_and_rows(settings, suite="offline"):
    store = ResultsStore.from_settings(settings)
    runs = store.runs(suite, 50, status=None)
    rows = {r.run_id: len(store.scores(r.run_id)) for r in runs}
    store.dispose()
    return runs, rows


def test_a_rerun_of_the_same_date_replaces_its_rows_and_the_gate_catches_a_regression(built):
    # The gate decides a metric on ≥ 5 pairs here (default 10): the small set's 8 tool items are gated too.
    settings = built.model_copy(update={"gate_min_pairs": 5})
    first, _ = run_offline_eval(settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 2))
    assert first.gate_passed is None and "no baseline" in first.gate
    overall = {row.metric: row for row in first.overall}
    assert overall["recall@5"].n > 0 and overall["faithfulness"].n > 0
    again, _ = run_offline_eval(settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 2))
    runs, rows = runs_and_rows(settings)
    assert first.run_id == again.run_id == "offline/2026-11-02/reference-rag"
    assert len(runs) == 1 and rows[first.run_id] > 0

    same, _ = run_offline_eval(settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 9))
    assert same.gate_passed is True and same.baseline == first.run_id, same.gate
    # The tool metrics are gated, paired over the tool items only; the reference agent calls every tool right.
    gated = {row.metric: row for row in same.gate_rows}
    assert all(gated[m].passed and gated[m].n_pairs >= 5 for m in TOOL_METRICS), gated
    assert all(overall[m].mean == 1.0 for m in TOOL_METRICS)
    assert gated["tool_call_accuracy"].n_pairs == overall["tool_call_accuracy"].n < overall["recall@5"].n

    # A new release of the service behind the same target name retrieves nothing relevant.
    with serving(200) as url:
        degraded = eval_params(settings, **FAST, target_url=url, target_name="reference-rag", fail_on_gate=True)
        with pytest.raises(GateFailed, match="recall@5"):
            run_offline_eval(settings, degraded, logical_date=date(2026, 11, 16))
    runs, _ = runs_and_rows(settings)
    assert [r.gate_passed for r in sorted(runs, key=lambda r: r.logical_date)] == [None, True, False]
    # Its agent searches the docs with the whole question for every request: every tool call differs from the
    # expected one and fails the gate; the wrong tool choices (TSA 1 -> 0.25) are within the noise band of 8 pairs.
    verdicts = {m["metric"]: m for m in max(runs, key=lambda r: r.logical_date).gate["metrics"]}
    assert verdicts["tool_call_accuracy"]["candidate_mean"] == 0.0 and not verdicts["tool_call_accuracy"]["passed"]
    assert verdicts["tool_selection_accuracy"]["candidate_mean"] < 1.0
    workspace = Workspace.from_settings(settings)
    report = workspace.report("offline", date(2026, 11, 16), "reference-rag")
    assert "recall@5" in report.read_text(encoding="utf-8") and "gate" in report.read_text(encoding="utf-8").lower()
    metrics_json = json.loads(workspace.metrics_json(report).read_text())
    assert "all" in metrics_json["recall@5"]


def test_the_push_reaches_a_real_pushgateway_and_reads_back(built, pushgateway):
    settings = built.model_copy(update={"pushgateway_url": pushgateway.url})
    _, pushed = run_offline_eval(settings, eval_params(settings, **FAST), logical_date=date(2026, 11, 23))
    assert pushed.mode == "pushgateway" and pushed.samples > 0
    groups = read_back(pushgateway.url)
    group = next(g for g in groups if g["labels"] == {"job": "ragwatch", "suite": "offline"})  # no run id in the key
    recall = group["metrics"]["rag_recall_at_5_score"]
    assert any(s["labels"]["stratum"] == "all" for s in recall)
    # A backfilled past date must not overwrite the newest run's gauges.
    _, past = run_offline_eval(settings, eval_params(settings, **FAST), logical_date=date(2026, 10, 26))
    assert past.destination is None and "newer" in past.skipped


class _Service(BaseHTTPRequestHandler):
    status = 200

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.status != 200:
            self.send_response(self.status)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        # Its 2 best passages, like a service with a similarity cut-off: measured at every k all the same.
        contexts = [{"chunk_id": f"nope#x/{n}-00000000", "text": body["question"], "score": 1.0 - n / 10} for n in range(2)]
        reply = {"answer": f"Echo: {body['question']}", "contexts": contexts,
                 "tool_calls": [{"name": "vector_search", "arguments": {"query": body["question"]}}]}  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@contextmanager
def serving(status: int):
    """A team's RAG service on loopback: echoes the question, cites a chunk id that is never gold."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Service,), {"status": status}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/rag"
    finally:
        server.shutdown()


@pytest.mark.parametrize("status", [200, 503])
def test_an_http_target_follows_the_contract_and_its_failures_fail_the_metrics(built, status):
    with serving(status) as url:
        params = eval_params(built, **FAST, target_url=url, target_name=f"svc-{status}")
        summary, _ = run_offline_eval(built, params, logical_date=date(2026, 11, 30))
    store = ResultsStore.from_settings(built)
    scores = store.scores(summary.run_id)
    store.dispose()
    recall = [s for s in scores if s.metric == "recall@5"]
    if status == 200:
        assert recall and all(s.status == "ok" and s.value == 0.0 for s in recall)  # its chunk ids are not gold
        # 2 passages, never "not measured at k": every k of every retrieval item is an ok score (a rerun pairs).
        at_k = [s for s in scores if s.metric.startswith(("recall@", "precision@"))]
        per_metric = {m: sum(s.metric == m for s in at_k) for m in {s.metric for s in at_k}}
        assert {"recall@10", "precision@10"} <= set(per_metric) and set(per_metric.values()) == {len(recall)}
        assert all(s.status == "ok" for s in at_k)
    else:
        assert scores and all(s.value is None for s in scores if s.status != "ok")
        failed = [s for s in scores if s.status == "failed"]
        assert failed and all("HTTP 503" in s.error for s in failed)
        assert not [s for s in scores if s.status == "ok" and s.metric != "tool_call_accuracy"]


def test_eval_compare_reports_paired_differences_per_metric_and_stratum(built):
    from pipelines.evaluation.compare import compare, parse_config

    assert parse_config("k=3,mode=dense") == {"retrieval_k": 3, "retrieval_mode": "dense"}
    with pytest.raises(ValueError, match="use k=N"):
        parse_config("chunks=512")
    base = eval_params(built, **FAST)
    rows = compare(built, base, "k=5,mode=hybrid", "k=1,mode=hybrid", logical_date=date(2026, 11, 30))
    recall = next(r for r in rows if r["metric"] == "recall@5" and r["stratum"] == "all")
    assert recall["n_pairs"] > 0 and recall["diff"] == pytest.approx(recall["b"] - recall["a"])
    assert recall["diff"] <= 0 and recall["ci_low"] <= recall["diff"] <= recall["ci_high"]
    assert any(r["stratum"] != "all" for r in rows)
