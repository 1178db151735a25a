"""The golden-set build end to end with the offline backend, the real embedding model and Qdrant
local mode."""

import csv
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from pipelines.corpus.steps import index_corpus
from pipelines.golden import steps
from pipelines.golden.dataset import load_golden_dataset, read_items, to_ragas_dataset
from pipelines.golden.params import load_golden_params
from pipelines.golden.plan import tool_jobs, tool_seeds
from pipelines.golden.split import assemble, floor_shortfalls, hash_split
from pipelines.core.handoff import IncompleteHandoff
from pipelines.core.records import GoldenItem
from pipelines.core.files import file_sha256
from pipelines.stores.partitions import read_manifest
from pipelines.core.validation import ValidationFailed
from pipelines.core.versioning import git
from tests.conftest import ROOT
from tests.support.simulated import on_simulator

CORPUS = ROOT / "tests" / "data" / "corpus"
DAY = date(2026, 11, 30)
SMALL = {
    "seeds": 8,
    "questions_per_seed": 2,
    "multi_hop": 4,
    "adversarial": 4,
    "tool_triples": 3,
    "from_traces": 0,
    "batch_size": 8,
}


@pytest.fixture
def corpus(tmp_path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS, folder)
    return folder


@pytest.fixture
def built(settings, corpus):
    index_corpus(settings, corpus)
    params = load_golden_params(settings, **SMALL)
    result = steps.build_golden(settings, params, logical_date=DAY)
    return settings, params, result


def published_items(settings, params):
    return read_items(steps.paths(settings, params.name).released_items)


def test_a_build_covers_every_stratum_in_the_chunks_language(built):
    settings, params, result = built
    items = published_items(settings, params)
    assert result.release.version == "v1" and result.release.tag == "golden/demo/v1"
    assert {i.qtype for i in items} == {"single_hop", "multi_hop", "adversarial", "tool"}
    assert {i.split for i in items} == {"dev", "test"}
    assert all(i.generator_model == "ragwatch-offline-deterministic" for i in items)
    spanish = [i for i in items if i.language == "es"]
    assert spanish and all("¿" in i.question or i.qtype == "tool" for i in spanish)
    for item in items:
        if item.qtype in ("single_hop", "multi_hop"):
            assert item.gold_chunk_ids and len(item.reference_contexts) == len(item.gold_chunk_ids)
        if item.qtype == "adversarial":
            assert (
                not item.gold_chunk_ids
                and "información" in item.reference_answer
                or "information" in item.reference_answer
            )
        if item.qtype == "tool":
            assert (
                item.expected_tool in ("vector_search", "sql_query", "web_search")
                and item.expected_args
            )
    multi = [i for i in items if i.qtype == "multi_hop"]
    assert {i.variant for i in multi} <= {"bridge", "boundary"} and all(
        2 <= len(i.gold_chunk_ids) <= 4 for i in multi
    )
    manifest = read_manifest(steps.paths(settings, params.name).released_manifest)
    # 3 tool triples asked, 18 planned on a 9-chunk corpus: the test split can gate the tool
    # metrics.
    assert (
        manifest["planned"]["tool"] == 18
        and sum(i.qtype == "tool" and i.split == "test" for i in items) >= 10
    )
    assert [line.split(":")[0] for line in manifest["test_shortfalls"]] == [
        "adversarial",
        "multi_hop",
    ]
    funnel = manifest["funnel"]
    assert funnel["generated"] >= funnel["kept"] == len(items)
    cost = manifest["cost"]
    assert cost["kept"] == len(items) and cost["generated"] == funnel["generated"]
    assert (
        cost["total"]["requests"] == cost["generator"]["requests"] + cost["judge"]["requests"] > 0
    )
    assert (
        cost["per_kept_item"]["requests"] == round(cost["total"]["requests"] / len(items), 2) <= 3
    )
    assert git("tag", "--list", cwd=settings.resolved_workspace).split() == ["golden/demo/v1"]


def test_a_rebuild_of_an_unchanged_corpus_publishes_nothing_new(built):
    settings, params, _ = built
    published = steps.paths(settings, params.name).released_items
    before = file_sha256(published)
    again = steps.build_golden(settings, params, logical_date=DAY)
    assert again.release.version == "v1"
    assert file_sha256(published) == before


