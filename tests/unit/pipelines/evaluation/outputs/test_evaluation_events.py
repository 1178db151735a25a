"""Online scores as gen_ai.evaluation.result events, read back by an OTLP/HTTP receiver on 127.0.0.1
and checked against the semantic conventions' own YAML (an excerpt under tests/data/semconv, its
source and version stated)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from pipelines.core.records import Score
from pipelines.evaluation.outputs.evaluation_events import (
    EvaluatedOperation,
    emit_evaluation_events,
)
from pipelines.evaluation.statistics.diagnose import THRESHOLDS
from tests.conftest import ROOT

TRACE = "5b8efff798038103d269b633813fc60c"
ROOT_SPAN = "eee19b7ec3c1b174"
CHAT_SPAN = "a3c8f9e1d2b40756"
RESPONSE = "chatcmpl-9x2Lq7YbV3"
CONVENTION_FILE = ROOT / "tests" / "data" / "semconv" / "gen_ai_evaluation_result.yaml"


@contextmanager
def otlp_log_receiver(status: int = 200) -> Iterator[tuple[str, list[ExportLogsServiceRequest]]]:
    """An OTLP/HTTP logs endpoint in this process: it decodes each protobuf request it is sent."""
    received: list[ExportLogsServiceRequest] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            assert (
                self.path == "/v1/logs" and self.headers["Content-Type"] == "application/x-protobuf"
            )
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


def score(
    item_id: str, metric: str, value: float | None, status: str = "ok", error: str | None = None
) -> Score:
    return Score(
        run_id="online-2026-12-04",
        suite="online",
        item_id=item_id,
        stratum="docs-bot/es",
        metric=metric,
        value=value,
        status=status,
        error=error,
        judge_model="judge-model",
        dataset_version="traces/dt=2026-12-04",
    )


def records(received: list[ExportLogsServiceRequest]) -> list:
    return [
        r
        for request in received
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    ]


def typed_attributes(record) -> dict[str, tuple[str, object]]:
    """Each attribute as (the AnyValue field OTLP carried it in, its value)."""
    return {
        kv.key: (kv.value.WhichOneof("value"), getattr(kv.value, kv.value.WhichOneof("value")))
        for kv in record.attributes
    }


def attributes(record) -> dict[str, object]:
    return {key: value for key, (_, value) in typed_attributes(record).items()}


# --- the convention, read from its YAML -----------------------------------------------------------

ANY_VALUE_FIELD = {
    "string": "string_value",
    "double": "double_value",
    "int": "int_value",
    "boolean": "bool_value",
}


@dataclass(frozen=True)
class Attribute:
    any_value_field: str
    level: str
    """required, conditionally_required, recommended or opt_in."""
    condition: str | None


@dataclass(frozen=True)
class Convention:
    package_version: str
    event_name: str
    attributes: dict[str, Attribute]


def read_convention() -> Convention:
    document = yaml.safe_load(CONVENTION_FILE.read_text())
    groups = {group["id"]: group for group in document["groups"]}
    registry = {
        a["id"]: a
        for g in groups.values()
        if g["type"] == "attribute_group"
        for a in g["attributes"]
    }
    event = groups["event.gen_ai.evaluation.result"]
    attributes = {}
    for ref in event["attributes"]:
        kind = registry[ref["ref"]]["type"]
        if isinstance(
            kind, dict
        ):  # an enum of string members (error.type): OTLP carries it as a string
            assert all(isinstance(member["value"], str) for member in kind["members"])
            kind = "string"
        level = ref["requirement_level"]
        level, condition = next(iter(level.items())) if isinstance(level, dict) else (level, None)
        attributes[ref["ref"]] = Attribute(ANY_VALUE_FIELD[kind], level, condition)
    return Convention(document["package_version"], event["name"], attributes)


CONVENTION = read_convention()


@dataclass(frozen=True)
class Case:
    """What ragwatch knows of one event: the conditions the convention's requirement levels name."""

    failed: bool
    banded: bool
    response_id: str | None


