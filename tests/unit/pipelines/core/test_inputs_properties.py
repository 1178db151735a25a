"""Hypothesis properties of the CLI's and the DAG params' argument validation
(pipelines/core/inputs.py): whatever text a person or a DAG run hands ragwatch, a value is either
refused with InvalidInput or lands exactly where its kind says, inside the workspace; the CLI
answers it with a clear error, never a traceback. tests/unit/pipelines/core/test_inputs.py tries the
known hostile values; these try everything else."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from pipelines.core import inputs
from pipelines.cli import app
from pipelines.core.workspace import Workspace

ROOT = Path("/workspace-root")
# Path-like and separator characters are what an attack needs: draw them often.
PATHISH = st.text(
    alphabet=st.sampled_from(list("./\\~:@+-_ \n\x00aZ09é")) | st.characters(), max_size=80
)
# Near-valid names too, so the accepted branch is exercised, not only refusals.
NAMEISH = st.from_regex(r"[A-Za-z0-9._:@+-]{1,20}", fullmatch=True)
DATEISH = st.from_regex(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}", fullmatch=True)
ANY_TEXT = st.one_of(st.text(max_size=80), PATHISH, NAMEISH, DATEISH)


def inside(path: Path, folder: Path) -> bool:
    # Lexical check on purpose: nothing here exists on disk, and ".." must not appear at all.
    return ".." not in path.parts and path.is_relative_to(folder)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_a_golden_set_name_is_refused_or_one_folder_under_golden(text):
    try:
        paths = Workspace(ROOT).golden(text)
    except inputs.InvalidInput as exc:
        assert "golden-set name" in str(exc)
        return
    assert paths.build.parent == ROOT / "golden" / "build" and paths.build.name == text
    assert re.fullmatch(
        inputs.GOLDEN_NAME_PATTERN, text
    )  # the DAG Param's JSON-schema pattern agrees


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, st.sampled_from(inputs.SUITES))
def test_a_target_name_is_refused_or_one_file_under_the_suites_folders(text, suite):
    workspace = Workspace(ROOT)
    try:
        run, report = (
            workspace.run_folder(suite, date(2026, 3, 1), text),
            workspace.report(suite, date(2026, 3, 1), text),
        )
    except inputs.InvalidInput as exc:
        assert "target name" in str(exc) or "report" in str(exc)
        return
    assert inside(run.root, ROOT / "runs" / suite) and run.root.parent == ROOT / "runs" / suite
    assert (
        report.parent == workspace.reports_dir / suite and report.name == f"2026-03-01_{text}.html"
    )


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_a_date_is_refused_or_the_calendar_day_it_spells(text):
    try:
        day = inputs.day(text)
    except inputs.InvalidInput:
        return
    assert day.isoformat() == text


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        ANY_TEXT,
        st.lists(st.sampled_from([*inputs.STRATA, "question", "answer", ""]), max_size=6).map(
            ",".join
        ),
    )
)
def test_strata_are_refused_or_only_categorical_fields(text):
    try:
        strata = inputs.strata(text)
    except inputs.InvalidInput:
        return
    assert strata and set(strata) <= set(inputs.STRATA) and len(strata) == len(set(strata))


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        ANY_TEXT, st.lists(st.integers(-5, 200), max_size=5).map(lambda ks: ",".join(map(str, ks)))
    )
)
def test_cut_offs_are_refused_or_whole_numbers_from_1_to_the_maximum(text):
    try:
        ks = inputs.cutoffs(text)
    except inputs.InvalidInput:
        return
    assert ks == sorted(set(ks)) and all(1 <= k <= inputs.K_MAX for k in ks)


@settings(max_examples=40, deadline=None)
@given(PATHISH)
def test_the_cli_answers_any_name_with_a_result_or_a_clear_error(tmp_path_factory, text):
    home = tmp_path_factory.mktemp("home")
    env = {"RAGWATCH_HOME": str(home), "RAGWATCH_ANONYMIZER_KEY": "test-key-not-secret"}
    result = CliRunner().invoke(app, ["golden", "summary", "--name", text], env=env)
    # Typer turns a refused value into exit code 2 with the kind named; anything else is a
    # traceback.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == 2:
        assert "golden-set name" in result.output or "Invalid value" in result.output