def test_a_corpus_change_regenerates_only_stale_items_and_keeps_the_test_split(built, corpus):
    settings, params, _ = built
    before = {i.item_id: i for i in published_items(settings, params)}
    doc = corpus / "guides" / "limits.md"
    doc.write_text(
        doc.read_text().replace(
            "twenty thousand requests per day", "thirty thousand requests per day"
        )
    )
    report = index_corpus(settings, corpus)
    assert report["documents_updated"] == 1 and report["documents_unchanged"] == 3

    result = steps.build_golden(settings, params, logical_date=DAY)
    assert result.release.version == "v2"
    manifest = read_manifest(steps.paths(settings, params.name).released_manifest)
    after = {i.item_id: i for i in published_items(settings, params)}
    stale = set(manifest["stale"])
    assert stale, "items citing the edited chunk must be flagged stale"
    assert all(any("limits.md" in g for g in before[s].gold_chunk_ids) for s in stale)
    assert not stale & set(after)
    for item_id, item in before.items():
        if item_id not in stale:
            assert after[item_id] == item  # kept verbatim, split included
    for new_id, old_id in manifest["replacements"].items():
        assert after[new_id].split == before[old_id].split
    new_test = {i for i, it in after.items() if it.split == "test"} - {
        i for i, it in before.items() if it.split == "test"
    }
    assert new_test <= set(manifest["replacements"])


def test_a_failed_validation_publishes_nothing(built):
    settings, params, _ = built
    p = steps.paths(settings, params.name)
    published_sha = file_sha256(p.released_items)
    plan = steps.plan_golden(settings, params, logical_date=DAY)
    steps.generate_golden(settings, params.name, plan.batches)
    steps.filter_golden(settings, params)
    steps.split_golden(settings, params)
    table = pq.read_table(p.staged_items)
    rows = table.to_pylist()
    rows[0]["gold_chunk_ids"] = ["vanished.md#gone/0-deadbeef"]
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), p.staged_items)
    with pytest.raises(ValidationFailed, match="_gold_missing") as failure:
        steps.validate_golden(settings, params.name)
    assert rows[0]["item_id"] in str(failure.value)
    assert file_sha256(p.released_items) == published_sha


def test_hand_written_items_are_matched_imported_and_never_filtered(built, tmp_path):
    settings, params, _ = built
    sheet = tmp_path / "human.csv"
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(
            fh, fieldnames=["question", "reference_answer", "gold_passages", "split"]
        )
        writer.writeheader()
        writer.writerow(
            {
                "question": "¿Cuánto dura una instantánea de Qdrant?",
                "reference_answer": "Treinta días.",
                "gold_passages": "se guardan durante treinta días",
                "split": "",
            }
        )
        writer.writerow(
            {
                "question": "What is the burst refill rate?",
                "reference_answer": "Five requests per second.",
                "gold_passages": "The burst bucket refills at five requests per second",
                "split": "dev",
            }
        )
        writer.writerow(
            {
                "question": "Who wrote this?",
                "reference_answer": "Nobody",
                "gold_passages": "this passage is in no document at all",
                "split": "",
            }
        )
    result = steps.import_human(settings, params.name, sheet)
    assert (
        result.imported == 2
        and len(result.problems) == 1
        and "no chunk contains" in result.problems[0]
    )
    steps.build_golden(settings, params, logical_date=DAY)
    human = [i for i in published_items(settings, params) if i.source == "human"]
    assert {(i.language, i.split) for i in human} == {("es", "test"), ("en", "dev")}
    assert all(i.gold_chunk_ids and i.review == "accepted" for i in human)


