"""Online scores as gen_ai.evaluation.result events, read back by an OTLP/HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse

from pipelines.evaluation.outputs.evaluation_events import emit_evaluation_events
from pipelines.records import Score
from pipelines.stores.trace_sources.spans import any_value

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"


@contextmanager
def otlp_log_receiver(status: int = 200) -> Iterator[tuple[str, list[ExportLogsServiceRequest]]]:
    """An OTLP/HTTP logs endpoint in this process: it decodes each protobuf request it is sent."""
    received: list[ExportLogsServiceRequest] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            assert self.path == "/v1/logs" and self.headers["Content-Type"] == "application/x-protobuf"
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            received.append(request)
            reply = ExportLogsServiceResponse().SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def score(item_id: str, metric: str, value: float | None, status: str = "ok", error: str | None = None) -> Score:
    return Score(
        run_id="online-2026-12-04",
        suite="online",
        item_id=item_id,
        stratum="docs-bot/en",
        metric=metric,
        value=value,
        status=status,
        error=error,
        judge_model="judge-model",
        dataset_version="traces/dt=2026-12-04",
    )


def records(received: list[ExportLogsServiceRequest]) -> list:
    return [r for request in received for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]


def attributes(record) -> dict:
    from google.protobuf.json_format import MessageToDict

    return {kv["key"]: any_value(kv["value"]) for kv in MessageToDict(record)["attributes"]}


def test_each_online_score_arrives_as_an_evaluation_event_on_its_trace_and_span():
    scores = [
        score(TRACE, "faithfulness", 0.5),
        score(TRACE, "answer_relevancy", 0.92),
        score(TRACE, "noise_delta_f_reference", None, "failed", "the judge's reply was not JSON"),
        score("tr-sql-store-id", "faithfulness", 0.9),
    ]
    with otlp_log_receiver() as (url, received):
        assert emit_evaluation_events(url, scores, {TRACE: SPAN}) == 4
    got = records(received)
    assert len(got) == 4 and {r.event_name for r in got} == {"gen_ai.evaluation.result"}
    by_metric = {(attributes(r)["gen_ai.evaluation.name"], r.trace_id.hex()): (r, attributes(r)) for r in got}

    record, faithfulness = by_metric[("faithfulness", TRACE)]
    assert record.span_id.hex() == SPAN
    assert faithfulness["gen_ai.evaluation.score.value"] == 0.5
    assert faithfulness["gen_ai.evaluation.score.label"] == "problem"
    assert "made-up answers" in faithfulness["gen_ai.evaluation.explanation"]
    assert by_metric[("answer_relevancy", TRACE)][1]["gen_ai.evaluation.score.label"] == "healthy"

    _, failed = by_metric[("noise_delta_f_reference", TRACE)]
    assert "gen_ai.evaluation.score.value" not in failed and failed["error.type"] == "failed"
    assert failed["gen_ai.evaluation.explanation"] == "the judge's reply was not JSON"

    # A trace id that is no OTLP id travels as an attribute, without a made-up trace context.
    record, sql = by_metric[("faithfulness", "")]
    assert sql["ragwatch.trace_id"] == "tr-sql-store-id" and record.span_id == b""


def test_an_endpoint_that_refuses_the_events_fails_the_call():
    with otlp_log_receiver(status=400) as (url, _):
        with pytest.raises(RuntimeError, match="RAGWATCH_OTLP_ENDPOINT"):
            emit_evaluation_events(url, [score(TRACE, "faithfulness", 0.8)], {TRACE: SPAN}, timeout_s=2)


def test_the_online_eval_sends_every_score_of_its_run_on_its_trace(tmp_path):
    """The wiring: RAGWATCH_OTLP_ENDPOINT set, the online eval's finalize sends each stored score, on the span the
    sampled row's metadata names."""
    import shutil
    from collections import Counter
    from datetime import date

    from pipelines.corpus.steps import index_corpus
    from pipelines.evaluation.runs.online import run_online_eval
    from pipelines.evaluation.runs.params import online_params
    from pipelines.settings import Settings
    from pipelines.stores.corpus import open_corpus_index
    from pipelines.stores.results import ResultsStore
    from pipelines.workspace import Workspace
    from tests.conftest import ROOT
    from tests.unit.pipelines.evaluation.runs.test_online import trace_rows, write_partition
    from tests.support.workspace_data import release_golden

    day = date(2026, 3, 1)
    settings = Settings(home=tmp_path / "home", anonymizer_key="k")
    shutil.copytree(ROOT / "tests" / "data" / "corpus", tmp_path / "corpus")
    index_corpus(settings, tmp_path / "corpus")
    with open_corpus_index(settings) as index:
        chunks = [(c.chunk_id, c.text) for c in index.chunks()][:4]
    rows = trace_rows({("docs", "en"): 6}, chunks)
    span_ids = {}
    for i, row in enumerate(rows):  # as a span export's rows are sampled: OTLP ids, the root span in the metadata
        row["trace_id"] = f"{i + 1:032x}"
        span_ids[row["trace_id"]] = f"{i + 17:016x}"
        row["metadata"] = json.dumps({"trace_source": "otlp", "span_id": span_ids[row["trace_id"]]})
    rows[-1]["metadata"] = "{}"  # one from the SQL store: no span id, so no trace context
    del span_ids[rows[-1]["trace_id"]]
    partition = Workspace.from_settings(settings).traces_partition(day)
    write_partition(partition.part(0), rows)
    partition.manifest.write_text(json.dumps({"day": day.isoformat()}))
    release_golden(Workspace.from_settings(settings))

    with otlp_log_receiver() as (url, received):
        summary = run_online_eval(
            settings.model_copy(update={"otlp_endpoint": url}),
            day,
            online_params(settings, max_traces=6, min_per_stratum=3, batch_size=3),
            push=False,
        )
    store = ResultsStore.from_settings(settings)
    stored = store.scores(summary.run_id)
    store.dispose()
    got = records(received)
    assert len(got) == len(stored) > 6
    assert Counter(attributes(r)["gen_ai.evaluation.name"] for r in got) == Counter(s.metric for s in stored)
    tied = [r for r in got if r.trace_id]
    assert {r.trace_id.hex() for r in tied} == set(span_ids) and all(
        span_ids[r.trace_id.hex()] == r.span_id.hex() for r in tied
    )
    assert {attributes(r)["ragwatch.trace_id"] for r in got if not r.trace_id} == {rows[-1]["trace_id"]}