# Each conditional requirement of the YAML (attribute, level, condition), as ragwatch decides its
# condition: one the YAML adds, rewords or moves to another level fails
# test_the_excerpt_is_the_pinned_conventions.
CONDITIONS = {
    ("gen_ai.evaluation.score.value", "conditionally_required", "if applicable"): lambda case: (
        not case.failed
    ),
    ("gen_ai.evaluation.score.label", "conditionally_required", "if applicable"): lambda case: (
        case.banded
    ),
    ("gen_ai.response.id", "recommended", "when available"): lambda case: (
        case.response_id is not None
    ),
    ("error.type", "conditionally_required", "if the operation ended in an error"): lambda case: (
        case.failed
    ),
}


def assert_follows_convention(record, case: Case) -> None:
    assert record.event_name == CONVENTION.event_name
    got = typed_attributes(record)
    for key, (field, _) in got.items():
        if key.split(".")[0] in {
            "gen_ai",
            "error",
        }:  # the convention's namespaces: only what the event defines
            assert key in CONVENTION.attributes, (
                f"{key} is not an attribute of {CONVENTION.event_name}"
            )
            assert field == CONVENTION.attributes[key].any_value_field, f"{key} sent as {field}"
        else:
            assert key.startswith("ragwatch."), key
    for key, spec in CONVENTION.attributes.items():
        if spec.level == "required":
            assert key in got, f"required {key} missing"
        elif spec.condition is not None:
            # present exactly when its condition holds: error.type "SHOULD NOT" be set on success
            # either
            holds = CONDITIONS[(key, spec.level, spec.condition)](case)
            assert (key in got) == holds, (key, spec.level, spec.condition, case)


def test_the_excerpt_is_the_pinned_conventions():
    from importlib.metadata import version

    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv.attributes import error_attributes

    assert CONVENTION.package_version == version("opentelemetry-semantic-conventions"), (
        "the semantic conventions pin moved: refresh tests/data/semconv from the new release"
    )
    pinned = {
        gen_ai.GEN_AI_EVALUATION_NAME,
        gen_ai.GEN_AI_EVALUATION_SCORE_VALUE,
        gen_ai.GEN_AI_EVALUATION_SCORE_LABEL,
        gen_ai.GEN_AI_EVALUATION_EXPLANATION,
        gen_ai.GEN_AI_RESPONSE_ID,
        error_attributes.ERROR_TYPE,
    }
    assert set(CONVENTION.attributes) == pinned
    assert {
        (k, a.level, a.condition) for k, a in CONVENTION.attributes.items() if a.condition
    } == set(CONDITIONS)
    unconditional = {k: a.level for k, a in CONVENTION.attributes.items() if not a.condition}
    assert unconditional == {
        "gen_ai.evaluation.name": "required",
        "gen_ai.evaluation.explanation": "recommended",
    }
    assert CONVENTION.attributes["gen_ai.evaluation.score.value"].any_value_field == "double_value"
    assert error_attributes.ErrorTypeValues.OTHER.value == "_OTHER"


