"""The trace-source pages' own configuration, run as written: each page's instrumentation snippet and its `answer`
function make an app (the real instrumentation libraries, the real OTLP/HTTP exporter), which answers a day of
questions through the simulator; an OTLP endpoint writes what it receives as the Collector's file exporter does, and
the day is sampled with the page's ragwatch settings. Only the Collector's address is changed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pipelines.models.simulator import running_simulator
from pipelines.prompt_catalog import all_prompts
from pipelines.stores.partitions import read_parts
from pipelines.stores.trace_sources.spans import Span, read_otlp_json
from pipelines.traces import steps
from pipelines.workspace import Workspace
from tests.support.otlp_receiver import otlp_receiver

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "how-to" / "trace-sources"
COLLECTOR = "http://otel-collector:4318"
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
    assert len(blocks("openinference.md", "python")) == 3  # the third exports from a Phoenix server: not run here
    assert "OpenAIInstrumentor().instrument()" in blocks("otlp.md", "python")[2]
    assert "register(" in blocks("openinference.md", "python")[0]


@pytest.mark.parametrize("app", sorted(APPS))
def test_a_day_instrumented_as_the_page_says_is_sampled_in_full(app, settings, tmp_path):
    page, setup, answer = APPS[app]
    python = blocks(page, "python")
    environment = {**exports(blocks("otlp.md", "bash")[0]), **exports(blocks(page, "bash")[0])}
    with running_simulator(prompts=all_prompts()) as simulator, otlp_receiver(tmp_path / "collector") as endpoint:
        env = {
            **os.environ,
            **{k: v.replace(COLLECTOR, endpoint) for k, v in environment.items() if k.startswith("OTEL_")},
            "PYTHONPATH": str(ROOT),
        }
        if page == "openinference.md":  # the page configures the endpoint in code, not in the environment
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
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert run.returncode == 0, run.stderr[-3000:]
    assert "Defaulting to" not in run.stderr, run.stderr[-2000:]  # a configuration value the library refused
    answers = json.loads((tmp_path / "answers.json").read_text())
    exported = tmp_path / "collector" / "traces.jsonl"
    starts = [s.start_ns for s in read_otlp_json(exported) if isinstance(s, Span)]
    day = datetime.fromtimestamp(min(starts) / 1e9, tz=timezone.utc).date()
    configured = settings.model_copy(
        update={"trace_source": environment["RAGWATCH_TRACE_SOURCE"], "trace_source_path": str(exported.parent)}
    )

    counts = steps.run_trace_sampling(configured, day, version=False, rate=1.0).counts
    assert (counts.population, counts.sampled, counts.quarantine_reasons) == (len(QUESTIONS), len(QUESTIONS), {})
    sampled = read_parts(Workspace.from_settings(configured).traces_partition(day).parts).to_pylist()
    assert sorted(row["question"] for row in sampled) == sorted(QUESTIONS)
    assert sorted(row["answer"] for row in sampled) == sorted(answers)
    assert all(row["app"] == "docs-bot" and row["model"] for row in sampled)
    assert all(len(row["contexts"]) == 2 and all(c["text"] for c in row["contexts"]) for row in sampled)
