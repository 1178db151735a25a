"""The trace-source pages' own configuration, run as written: each page's instrumentation snippet
and its `answer` function make an app (the real instrumentation libraries, the real OTLP/HTTP
exporter), which answers a day of questions through the simulator; an OTLP endpoint writes what it
receives as the Collector's file exporter does, and the day is sampled with the page's ragwatch
settings. Only the Collector's address is changed.

Phoenix's own export is run too: the traced RAG app (tests/support/traced_rag_app.py) sends a day to
a real Phoenix server through the page's `register(...)`, the page's export snippet writes the
project's span dataframe to Parquet, and that file is sampled. Only Phoenix's address and the output
folder are changed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from pipelines.cli.prompt_catalog import all_prompts
from pipelines.core.workspace import Workspace
from pipelines.models.simulator import running_simulator
from pipelines.stores.partitions import read_parts
from pipelines.stores.trace_sources.spans import Span, otlp_json_files, read_otlp_json
from pipelines.traces import steps
from tests.support.otlp_receiver import otlp_receiver
from tests.support.phoenix_server import phoenix_python, running_phoenix
from tests.support.traced_rag_app import Turn

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "how-to" / "trace-sources"
COLLECTOR = "http://otel-collector:4318"
PHOENIX = "http://phoenix:6006"
QUESTIONS = [
    "Which port does Qdrant use for the REST API?",
    "How long are nightly backups kept?",
    "¿En qué puerto escucha el servidor?",
    "¿Cuánto tiempo se guardan las copias de seguridad?",
]
HARNESS = """
import openai

MODEL = "gen-model"
client = openai.OpenAI(base_url={simulator!r}, api_key="not-needed", max_retries=0)
CHUNKS = {{
    "ops-ports#1": "Qdrant listens on port 6333 for the REST API. The gRPC interface uses port 6334.",
    "ops-backups#2": "Backups run every night at 02:00 UTC and are kept for 14 days.",
    "es-puertos#1": "El servidor escucha en el puerto 8080. La consola de administración usa el puerto 9090.",
    "es-copias#1": "Las copias de seguridad se hacen cada noche y se guardan durante catorce días.",
}}


def search(question):
    words = set(question.lower().strip("¿?").split())
    scored = sorted(((len(words & set(t.lower().split())) / len(words), c, t) for c, t in CHUNKS.items()), reverse=True)
    return [(chunk_id, round(0.5 + score / 2, 3), text) for score, chunk_id, text in scored[:2]]
"""
DRIVER = """
import json as _json
from opentelemetry import trace as _trace

_answers = [answer(_question) for _question in {questions!r}]
_trace.get_tracer_provider().shutdown()
open("answers.json", "w").write(_json.dumps(_answers))
"""


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (PAGES / page).read_text(), flags=re.DOTALL)


def exports(block: str) -> dict[str, str]:
    """The variables a bash block exports (`export A=1 B=2` lines)."""
    found = {}
    for line in block.splitlines():
        if line.startswith("export "):
            found.update(item.split("=", 1) for item in line.removeprefix("export ").split())
    return found


# (page, the snippet that sets up the instrumentation, the page whose `answer` it runs with)
APPS = {
    "otlp: OpenTelemetry's openai-v2": ("otlp.md", 0, 1),
    "otlp: OpenLLMetry": ("otlp.md", 2, 1),
    "openinference: Phoenix's register": ("openinference.md", 0, 1),
}


def test_the_pages_hold_the_snippets_this_test_runs():
    """A snippet added to a page must be added here, or it would go unrun."""
    assert len(blocks("otlp.md", "python")) == 3 and len(blocks("otlp.md", "bash")) == 1
    assert len(blocks("openinference.md", "python")) == 3
    assert "get_spans_dataframe(" in blocks("openinference.md", "python")[2]
    assert [len(blocks(page, "yaml")) for page in COLLECTOR_CONFIGS] == [1, 1, 1]
    assert "OpenAIInstrumentor().instrument()" in blocks("otlp.md", "python")[2]
    assert "register(" in blocks("openinference.md", "python")[0]


@pytest.mark.parametrize("app", sorted(APPS))
def test_a_day_instrumented_as_the_page_says_is_sampled_in_full(app, settings, tmp_path):
    page, setup, answer = APPS[app]
    python = blocks(page, "python")
    environment = {**exports(blocks("otlp.md", "bash")[0]), **exports(blocks(page, "bash")[0])}
    with (
        running_simulator(prompts=all_prompts()) as simulator,
        otlp_receiver(tmp_path / "collector") as endpoint,
    ):
        env = {
            **os.environ,
            **{
                k: v.replace(COLLECTOR, endpoint)
                for k, v in environment.items()
                if k.startswith("OTEL_")
            },
            "PYTHONPATH": str(ROOT),
        }
        if (
            page == "openinference.md"
        ):  # the page configures the endpoint in code, not in the environment
            env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
        script = "\n".join(
            [
                textwrap.dedent(HARNESS.format(simulator=simulator)),
                python[setup].replace(COLLECTOR, endpoint),
                python[answer],
                DRIVER.format(questions=QUESTIONS),
            ]
        )
        run = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stderr[-3000:]
    assert "Defaulting to" not in run.stderr, run.stderr[
        -2000:
    ]  # a configuration value the library refused
    answers = json.loads((tmp_path / "answers.json").read_text())
    exported = tmp_path / "collector" / "traces.jsonl"
    starts = [s.start_ns for s in read_otlp_json(exported) if isinstance(s, Span)]
    day = datetime.fromtimestamp(min(starts) / 1e9, tz=timezone.utc).date()
    configured = settings.model_copy(
        update={
            "trace_source": environment["RAGWATCH_TRACE_SOURCE"],
            "trace_source_path": str(exported.parent),
        }
    )

    counts = steps.run_trace_sampling(configured, day, version=False, rate=1.0).counts
    assert (counts.population, counts.sampled, counts.quarantine_reasons) == (
        len(QUESTIONS),
        len(QUESTIONS),
        {},
    )
    sampled = read_parts(
        Workspace.from_settings(configured).traces_partition(day).parts
    ).to_pylist()
    assert sorted(row["question"] for row in sampled) == sorted(QUESTIONS)
    assert sorted(row["answer"] for row in sampled) == sorted(answers)
    assert all(row["app"] == "docs-bot" and row["model"] for row in sampled)
    assert all(
        len(row["contexts"]) == 2 and all(c["text"] for c in row["contexts"]) for row in sampled
    )


PHOENIX_TURNS = [
    Turn("Which port does Qdrant use for the REST API?", language="en", feedback=1),
    Turn("¿En qué puerto escucha el servidor?", feedback=-1),
    Turn("How long are nightly backups kept?", agent=True),
    Turn("¿Cuánto tiempo se guardan las copias de seguridad?"),
]
PHOENIX_APP = """
import json
from pathlib import Path