def test_each_score_arrives_on_the_evaluated_chat_span_as_the_convention_defines_it():
    operations = {
        TRACE: EvaluatedOperation(CHAT_SPAN, RESPONSE),
        "0" * 31 + "2": EvaluatedOperation(ROOT_SPAN),  # no LLM span known: the root
        "tr-sql-store-id": EvaluatedOperation(None, "resp_sql_42"),
    }
    scores = [
        score(TRACE, "faithfulness", 0.5),
        score(TRACE, "answer_relevancy", 0.92),
        score(
            TRACE, "noise_delta_f_reference", None, "failed", "la respuesta del juez no era JSON"
        ),
        score(TRACE, "tool_call_validity", None, "skipped", "no tool calls in the trace"),
        score(TRACE, "context_precision_share", None, "skipped", "no retrieved contexts"),
        score("0" * 31 + "2", "faithfulness", 0.95),
        score("tr-sql-store-id", "faithfulness", 0.9),
        score("tr-sql-store-id", "ragas_noise_sensitivity", 0.1),
    ]
    with otlp_log_receiver() as (url, received):
        assert emit_evaluation_events(url, scores, operations) == 6
    got = records(received)
    by_key = {(attributes(r)["gen_ai.evaluation.name"], r.trace_id.hex()): r for r in got}
    assert len(by_key) == len(got) == 6
    assert not {"tool_call_validity", "context_precision_share"} & {name for name, _ in by_key}

    scored = {(s.metric, s.item_id): s for s in scores}
    for record in got:
        trace_id = attributes(record).get("ragwatch.trace_id") or record.trace_id.hex()
        sent = scored[(attributes(record)["gen_ai.evaluation.name"], trace_id)]
        assert record.time_unix_nano > 0 and record.severity_number == 9  # INFO
        banded = sent.value is not None and any(
            t.metric == sent.metric and t.contains(sent.value) for t in THRESHOLDS
        )
        case = Case(
            failed=sent.status == "failed",
            banded=banded,
            response_id=operations[trace_id].response_id,
        )
        assert_follows_convention(record, case)

    faithfulness = by_key[("faithfulness", TRACE)]
    assert faithfulness.span_id.hex() == CHAT_SPAN != ROOT_SPAN
    assert attributes(faithfulness) == {
        "gen_ai.evaluation.name": "faithfulness",
        "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "problem",
        "gen_ai.evaluation.explanation": attributes(faithfulness)["gen_ai.evaluation.explanation"],
        "gen_ai.response.id": RESPONSE,
        "ragwatch.run_id": "online-2026-12-04",
        "ragwatch.stratum": "docs-bot/es",
        "ragwatch.judge_model": "judge-model",
    }
    assert "made-up answers" in attributes(faithfulness)["gen_ai.evaluation.explanation"]
    assert (
        attributes(by_key[("answer_relevancy", TRACE)])["gen_ai.evaluation.score.label"]
        == "healthy"
    )
    # A metric without operating bands: a value, no label.
    assert "gen_ai.evaluation.score.label" not in attributes(
        by_key[("ragas_noise_sensitivity", "")]
    )

    failed = attributes(by_key[("noise_delta_f_reference", TRACE)])
    assert failed["error.type"] == "_OTHER" and "gen_ai.evaluation.score.value" not in failed
    assert failed["gen_ai.evaluation.explanation"] == "la respuesta del juez no era JSON"
    assert [k for r in got for k in attributes(r) if k == "error.type"] == ["error.type"]

    assert by_key[("faithfulness", "0" * 31 + "2")].span_id.hex() == ROOT_SPAN
    # A trace id that is no OTLP id: no made-up trace context, the response id ties the event to the
    # operation.
    sql = by_key[("faithfulness", "")]
    assert sql.span_id == b"" and attributes(sql)["ragwatch.trace_id"] == "tr-sql-store-id"
    assert attributes(sql)["gen_ai.response.id"] == "resp_sql_42"


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (
            {"span_id": ROOT_SPAN, "evaluated_span_id": CHAT_SPAN, "response_id": RESPONSE},
            (CHAT_SPAN, RESPONSE),
        ),
        ({"span_id": ROOT_SPAN}, (ROOT_SPAN, None)),
        ({"span_id": ROOT_SPAN, "evaluated_span_id": "[CREDIT_CARD_1a2b3c4d]"}, (ROOT_SPAN, None)),
        ({"span_id": "0" * 16, "response_id": ""}, (None, None)),
        ({"response_id": "resp_1"}, (None, "resp_1")),
    ],
)
def test_the_evaluated_span_is_the_llm_span_else_the_root(metadata, expected):
    operation = EvaluatedOperation.from_metadata(metadata)
    assert (operation.span_id, operation.response_id) == expected


