"""The held-out check of golden coverage on real questions the project did not write: the Debian FAQ
in French, Portuguese, Italian, German and Dutch (tests/data/debian_faq.json.gz, cut by
harness/ragwatch_harness/bench/faq_questions.py; why the FAQ and not Spanish docs is said there),
one chapter held back from the golden set.

The FAQ's chapters are its subjects; its section headings are the questions users asked, each with
the answer that follows as its passage. The golden set and the two days are built as
tests/support/heldout.py says: a quarter of day 2's traffic moves to the held-back chapter's
questions.

The shipped embedding model is English-only: its cosine does not tell a user question's own passage
from other chapters' in these languages (ROC AUC 0.62, uncalibrated). The lexical signal
(coverage/lexical.py) does better (0.72), and the coverage step calibrates on it: the shift drops
the matched share 0.580 → 0.470 and coverage, corrected for the matcher's error rates, 0.904 → 0.605
(true 1.000 → 0.756), each day outside the other day's interval, a significant drop, and the largest
uncovered topic is the held-back chapter (topics are cut on both signals side by side, signal.py).
What it does not reach: the two intervals still overlap (by 0.010: the drop is 0.110, the intervals'
inner half-widths 0.120, which takes about 275 distinct questions a day at this separation; the FAQ
has 233). GNOME Help, a larger manual, clears them (test_daily_heldout_help.py).
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from pipelines.core.workspace import Workspace
from pipelines.evaluation.coverage import lexical
from pipelines.evaluation.coverage.daily import measure_day_coverage
from tests.support.heldout import (
    DAY_1,
    DAY_2,
    EVIDENCE_EVERY,
    release_golden,
    traffic,
    true_coverage,
    write_day,
)
from tests.support.memo_embedder import memoized_coverage_embedder

FAQ = Path(__file__).resolve().parents[4] / "data" / "debian_faq.json.gz"
PASSAGE_WORDS = 120
"""The answers' first words kept as passages (a RAG chunk's size): 60 leaves the held-back chapter's
questions passing for covered more often (0.24 against 0.18 of them in fr/pt/it)."""
HELD_BACK = 7
""""Les bases du système de gestion des paquets Debian": the FAQ's largest chapter (15 questions a
language)."""
LANGUAGES = ("fr", "pt", "it", "de", "nl")
TEMPLATE = {
    "fr": "Que dit la documentation sur « {} » ?",
    "pt": "O que diz a documentação sobre «{}»?",
    "it": "Cosa dice la documentazione su «{}»?",
    "de": "Was sagt die Dokumentation über „{}“?",
    "nl": "Wat zegt de documentatie over „{}”?",
}


def faq_entries() -> list[dict]:
    with gzip.open(FAQ, "rt", encoding="utf-8") as fh:
        return [
            {**e, "answer": " ".join(e["answer"].split()[:PASSAGE_WORDS])} for e in json.load(fh)
        ]


@pytest.fixture(scope="module")
def faq_days(tmp_path_factory):
    """The golden set released, and the two days' partitions: (settings, day 1 parts, day 2 parts,
    counts)."""
    from pipelines.core.settings import Settings

    patch = pytest.MonkeyPatch()
    memoized_coverage_embedder(patch)

    settings = Settings(home=tmp_path_factory.mktemp("faq") / "home", anonymizer_key="k")
    entries = faq_entries()
    covered = [e for e in entries if e["chapter"] != HELD_BACK]
    held = [e for e in entries if e["chapter"] == HELD_BACK]
    workspace = Workspace.from_settings(settings)
    release_golden(
        workspace,
        "demo",
        covered,
        chunk_id=lambda e: f"faq/ch{e['chapter']:02d}.{e['language']}#{e['section']}/0",
        template=TEMPLATE,
    )
    day_1, day_2 = traffic(covered, held)
    counts = {
        "covered": len(covered),
        "asked": len(set(day_1)),
        "held": len(held),
        "day_1": len(day_1),
        "day_2": len(day_2),
        "true_1": true_coverage(day_1, covered),
        "true_2": true_coverage(day_2, covered),
    }
    yield settings, write_day(workspace, DAY_1, day_1), write_day(workspace, DAY_2, day_2), counts
    patch.undo()


def test_the_lexical_signal_is_calibrated_where_the_english_model_is_not(faq_days):
    settings, day_1, _, counts = faq_days
    result = measure_day_coverage(settings, day_1)
    t = result.threshold
    assert result.status == "ok", result.reason
    # Every third covered entry is a user question with its passage: all are evidence, each one a
    # positive.
    assert t.positives == t.evidence == len(range(0, counts["covered"], EVIDENCE_EVERY))
    assert t.method == "calibrated" and t.signal == lexical.SIGNAL and t.auc >= 0.7
    # The embedding model's own figure is in the note, and it is the weaker one.
    embedding_auc = float(t.note.split("embedding cosine: ROC AUC ")[1][:4])
    assert embedding_auc < 0.7 <= t.auc
    print(
        f"\nheld-out FAQ {'/'.join(LANGUAGES)}: {t.signal} threshold {t.value:.3f} (TPR {t.tpr:.2f}, FPR {t.fpr:.2f}, "
        f"AUC {t.auc:.2f}; embedding cosine AUC {embedding_auc:.2f}) on {t.positives} user questions"
    )


def test_with_the_english_models_cosine_set_by_the_user_coverage_says_whose_threshold(faq_days):
    settings, day_1, _, counts = faq_days
    mine = settings.model_copy(update={"coverage_threshold": 0.55})
    result = measure_day_coverage(mine, day_1)
    assert result.status == "ok" and result.threshold.method == "setting"
    assert (
        result.threshold.signal == "embedding cosine" and "not calibrated" in result.threshold.note
    )
    assert result.threshold.auc < 0.7  # what the user's setting rests on, reported with it
    # n is the distinct questions; the traces are the volume.
    assert (result.day.questions, result.day.traces) == (counts["asked"], counts["day_1"])


def test_a_quarter_of_the_traffic_moving_to_the_held_back_chapter_is_a_significant_drop(faq_days):
    settings, day_1, day_2, counts = faq_days
    before, after = measure_day_coverage(settings, day_1), measure_day_coverage(settings, day_2)
    assert before.status == after.status == "ok"
    assert (after.day.questions, after.day.traces) == (
        counts["asked"] + counts["held"],
        counts["day_2"],
    )
    b, a = before.day, after.day
    held = {e["question"] for e in faq_entries() if e["chapter"] == HELD_BACK}
    print(
        f"\nheld-out FAQ: day 1 {b.ratio:.3f} [{b.ci_low:.3f}, {b.ci_high:.3f}] (level's interval [{b.level_ci_low:.3f},"
        f" {b.level_ci_high:.3f}]) matched {b.matched:.3f} n={b.questions} ({b.traces} traces), true "
        f"{counts['true_1']:.3f}; day 2 {a.ratio:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}] (level's interval "
        f"[{a.level_ci_low:.3f}, {a.level_ci_high:.3f}]) matched {a.matched:.3f} n={a.questions} ({a.traces} traces), "
        f"true {counts['true_2']:.3f}; topic cut "
        f"{after.topic_cut.similarity} ({after.topic_cut.method}, ARI {after.topic_cut.adjusted_rand:.2f}); topics "
        f"(language, questions, held-back representatives of 3): "
        f"{[(c.language, c.questions, sum(r.question in held for r in c.representatives)) for c in after.clusters[:5]]}; "
        f"likely the matcher's misses {[(c.language, c.questions, c.matched_questions, sum(r.question in held for r in c.representatives)) for c in after.matcher_misses]}"
    )
    # The level is the share covered: day 1's within 0.10 of its true coverage, inside its own
    # interval.
    assert (
        abs(b.ratio - counts["true_1"]) <= 0.10
        and b.level_ci_low <= counts["true_1"] <= b.level_ci_high
    )
    # Each day's coverage lies outside the other day's interval, and the drop is significant at 5 %
    # (two-sample).
    assert a.ratio < b.ci_low and b.ratio > a.ci_high
    assert b.ratio - a.ratio > 1.96 * math.hypot(
        (b.ci_high - b.ci_low) / 3.92, (a.ci_high - a.ci_low) / 3.92
    )
    # The held-back chapter's questions are mostly the ones found uncovered: day 2 covers few more
    # traces than day 1.
    extra = counts["day_2"] - counts["day_1"]
    assert a.covered_traces - b.covered_traces < 0.25 * extra
    # No cut groups the golden set's user questions by chapter, so the topic cut says its topics are
    # rough; still, the largest uncovered topic is the held-back chapter: most of the questions
    # nearest its centre.
    assert after.topic_cut.method == "default" and "rough" in after.topic_cut.note
    assert sum(r.question in held for r in after.clusters[0].representatives) >= 2
    # Not reached on these 233 questions: the two intervals still overlap (a 0.11 drop against 0.12
    # of half-widths).
