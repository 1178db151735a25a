"""Tests mirror the code: each module has tests/unit/<its path>/test_<module>[_<aspect>].py or a reason here.

Placing a new test: beside the module it mainly tests (tests/unit/pipelines/privacy/test_residual.py for
pipelines/privacy/residual.py; a feature-named file is test_<module>_<aspect>.py), in tests/integration/ if it needs
services, the stack, the browser or the real model, and shared helpers in tests/support/. A new module without
a test fails here until it has one or a line in REASONS saying what exercises it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
CODE_ROOTS = ("pipelines", "deploy", "plugins", "dags")
HOUSE = {"unit/test_architecture.py", "unit/test_docs.py", "unit/test_layout.py", "unit/test_monitoring.py"}
"""Whole-house checks: they test no one module."""

REASONS = {
    "dags/golden_build.py": "a DAG file: parsed and run by tests/integration/test_dags.py",
    "dags/offline_eval.py": "a DAG file: parsed and run by tests/integration/test_dags.py",
    "dags/online_eval.py": "a DAG file: parsed and run by tests/integration/test_dags.py",
    "dags/trace_sampling.py": "a DAG file: parsed and run by tests/integration/test_dags.py",
    "deploy/airflow/worker_hostname.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/__main__.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/airflow_api.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/compose.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/differences.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/layout.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/lifecycle.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/model.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/monitoring.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/plan.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/postgres.py": "run by the stack: tests/integration/test_stack.py",
    "deploy/local_stack/state.py": "run by the stack: tests/integration/test_stack.py",
    "pipelines/agent_tools.py": "exercised by tests/integration/test_real_model.py, tests/unit/pipelines/models/test_offline.py",
    "pipelines/allocation.py": "exercised by tests/unit/pipelines/evaluation/runs/test_online.py",
    "pipelines/bench/clean_docs.py": "exercised by tests/unit/pipelines/bench/test_anonymize.py, tests/unit/pipelines/privacy/test_anonymizer_clean_text.py",
    "pipelines/bench/diagnose_power.py": "exercised by tests/unit/pipelines/evaluation/statistics/test_diagnose.py",
    "pipelines/bench/faq_questions.py": "run by hand once: cut tests/data/debian_faq.json.gz, which tests/unit/pipelines/evaluation/coverage/test_daily_heldout.py reads",
    "pipelines/bench/help_questions.py": "run by hand once: cut tests/data/gnome_help.json.gz, which tests/unit/pipelines/evaluation/coverage/test_daily_heldout_help.py reads",
    "pipelines/bench/judge_shift.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_judge_audit.py",
    "pipelines/bench/pii_cases.py": "exercised by tests/unit/pipelines/privacy/test_anonymizer_leak.py, tests/unit/pipelines/privacy/test_anonymizer_properties.py and 1 more",
    "pipelines/bench/plan.py": "exercised by tests/unit/pipelines/golden/test_steps_trace_questions.py",
    "pipelines/bench/postgres.py": "exercised by tests/integration/test_compose.py",
    "pipelines/bench/run_gate_power.py": "exercised by tests/unit/pipelines/evaluation/statistics/gate/test_run_gate.py",
    "pipelines/bench/sampled_day.py": "exercised by tests/unit/pipelines/bench/test_online.py",
    "pipelines/bench/synthetic_corpus.py": "exercised by tests/unit/pipelines/bench/test_index.py",
    "pipelines/cli/__main__.py": "NO TEST: nothing under tests/ reaches it",
    "pipelines/cli/bench.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/corpus.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/demo.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/evals.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/golden.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/judge.py": "reached through pipelines/cli/demo.py and others",
    "pipelines/cli/metrics.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/options.py": "reached through pipelines/cli/anonymize.py and others",
    "pipelines/cli/render/console.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_report.py",
    "pipelines/cli/render/evals.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_judge_audit.py, tests/unit/pipelines/evaluation/outputs/test_report.py",
    "pipelines/cli/render/gauges.py": "reached through pipelines/cli/demo.py and others",
    "pipelines/cli/render/golden.py": "reached through pipelines/cli/corpus.py and others",
    "pipelines/cli/render/recap.py": "exercised by tests/unit/pipelines/demo/test_recap.py",
    "pipelines/cli/render/traces.py": "reached through pipelines/cli/demo.py and others",
    "pipelines/cli/simulator.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/traces.py": "reached through pipelines/cli/main.py",
    "pipelines/cli/workspace.py": "reached through pipelines/cli/main.py",
    "pipelines/corpus/chunking.py": "exercised by tests/unit/pipelines/bench/test_index.py, tests/unit/pipelines/golden/test_generate.py and 1 more",
    "pipelines/corpus/documents.py": "exercised by tests/unit/pipelines/golden/test_generate.py, tests/unit/pipelines/stores/test_corpus.py",
    "pipelines/corpus/fingerprint.py": "reached through pipelines/corpus/steps.py",
    "pipelines/corpus/refresh.py": "exercised by tests/unit/pipelines/stores/test_corpus.py",
    "pipelines/corpus/steps.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_evaluation_events.py, tests/unit/pipelines/evaluation/runs/test_estimate.py and 5 more",
    "pipelines/demo/audit_labels.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_judge_audit.py",
    "pipelines/demo/corpus.py": "exercised by tests/unit/pipelines/evaluation/coverage/test_daily.py, tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py and 2 more",
    "pipelines/demo/corpus_files.py": "exercised by tests/integration/test_real_model.py, tests/unit/pipelines/models/test_embeddings.py and 1 more",
    "pipelines/demo/drill.py": "exercised by tests/unit/pipelines/demo/test_recap.py",
    "pipelines/demo/guides_es.py": "exercised by tests/unit/pipelines/stores/test_corpus.py",
    "pipelines/demo/seed.py": "reached through pipelines/cli/demo.py and others",
    "pipelines/demo/traces.py": "exercised by tests/unit/pipelines/demo/test_otlp_traffic.py, tests/unit/pipelines/evaluation/coverage/test_daily.py and 5 more",
    "pipelines/evaluation/coverage/clusters.py": "reached through pipelines/evaluation/coverage/daily.py",
    "pipelines/evaluation/coverage/estimate.py": "exercised by tests/unit/pipelines/evaluation/coverage/test_daily.py",
    "pipelines/evaluation/coverage/lexical.py": "exercised by tests/unit/pipelines/evaluation/coverage/test_daily.py, tests/unit/pipelines/evaluation/coverage/test_daily_heldout.py",
    "pipelines/evaluation/coverage/threshold.py": "exercised by tests/unit/pipelines/evaluation/coverage/test_daily.py",
    "pipelines/evaluation/coverage/topic_cut.py": "reached through pipelines/evaluation/coverage/daily.py",
    "pipelines/evaluation/metrics/correctness.py": "exercised by tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py, tests/unit/pipelines/models/test_offline.py",
    "pipelines/evaluation/metrics/judge_prompts.py": "exercised by tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py",
    "pipelines/evaluation/metrics/judge_retest.py": "exercised by tests/unit/pipelines/evaluation/statistics/test_judge_noise.py",
    "pipelines/evaluation/metrics/verdicts.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_judge_audit.py",
    "pipelines/evaluation/online_selection.py": "exercised by tests/unit/pipelines/evaluation/runs/test_online.py",
    "pipelines/evaluation/outputs/charts.py": "reached through pipelines/evaluation/outputs/report.py",
    "pipelines/evaluation/outputs/cost_trend.py": "exercised by tests/unit/pipelines/evaluation/runs/test_estimate.py",
    "pipelines/evaluation/outputs/formatting.py": "reached through pipelines/cli/evals.py and others",
    "pipelines/evaluation/outputs/inbox.py": "exercised by tests/unit/pipelines/evaluation/coverage/test_daily.py, tests/unit/pipelines/test_files_csv_safety.py",
    "pipelines/evaluation/outputs/push.py": "exercised by tests/integration/test_push.py, tests/unit/pipelines/evaluation/coverage/test_daily.py and 4 more",
    "pipelines/evaluation/outputs/report_template.py": "reached through pipelines/evaluation/outputs/report.py",
    "pipelines/evaluation/outputs/summary.py": "exercised by tests/integration/test_push.py, tests/unit/pipelines/demo/test_recap.py and 4 more",
    "pipelines/evaluation/results/coverage.py": "exercised by tests/unit/pipelines/demo/test_recap.py, tests/unit/pipelines/evaluation/coverage/test_daily.py",
    "pipelines/evaluation/results/run.py": "exercised by tests/integration/test_push.py, tests/unit/pipelines/demo/test_recap.py and 1 more",
    "pipelines/evaluation/runs/budget.py": "exercised by tests/unit/pipelines/models/test_budget.py",
    "pipelines/evaluation/runs/compare.py": "exercised by tests/unit/pipelines/evaluation/runs/test_offline.py",
    "pipelines/evaluation/runs/cost.py": "exercised by tests/unit/pipelines/evaluation/runs/test_offline.py, tests/unit/pipelines/evaluation/runs/test_online.py and 1 more",
    "pipelines/evaluation/runs/finalize.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_judge_audit.py, tests/unit/pipelines/evaluation/runs/test_offline.py",
    "pipelines/evaluation/runs/folder.py": "exercised by tests/unit/pipelines/evaluation/runs/test_offline.py, tests/unit/pipelines/evaluation/runs/test_online.py and 1 more",
    "pipelines/evaluation/runs/judge_batch.py": "exercised by tests/unit/pipelines/evaluation/runs/test_offline.py, tests/unit/test_architecture.py",
    "pipelines/evaluation/runs/params.py": "exercised by tests/integration/test_stack.py, tests/unit/pipelines/demo/test_recap.py and 6 more",
    "pipelines/evaluation/runs/prepare.py": "exercised by tests/unit/pipelines/evaluation/runs/test_offline.py",
    "pipelines/evaluation/runs/rag_prompt.py": "exercised by tests/integration/test_real_model.py, tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py and 2 more",
    "pipelines/evaluation/runs/target.py": "reached through pipelines/evaluation/runs/judge_batch.py and others",
    "pipelines/evaluation/statistics/aggregates.py": "exercised by tests/integration/test_push.py, tests/unit/pipelines/evaluation/outputs/test_judge_audit.py and 6 more",
    "pipelines/evaluation/statistics/bootstrap.py": "exercised by tests/unit/pipelines/evaluation/statistics/test_intervals.py, tests/unit/pipelines/evaluation/statistics/test_intervals_coverage.py",
    "pipelines/evaluation/statistics/compare.py": "exercised by tests/unit/pipelines/evaluation/statistics/gate/test_rule.py, tests/unit/pipelines/evaluation/statistics/test_intervals.py",
    "pipelines/evaluation/statistics/gate/gated_metrics.py": "exercised by tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py, tests/unit/pipelines/evaluation/statistics/gate/test_run_gate.py",
    "pipelines/evaluation/statistics/gate/level.py": "exercised by tests/unit/pipelines/evaluation/statistics/gate/test_run_gate.py",
    "pipelines/evaluation/statistics/judge_agreement.py": "exercised by tests/unit/pipelines/evaluation/outputs/test_judge_audit.py",
    "pipelines/evaluation/statistics/multiplicity.py": "exercised by tests/unit/pipelines/evaluation/statistics/gate/test_rule.py, tests/unit/pipelines/evaluation/statistics/test_diagnose.py and 1 more",
    "pipelines/evaluation/statistics/randomization.py": "exercised by tests/unit/pipelines/evaluation/statistics/gate/test_rule.py, tests/unit/pipelines/evaluation/statistics/test_intervals.py",
    "pipelines/evaluation/statistics/scores.py": "exercised by tests/integration/test_stack.py, tests/unit/pipelines/evaluation/statistics/test_diagnose.py and 1 more",
    "pipelines/golden/budget.py": "reached through pipelines/golden/steps.py",
    "pipelines/golden/cost.py": "reached through pipelines/golden/steps.py",
    "pipelines/golden/dataset.py": "exercised by tests/integration/test_versioning_s3.py, tests/unit/pipelines/evaluation/coverage/test_daily.py and 4 more",
    "pipelines/golden/estimate.py": "exercised by tests/unit/pipelines/evaluation/runs/test_estimate.py",
    "pipelines/golden/filters.py": "reached through pipelines/golden/steps.py",
    "pipelines/golden/params.py": "exercised by tests/integration/test_real_model.py, tests/integration/test_stack.py and 6 more",
    "pipelines/golden/plan.py": "exercised by tests/integration/test_real_model.py, tests/unit/pipelines/golden/test_generate.py and 2 more",
    "pipelines/golden/prompts.py": "exercised by tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py, tests/unit/pipelines/golden/test_generate.py and 1 more",
    "pipelines/golden/quality.py": "reached through pipelines/golden/steps.py",
    "pipelines/golden/review.py": "reached through pipelines/golden/steps.py",
    "pipelines/golden/split.py": "exercised by tests/unit/pipelines/golden/test_steps.py",
    "pipelines/handoff.py": "exercised by tests/unit/pipelines/evaluation/runs/test_offline.py, tests/unit/pipelines/evaluation/runs/test_online.py and 2 more",
    "pipelines/models/cache.py": "exercised by tests/integration/test_llm_cache.py, tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py and 1 more",
    "pipelines/models/embedding_batches.py": "exercised by tests/unit/pipelines/models/test_embeddings.py",
    "pipelines/models/minilm.py": "reached through pipelines/models/embeddings.py",
    "pipelines/models/openai_compatible.py": "exercised by tests/unit/pipelines/models/test_llm.py over HTTP against the simulator",
    "pipelines/models/offline_judge.py": "reached through pipelines/evaluation/metrics/correctness.py and others",
    "pipelines/models/prompts.py": "exercised by tests/unit/pipelines/models/test_embeddings.py, tests/unit/pipelines/models/test_llm.py and 1 more",
    "pipelines/models/ragas_adapter.py": "exercised by tests/unit/pipelines/evaluation/metrics/test_judge.py",
    "pipelines/models/shared_cache.py": "exercised by tests/integration/test_compose.py, tests/integration/test_llm_cache.py and 1 more",
    "pipelines/models/simulator.py": "exercised by tests/unit/pipelines/bench/test_eval.py, tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py and 8 more",
    "pipelines/models/usage.py": "exercised by tests/integration/test_push.py, tests/unit/pipelines/demo/test_recap.py",
    "pipelines/models/usage_estimate.py": "reached through pipelines/evaluation/runs/estimate.py and others",
    "pipelines/privacy/addresses.py": "reached through pipelines/privacy/recognizers.py",
    "pipelines/privacy/emails.py": "reached through pipelines/privacy/recognizers.py",
    "pipelines/privacy/es_nss.py": "exercised by tests/unit/pipelines/privacy/test_recognizers.py",
    "pipelines/privacy/fields.py": "reached through pipelines/privacy/anonymizer.py",
    "pipelines/privacy/identifiers.py": "reached through pipelines/privacy/phones.py and others",
    "pipelines/privacy/matching.py": "reached through pipelines/privacy/identifiers.py and others",
    "pipelines/privacy/names.py": "exercised by tests/unit/pipelines/privacy/test_recognizers.py",
    "pipelines/privacy/network.py": "reached through pipelines/privacy/recognizers.py",
    "pipelines/privacy/phones.py": "reached through pipelines/privacy/recognizers.py",
    "pipelines/privacy/residual/addresses.py": "reached through pipelines/privacy/residual/rules.py and others",
    "pipelines/privacy/residual/digit_runs.py": "exercised by tests/unit/pipelines/privacy/residual/test_screens.py",
    "pipelines/privacy/residual/iban_like.py": "exercised by tests/unit/pipelines/privacy/residual/test_screens.py",
    "pipelines/privacy/residual/normalize.py": "exercised by tests/unit/pipelines/privacy/residual/test_screens.py",
    "pipelines/privacy/secrets.py": "reached through pipelines/privacy/recognizers.py",
    "pipelines/privacy/spans.py": "exercised by tests/unit/pipelines/privacy/test_anonymizer_leak.py",
    "pipelines/privacy/street_types.py": "exercised by tests/unit/pipelines/privacy/test_anonymizer_families.py",
    "pipelines/privacy/views.py": "reached through pipelines/privacy/addresses.py and others",
    "pipelines/prompt_catalog.py": "exercised by tests/unit/pipelines/bench/test_eval.py, tests/unit/pipelines/evaluation/metrics/test_judge_simulator.py and 7 more",
    "pipelines/records.py": "exercised by tests/integration/test_push.py, tests/integration/test_real_model.py and 33 more",
    "pipelines/redact.py": "reached through pipelines/cli/render/console.py and others",
    "pipelines/settings.py": "exercised by tests/integration/test_compose.py, tests/integration/test_llm_cache.py and 20 more",
    "pipelines/stores/bm25.py": "exercised by tests/unit/pipelines/stores/test_corpus.py",
    "pipelines/stores/trace_sources/file_store.py": "reached through pipelines/stores/trace_sources/__init__.py and others",
    "pipelines/stores/trace_sources/otlp_file_exporter.py": "reached through pipelines/demo/otlp_traffic.py",
    "pipelines/stores/trace_sources/phoenix_spans.py": "reached through pipelines/stores/trace_sources/__init__.py",
    "pipelines/traces/prepare.py": "exercised by tests/unit/pipelines/cli/test_anonymize.py",
    "pipelines/traces/quality.py": "exercised by tests/unit/pipelines/traces/test_sampling.py",
    "pipelines/traces/residual_fields.py": "exercised by tests/unit/pipelines/privacy/test_memo.py",
    "pipelines/traces/shards.py": "reached through pipelines/traces/steps.py",
    "pipelines/traces/steps.py": "exercised by tests/integration/test_stack.py, tests/integration/test_versioning_s3.py and 9 more",
    "pipelines/validation.py": "exercised by tests/unit/pipelines/golden/test_steps.py, tests/unit/pipelines/traces/test_sampling.py",
    "pipelines/workspace.py": "exercised by tests/integration/test_stack.py, tests/integration/test_versioning_s3.py and 24 more",
    "plugins/airflow_local_settings.py": "run by the stack: tests/integration/test_stack.py",
    "plugins/ragwatch_airflow/settings.py": "exercised by tests/integration/test_dags.py",
    "plugins/ragwatch_plugin.py": "loaded by Airflow from plugins/: tests/integration/test_stack.py serves its page",
}
"""Modules without a test file of their own, and what exercises them instead."""


def modules() -> list[str]:
    return sorted(
        str(p.relative_to(ROOT)) for r in CODE_ROOTS for p in (ROOT / r).rglob("*.py") if p.name != "__init__.py"
    )


def mirrored_tests(module: str) -> list[Path]:
    path = Path(module)
    folder = TESTS / "unit" / path.parent
    return [
        t
        for t in folder.glob(f"test_{path.stem}*.py")
        if t.stem == f"test_{path.stem}" or t.stem.startswith(f"test_{path.stem}_")
    ]


def test_every_module_has_its_test_or_a_reason():
    missing = [m for m in modules() if not mirrored_tests(m) and m not in REASONS]
    assert not missing, f"modules with neither tests/unit/<path>/test_<module>.py nor a line in REASONS: {missing}"


def test_every_reason_is_still_needed():
    # A reason outlives its module or the day the module got its test: the table must not grow stale.
    stale = [m for m in REASONS if m not in modules() or mirrored_tests(m)]
    assert not stale, f"REASONS lists modules that are gone or have a test file now: {stale}"


def test_every_test_file_sits_at_a_mirrored_path():
    misplaced = []
    for test in sorted(TESTS.rglob("test_*.py")):
        rel = test.relative_to(TESTS)
        if rel.parts[0] == "data" or rel.parts[0] in {"integration"} or rel.as_posix() in HOUSE:
            continue
        if rel.parts[0] == "support":
            misplaced.append(f"{rel} (tests/support/ holds helpers, not tests)")
            continue
        code = ROOT.joinpath(*rel.parts[1:-1])
        words = test.stem.removeprefix("test_").split("_")
        stems = ["_".join(words[:n]) for n in range(len(words), 0, -1)]
        if rel.parts[0] != "unit" or not any((code / f"{stem}.py").is_file() for stem in stems):
            misplaced.append(str(rel))
    assert not misplaced, (
        f"test files neither at tests/unit/<module path>/test_<module>[_<aspect>].py nor in integration/: {misplaced}"
    )


def test_every_test_folder_is_a_package():
    # Without __init__.py two test files of the same name in two folders clash at import.
    folders = {
        f
        for p in TESTS.rglob("*.py")
        if "data" not in p.relative_to(TESTS).parts
        for f in p.parents
        if f == TESTS or TESTS in f.parents
    }
    assert not [str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists()]