def test_an_endpoint_that_refuses_the_events_fails_the_call():
    with (
        otlp_log_receiver(status=400) as (url, _),
        pytest.raises(RuntimeError, match="RAGWATCH_OTLP_ENDPOINT"),
    ):
        emit_evaluation_events(
            url,
            [score(TRACE, "faithfulness", 0.8)],
            {TRACE: EvaluatedOperation(CHAT_SPAN)},
            timeout_s=2,
        )


def test_the_online_eval_sends_every_applicable_score_on_the_span_it_judged(tmp_path):
    """The wiring: RAGWATCH_OTLP_ENDPOINT set, the online eval's finalize sends each stored score
    that applied, on the span the sampled row's metadata names."""
    import shutil
    from collections import Counter
    from datetime import date

    from pipelines.core.settings import Settings
    from pipelines.core.workspace import Workspace
    from pipelines.corpus.steps import index_corpus
    from pipelines.evaluation.runs.online import run_online_eval
    from pipelines.evaluation.runs.params import online_params
    from pipelines.stores.corpus import open_corpus_index
    from pipelines.stores.results import ResultsStore
    from tests.support.workspace_data import release_golden
    from tests.unit.pipelines.evaluation.runs.test_online import trace_rows, write_partition

    day = date(2026, 3, 1)
    settings = Settings(home=tmp_path / "home", anonymizer_key="k")
    shutil.copytree(ROOT / "tests" / "data" / "corpus", tmp_path / "corpus")
    index_corpus(settings, tmp_path / "corpus")
    with open_corpus_index(settings) as index:
        chunks = [(c.chunk_id, c.text) for c in index.chunks()][:4]
    rows = trace_rows({("docs", "en"): 6}, chunks)
    evaluated, responses = {}, {}
    for i, row in enumerate(
        rows
    ):  # as a span export's rows are sampled: OTLP ids, the spans in the metadata
        row["trace_id"] = f"{i + 1:032x}"
        metadata = {"trace_source": "otlp", "span_id": f"{i + 17:016x}"}
        if (
            i % 2 == 0
        ):  # an LLM span and its response id; the others had none, so the root stands in
            metadata |= {"evaluated_span_id": f"c{i:015x}", "response_id": f"chatcmpl-{i}"}
            responses[row["trace_id"]] = metadata["response_id"]
        evaluated[row["trace_id"]] = metadata.get("evaluated_span_id", metadata["span_id"])
        row["metadata"] = json.dumps(metadata)
    rows[-1]["metadata"] = "{}"  # one from the SQL store: no span id, so no trace context
    del evaluated[rows[-1]["trace_id"]]
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
    applicable = [s for s in stored if s.status != "skipped"]
    assert len(applicable) < len(stored), "the run should hold not-applicable scores to leave out"
    got = records(received)
    assert len(got) == len(applicable) > 6
    assert Counter(attributes(r)["gen_ai.evaluation.name"] for r in got) == Counter(
        s.metric for s in applicable
    )
    tied = [r for r in got if r.trace_id]
    assert {r.trace_id.hex() for r in tied} == set(evaluated)
    assert all(evaluated[r.trace_id.hex()] == r.span_id.hex() for r in tied)
    assert all(
        attributes(r).get("gen_ai.response.id") == responses.get(r.trace_id.hex()) for r in tied
    )
    assert {attributes(r)["ragwatch.trace_id"] for r in got if not r.trace_id} == {
        rows[-1]["trace_id"]
    }
    failed = {(s.item_id, s.metric) for s in stored if s.status == "failed"}
    for record in got:
        key = (
            attributes(record).get("ragwatch.trace_id") or record.trace_id.hex(),
            attributes(record)["gen_ai.evaluation.name"],
        )
        assert ("error.type" in attributes(record)) == (key in failed)