def test_review_round_trip_applies_decisions_and_reports_agreement(built, tmp_path):
    settings, params, _ = built
    export = steps.export_review(settings, params.name, tmp_path / "review", 0.2)
    assert export.rows >= 4 and export.kept >= 1
    with open(export.csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert "_filter" not in rows[0]
    rows[0]["decision"], rows[1]["decision"] = "reject", "edit"
    rows[1]["edited_question"] = "¿Pregunta corregida por una revisora?"
    for row in rows[2:]:
        row["decision"] = "accept"
    with open(export.csv, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = steps.import_review(settings, params.name, export.csv)
    assert result.decisions == len(rows)
    assert result.agreement["n"] == len(rows) and 0 <= result.agreement["agreement"] <= 1

    steps.build_golden(settings, params, logical_date=DAY)
    items = {i.item_id: i for i in published_items(settings, params)}
    assert rows[0]["item_id"] not in items
    if (
        rows[1]["item_id"] in items
    ):  # a filter reject the reviewer edited stays out: filters still apply
        assert items[rows[1]["item_id"]].question == "¿Pregunta corregida por una revisora?"
    accepted = [items[r["item_id"]] for r in rows[2:] if r["item_id"] in items]
    assert accepted and all(i.review == "accepted" for i in accepted)


def test_a_published_version_loads_as_datasets_and_ragas_in_one_call(built, corpus):
    settings, params, _ = built
    v1_ids = sorted(i.item_id for i in published_items(settings, params))
    test_split = load_golden_dataset(settings, params.name, split="test")
    assert test_split.num_rows > 0 and set(test_split["split"]) == {"test"}
    assert set(test_split.column_names) >= {
        "question",
        "reference_answer",
        "gold_chunk_ids",
        "qtype",
        "item_id",
    }
    ragas_set = to_ragas_dataset(test_split)
    assert (
        len(ragas_set) == test_split.num_rows
        and ragas_set[0].user_input == test_split[0]["question"]
    )

    doc = corpus / "guides" / "deploy.md"
    doc.write_text(doc.read_text().replace("two CPU cores", "four CPU cores"))
    index_corpus(settings, corpus)
    assert steps.build_golden(settings, params, logical_date=DAY).release.version == "v2"
    assert sorted(i.item_id for i in published_items(settings, params)) != v1_ids
    old = load_golden_dataset(settings, params.name, version="v1", split=None)
    assert sorted(old["item_id"]) == v1_ids


def test_dvc_repro_rebuilds_the_set_outside_airflow(settings, corpus):
    index_corpus(settings, corpus)
    workspace = settings.resolved_workspace
    params_file = workspace / "params.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["golden"].update(SMALL)
    params_file.write_text(yaml.safe_dump(params))
    env = {
        **os.environ,
        "RAGWATCH_HOME": str(settings.home.resolve()),
        "RAGWATCH_WORKSPACE": str(workspace),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    run = subprocess.run(
        [sys.executable, "-m", "dvc", "repro"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (workspace / "golden" / "build" / "demo" / "staged" / "items.parquet").exists()
    assert (workspace / "dvc.lock").exists()
    again = subprocess.run(
        [sys.executable, "-m", "dvc", "repro"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "didn't change, skipping" in again.stdout or "up to date" in again.stdout


def test_generation_through_the_real_client_over_http_costs_no_calls_on_a_rerun(settings, corpus):
    from pipelines.models.simulator import SimulatorKnobs, running_simulator
    from pipelines.cli.prompt_catalog import all_prompts

    index_corpus(settings, corpus)
    # One batch for the whole plan: the rerun below is that batch's mapped task run again.
    params = load_golden_params(settings, **{**SMALL, "batch_size": 10_000})
    knobs = SimulatorKnobs(latency_s=0.01, capacity=8, error_rate=0.1, malformed_rate=0.1, seed=3)
    with running_simulator(knobs, prompts=all_prompts()) as url:
        endpoint = {"base_url": url, "max_retries": 6, "timeout_s": 10}
        online = settings.model_copy(
            update={
                "llm_backend": "openai",
                "generator": settings.generator.model_copy(
                    update={**endpoint, "model": "gen-model"}
                ),
                "judge": settings.judge.model_copy(update={**endpoint, "model": "judge-model"}),
            }
        )
        plan = steps.plan_golden(online, params, logical_date=DAY)
        first = steps.generate_golden_batch(online, params.name, 0, plan.jobs)
        assert (
            first.failed_jobs == 0 and first.llm["calls"] >= plan.jobs and first.llm["retries"] > 0
        )
        second = steps.generate_golden_batch(online, params.name, 0, plan.jobs)
        assert second.llm["calls"] == 0 and second.llm["cache_hits"] == plan.jobs
        assert second.items == first.items
        filtered = steps.filter_golden(online, params)
        assert filtered.judge_model == "judge-model"
    items = [
        json.loads(line)
        for line in steps.paths(online, params.name).generated_part(0).read_text().splitlines()
    ]
    assert {i["generator_model"] for i in items} == {"gen-model"}


def test_a_lost_generated_part_fails_the_filter_naming_its_batch(settings, corpus):
    index_corpus(settings, corpus)
    params = load_golden_params(settings, **SMALL)
    plan = steps.plan_golden(settings, params, logical_date=DAY)
    steps.generate_golden(settings, params.name, plan.batches)
    p = steps.paths(settings, params.name)
    (start, end), lost = plan.batches[1], p.generated_part(plan.batches[1][0])
    lost.unlink()  # written on a worker whose disk this one cannot see
    (p.parts / "part-999999.jsonl").write_text("")
    with pytest.raises(IncompleteHandoff) as raised:
        steps.filter_golden(settings, params)
    message = str(raised.value)
    assert f"missing 1: batch {start}-{end - 1} (map index 1) ({lost.name})" in message
    assert "part-999999.jsonl" in message and "rerun the golden_build `generate` task" in message
    assert not p.kept.exists()  # nothing filtered from a smaller set


def test_the_build_cost_counts_every_request_the_server_saw(settings, corpus):

    from pipelines.models.simulator import SimulatorKnobs, running_simulator, served_stats
    from pipelines.cli.prompt_catalog import all_prompts

    index_corpus(settings, corpus)
    params = load_golden_params(settings, **SMALL)
    # Injected 500s and malformed replies: retries and repair rounds are requests too.
    knobs = SimulatorKnobs(latency_s=0.0, capacity=8, error_rate=0.1, malformed_rate=0.1, seed=5)
    with running_simulator(knobs, prompts=all_prompts()) as url:
        online = on_simulator(settings, url, cache=False, max_retries=6)
        plan = steps.plan_golden(online, params, logical_date=DAY)
        steps.generate_golden(online, params.name, plan.batches)
        filtered = steps.filter_golden(online, params)
        served = served_stats(url)
    cost = filtered.cost
    assert (
        served["faults"]
        and cost["total"]["requests"]
        == served["requests"]
        == served["endpoints"]["chat/completions"]
    )
    assert cost["total"]["prompt_tokens"] > 0 and cost["total"]["completion_tokens"] > 0
    kept, generated = filtered.funnel["kept"], filtered.funnel["generated"]
    assert (cost["kept"], cost["generated"]) == (kept, generated) and kept > 0
    for key in ("requests", "prompt_tokens", "completion_tokens"):
        assert cost["per_kept_item"][key] == round(cost["total"][key] / kept, 2)
        assert cost["per_generated_item"][key] == round(cost["total"][key] / generated, 2)


# --- enough tool triples to gate ------------------------------------------------------------------


@dataclass
class _Chunk:
    chunk_id: str
    document: str
    section: str = "s"
    type: str = "md"
    language: str = "en"
    text: str = " ".join(["word"] * 30)


def _golden(item_id: str, qtype: str, split: str = "test") -> GoldenItem:
    return GoldenItem(
        item_id=item_id,
        question=f"q {item_id}",
        reference_answer="a",
        qtype=qtype,
        language="en",
        source="corpus",
        source_ref=f"doc#s/{item_id}",
        split=split,
        generator_model="m",
        corpus_version="c",
        created_at="2026-11-30",
    )


def test_the_plan_asks_for_the_tool_triples_a_gate_needs_and_lends_chunks_to_more_tools(
    settings, caplog
):
    params = load_golden_params(settings, **SMALL)  # 3 tool triples asked, dev share 0.3
    assert tool_jobs(params, 10) == 18  # 10 / 0.7 test share / 0.8 after rejects
    assert (
        tool_jobs(params, 0) == 3
        and tool_jobs(params.model_copy(update={"tool_triples": 0}), 10) == 0
    )
    assert tool_jobs(params.model_copy(update={"tool_triples": 30}), 10) == 30
    chunks = [_Chunk(f"doc{n}#s/{n}-0000000{n}", f"doc{n}") for n in range(4)]
    first_round = tool_seeds(chunks, 4)
    pairs = tool_seeds(chunks, 10)
    assert (
        pairs[:4] == first_round and len({(c.chunk_id, t) for c, t in pairs}) == 10
    )  # job ids of round 1 kept
    assert all(sum(c is chunk for c, _ in pairs) <= 3 for chunk in chunks)
    assert len(tool_seeds(chunks, 20)) == 12 and "4 chunks usable as tool seeds" in caplog.text


def test_the_test_split_holds_a_floor_of_each_question_type_and_says_when_it_cannot():
    generated = [_golden(f"tool-{n}", "tool") for n in range(14)] + [
        _golden(f"single-{n}", "single_hop") for n in range(40)
    ]
    fresh = assemble(generated, [], None, set(), dev_fraction=0.6, min_test=10)
    test = Counter(i.qtype for i in fresh.items if i.split == "test")
    assert test["tool"] == 10 and test["single_hop"] >= 10 and fresh.floor_additions
    by_hash = {i.item_id: hash_split(i.item_id, 0.6) for i in generated}
    moved = {i.item_id for i in fresh.items if i.split != by_hash[i.item_id]}
    assert moved == set(fresh.floor_additions) and all(by_hash[i] == "dev" for i in moved)

    # A released set keeps every split; only new items fill the floor, and the validation allows
    # them.
    released = [_golden(f"tool-{n}", "tool", "test" if n < 3 else "dev") for n in range(5)]
    new = [_golden(f"new-tool-{n}", "tool") for n in range(8)]
    grown = assemble(new, [], released, set(), dev_fraction=0.3, min_test=10)
    splits = {i.item_id: i.split for i in grown.items}
    assert all(splits[i.item_id] == i.split for i in released)
    assert sum(s == "test" for s in splits.values()) == 10 and len(grown.floor_additions) == 7
    assert floor_shortfalls(grown.items, 10, planned_tool=13) == []
    short = floor_shortfalls(released + [_golden("adv", "adversarial")], 10, planned_tool=18)
    assert len(short) == 2 and short[0].startswith("adversarial: 1 test item(s), fewer than 10")
    assert short[1] == (
        "tool: 3 test item(s), fewer than 10 (the gate's min pairs); the build kept 5 of 18 planned: "
        "tool selection and tool-call accuracy cannot be gated"
    )