from opentelemetry import trace

from tests.support.traced_rag_app import TracedRagApp, Turn

app = TracedRagApp({simulator!r}, Path("qdrant"), None, style="openinference", tracer_provider=trace.get_tracer_provider())
made = {{}}
for fields in {turns!r}:
    trace_id, answer = app.ask(Turn(**fields))
    made[trace_id] = answer
app.close()
Path("made.json").write_text(json.dumps(made))
"""


def wait_for_roots(
    phoenix: str, trace_ids: set[str], project: str, timeout_s: float = 30.0
) -> None:
    """Phoenix stores what it receives in batches: wait until each trace's root span, the last to
    end, is queryable."""
    from phoenix.client import Client

    deadline = time.monotonic() + timeout_s
    while True:
        frame = Client(base_url=phoenix).spans.get_spans_dataframe(
            project_identifier=project, limit=10_000
        )
        stored = (
            set(frame.loc[frame["parent_id"].isna(), "context.trace_id"]) if len(frame) else set()
        )
        if trace_ids <= stored:
            return
        assert time.monotonic() < deadline, (
            f"Phoenix holds {len(stored)} of {len(trace_ids)} root spans"
        )
        time.sleep(0.5)


def test_a_day_exported_from_phoenix_as_the_page_says_is_sampled_in_full(settings, tmp_path):
    register, _, export = blocks("openinference.md", "python")
    environment = exports(blocks("openinference.md", "bash")[0])
    output = re.search(r'to_parquet\("([^"]+)"\)', export).group(1)
    assert re.search(r"RAGWATCH_TRACE_SOURCE_PATH=(\S+)", export).group(1) == str(
        Path(output).parent
    )
    folder = tmp_path / "export"
    folder.mkdir()
    python = phoenix_python()
    with (
        running_phoenix(tmp_path / "phoenix", python) as phoenix,
        running_simulator(prompts=all_prompts()) as simulator,
    ):
        script = "\n".join(
            [
                register.replace(COLLECTOR, phoenix),
                PHOENIX_APP.format(
                    simulator=simulator, turns=[dataclasses.asdict(t) for t in PHOENIX_TURNS]
                ),
            ]
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))} | {
            "PYTHONPATH": str(ROOT)
        }
        run = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        made = json.loads((tmp_path / "made.json").read_text())
        wait_for_roots(phoenix, set(made), project="docs-bot")
        exec(export.replace(PHOENIX, phoenix).replace(str(Path(output).parent), str(folder)), {})

    frame = pq.read_table(folder / Path(output).name).to_pandas()
    day = frame["start_time"].min().date()
    configured = settings.model_copy(
        update={
            "trace_source": environment["RAGWATCH_TRACE_SOURCE"],
            "trace_source_path": str(folder),
        }
    )
    counts = steps.run_trace_sampling(configured, day, version=False, rate=1.0).counts
    assert (counts.population, counts.sampled, counts.quarantine_reasons) == (
        len(made),
        len(made),
        {},
    )
    sampled = {
        row["question"]: row
        for row in read_parts(
            Workspace.from_settings(configured).traces_partition(day).parts
        ).to_pylist()
    }
    assert sorted(sampled) == sorted(t.question for t in PHOENIX_TURNS)
    assert sorted(row["answer"] for row in sampled.values()) == sorted(made.values())
    for turn in PHOENIX_TURNS:
        row = sampled[turn.question]
        assert (row["app"], row["model"], row["user_feedback"]) == (
            "docs-bot",
            "gen-model",
            turn.feedback,
        )
        assert row["language"] == (turn.language or ("es" if "¿" in turn.question else "en"))
        assert len(row["contexts"]) == 3 and all(
            c["chunk_id"] and c["text"] for c in row["contexts"]
        )
        if turn.agent:
            calls = [
                (c["name"], json.loads(c["arguments"])) for c in row["tool_calls"]
            ]  # a partition holds JSON
            assert calls == [("vector_search", {"query": turn.question, "top_k": 5})]
        else:
            assert row["tool_calls"] == []


# No Collector can be installed here, so its configuration is checked, not run: each page's YAML,
# merged over the pages before it as the Collector merges several --config files (maps merged, lists
# replaced), must declare every component its pipelines name, and write where, and as, the page's
# ragwatch settings read.
COLLECTOR_CONFIGS = [
    "otlp.md",
    "openinference.md",
    "index.md",
]  # the later pages add to the otlp page's file
COMPONENTS = {"receivers": {"otlp"}, "processors": {"batch"}, "exporters": {"file", "otlphttp"}}
FILE_EXPORTER_KEYS = {
    "path",
    "format",
    "compression",
    "rotation",
    "flush_interval",
    "append",
    "group_by",
    "encoding",
}
ROTATION_KEYS = {"max_megabytes", "max_days", "max_backups", "localtime"}


def merged(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            merged(out[key], value)
            if isinstance(value, dict) and isinstance(out.get(key), dict)
            else value
        )
    return out


def rotated_name(live: Path, at: datetime) -> str:
    """The name the file exporter's rotation (lumberjack) gives a backup: `<stem>-<UTC time>.<ext>`,
    beside it."""
    return f"{live.stem}-{at.strftime('%Y-%m-%dT%H-%M-%S.%f')[:-3]}{live.suffix}"


@pytest.mark.parametrize("upto", range(len(COLLECTOR_CONFIGS)), ids=COLLECTOR_CONFIGS)
def test_the_collector_configuration_writes_what_the_source_reads(upto, tmp_path):
    config: dict = {}
    for page in COLLECTOR_CONFIGS[: upto + 1]:
        config = merged(config, yaml.safe_load(blocks(page, "yaml")[0]))
    assert set(config) <= {*COMPONENTS, "connectors", "extensions", "service"}
    for kind, known in COMPONENTS.items():
        assert {name.split("/")[0] for name in config[kind]} <= known, config[kind]
    for pipeline, wiring in config["service"]["pipelines"].items():
        assert (
            pipeline.split("/")[0] in ("traces", "logs", "metrics")
            and wiring["receivers"]
            and wiring["exporters"]
        )
        for kind in COMPONENTS:
            assert set(wiring.get(kind, [])) <= set(config[kind]), (pipeline, kind)

    files = {
        name: options
        for name, options in config["exporters"].items()
        if name.split("/")[0] == "file"
    }
    assert (
        list(files) == ["file/ragwatch"]
        and "file/ragwatch" in config["service"]["pipelines"]["traces"]["exporters"]
    )
    exporter = files["file/ragwatch"]
    assert (
        set(exporter) <= FILE_EXPORTER_KEYS and set(exporter.get("rotation", {})) <= ROTATION_KEYS
    )
    assert exporter.get("format", "json") == "json" and exporter.get("compression") in (
        None,
        "zstd",
    )
    pages = [page for page in COLLECTOR_CONFIGS[: upto + 1] if blocks(page, "bash")]
    folder = Path(exports(blocks(pages[-1], "bash")[0])["RAGWATCH_TRACE_SOURCE_PATH"])
    live = Path(exporter["path"])
    assert live.parent == folder, f"the exporter writes {live}, the source reads {folder}"

    # Rotated files stay in that folder, and their names sort in time order before the file being
    # written.
    written = tmp_path / live.name
    backups = [
        tmp_path / rotated_name(live, datetime(2026, 12, day, 23, 59, 1, tzinfo=timezone.utc))
        for day in (9, 10)
    ]
    for path in [written, *backups]:
        path.write_bytes(b"")
    assert otlp_json_files(tmp_path) == [*backups, written]
