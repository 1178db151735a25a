"""The held-out check of golden coverage on a manual the project did not write: GNOME Help in
Spanish, French, Italian, Portuguese and German (tests/data/gnome_help.json.gz, cut by
harness/ragwatch_harness/bench/help_questions.py), each subject of at least MIN_PAGES pages held
back from the golden set in turn.

A page's title is the question a user asks, its body's first 120 words the passage that answers it,
its guide the subject (power, color, printing…). The golden set and the two days are built as
tests/support/heldout.py says: a quarter of day 2's traffic moves to the held-back subject's titles.
A third day measures the same traffic against a release that adds the subject back (the last test).

Measured (the lexical signal chosen every time, AUC 0.84-0.87 against the embedding's 0.74-0.75;
every day-1 question is answerable, so its true coverage is 1). The figures below are the matched
share, about the signal's TPR on day 1; coverage, corrected for the matcher's error rates, reads
0.923 (mouse) to 1.000 on day 1, within 0.10 of the truth for every subject
(docs/explanation/coverage.md):

| held back | day 1 | day 2 | held-back questions found covered | largest topic missed |
|---|---|---|---|---|
| a11y | 0.706 [0.673, 0.737] n=785 | 0.546 [0.512, 0.579] n=845 | 7 % | es, 8 questions, 2 of 3 shown held back |
| color | 0.680 [0.646, 0.713] n=760 | 0.513 [0.479, 0.546] n=855 | 1 % | es, 11, 3 of 3 |
| files | 0.780 [0.750, 0.809] n=745 | 0.717 [0.686, 0.746] n=865 | 52 % | it, 13, 3 of 3 |
| mouse | 0.590 [0.555, 0.624] n=790 | 0.483 [0.449, 0.517] n=840 | 16 % | fr, 10, 3 of 3 |
| net-wireless | 0.715 [0.682, 0.745] n=791 | 0.618 [0.585, 0.651] n=841 | 33 % | pt, 17, 3 of 3 |
| power | 0.721 [0.689, 0.752] n=755 | 0.572 [0.539, 0.605] n=860 | 12 % | es, 16, 2 of 3 |
| printing | 0.671 [0.638, 0.704] n=785 | 0.545 [0.512, 0.579] n=845 | 17 % | pt, 9, 3 of 3 |

The drop clears both intervals for all seven. Topics are per language (no vectors here meet across
languages), so the held-back subject is a topic in each; the largest missed of all is one of them.
The files subject clears by 0.004 only: half of its questions pass for covered, matched to the file
manager's preference pages, which are about files too. The five languages are translations of one
manual: a page's five titles are not five independent questions, so these intervals are narrower
than over as many independent ones. Spanish alone (n ≈ 150 a day) clears them for power, color and
a11y, not for printing, files or net-wireless: at that n each half-interval is about 0.07, and the
drop is 0.25 × (TPR − the held-back share found covered).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

from pipelines.core.settings import Settings
from pipelines.core.workspace import Workspace
from pipelines.evaluation.coverage.daily import measure_day_coverage
from pipelines.evaluation.results.coverage import GoldenCoverage
from tests.support.heldout import (
    DAY_1,
    DAY_2,
    DAY_3,
    release_golden,
    traffic,
    true_coverage,
    write_day,
)
from tests.support.memo_embedder import memoized_coverage_embedder

HELP = Path(__file__).resolve().parents[4] / "data" / "gnome_help.json.gz"
TEMPLATE = {
    "es": "¿Qué dice la documentación sobre «{}»?",
    "fr": "Que dit la documentation sur « {} » ?",
    "it": "Cosa dice la documentazione su «{}»?",
    "pt": "O que diz a documentação sobre «{}»?",
    "de": "Was sagt die Dokumentation über „{}“?",
}
MIN_PAGES = 10
"""Subjects held back in turn: every one with at least this many pages a language."""


def help_entries() -> list[dict]:
    with gzip.open(HELP, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def subjects() -> list[str]:
    pages = Counter(e["subject"] for e in help_entries() if e["language"] == "es")
    return sorted(s for s, n in pages.items() if n >= MIN_PAGES)


@pytest.fixture(scope="module")
def embedder():
    patch = pytest.MonkeyPatch()
    memoized_coverage_embedder(patch)
    yield
    patch.undo()


class Shift(NamedTuple):
    settings: Settings
    covered: list[dict]
    held: list[dict]
    day_2: list[tuple[str, str]]
    before: GoldenCoverage
    after: GoldenCoverage
    truth: tuple[float, float]


def chunk_id(e: dict) -> str:
    return f"help/{e['subject']}.{e['language']}#{e['page']}/0"


def shift(home: Path, subject: str) -> Shift:
    """`subject` held back from the golden set: day 1's coverage, day 2's, and the two days' true
    coverage."""
    settings = Settings(home=home, anonymizer_key="k")
    entries = help_entries()
    covered = [e for e in entries if e["subject"] != subject]
    held = [e for e in entries if e["subject"] == subject]
    workspace = Workspace.from_settings(settings)
    release_golden(workspace, "help", covered, chunk_id=chunk_id, template=TEMPLATE)
    day_1, day_2 = traffic(covered, held)
    before = measure_day_coverage(settings, write_day(workspace, DAY_1, day_1), golden="help")
    after = measure_day_coverage(settings, write_day(workspace, DAY_2, day_2), golden="help")
    truth = true_coverage(day_1, covered), true_coverage(day_2, covered)
    return Shift(settings, covered, held, day_2, before, after, truth)


@pytest.fixture(scope="module")
def shifted(embedder, tmp_path_factory):
    """`shift` once a subject: the loop's check goes on from the days the drop's check measured."""
    done: dict[str, Shift] = {}

    def once(subject: str) -> Shift:
        if subject not in done:
            done[subject] = shift(tmp_path_factory.mktemp(subject) / "home", subject)
        return done[subject]

    return once


@pytest.mark.parametrize("subject", subjects())
def test_a_quarter_of_traffic_on_a_held_back_subject_clears_both_intervals_and_tops_topics(
    shifted, subject
):
    before, after, (true_1, true_2) = shifted(subject)[4:]
    held = {e["question"] for e in shifted(subject).held}
    b, a, t = before.day, after.day, before.threshold
    top = after.clusters[0]
    print(
        f"\n{subject}: {t.signal} {t.value:.3f} (AUC {t.auc:.2f}, TPR {t.tpr:.3f}, FPR {t.fpr:.3f}); "
        f"day 1 {b.ratio:.3f} [{b.ci_low:.3f}, {b.ci_high:.3f}] (level's [{b.level_ci_low:.3f}, {b.level_ci_high:.3f}])"
        f" matched {b.matched:.3f} n={b.questions} true {true_1:.3f}; day 2 {a.ratio:.3f} [{a.ci_low:.3f}, "
        f"{a.ci_high:.3f}] (level's [{a.level_ci_low:.3f}, {a.level_ci_high:.3f}]) matched {a.matched:.3f} "
        f"n={a.questions} true {true_2:.3f} ({a.traces - b.traces} of {a.traces} traces moved); largest topic {top.language}, "
        f"{top.questions} questions, {sum(r.question in held for r in top.representatives)} of 3 shown held back"
    )
    assert t.method == "calibrated" and t.auc >= 0.7
    # The level is the share covered: day 1's within 0.10 of its true coverage, inside its own
    # interval.
    assert abs(b.ratio - true_1) <= 0.10 and b.level_ci_low <= true_1 <= b.level_ci_high
    # The drop clears both 95 % intervals.
    assert a.ci_high < b.ci_low
    # The largest uncovered topic by traffic is the held-back subject: most of the questions nearest
    # its centre.
    assert sum(r.question in held for r in top.representatives) >= 2


@pytest.mark.parametrize("subject", subjects())
def test_once_a_refresh_adds_the_held_back_subject_the_next_day_covers_it(shifted, subject):
    """Day 2's shifted traffic again on day 3, against a release that adds the held-back subject.

    Real: the GNOME Help pages, and the coverage step as the online eval runs it; it reads the
    latest release. Simplified: the corpus refresh and the golden build (plan from chunks,
    generation, filter, split, DVC tag) are one write of the released items, v2. Each new page gets
    a generated question, as the offline backend writes one. A real build's trace questions from the
    inbox are left out, so the user questions the threshold is calibrated on stay the same.

    Measured (coverage, day interval; the held-back traces' matched share on day 3 against the other
    traces' on v2):

    | held back | day 1 | day 2 | day 3 | held back matched / others |
    |---|---|---|---|---|
    | a11y | 0.981 [0.919, 1] | 0.675 [0.611, 0.739] | 1.000 [0.976, 1] | 0.800 / 0.715 |
    | color | 1.000 [0.947, 1] | 0.704 [0.642, 0.765] | 0.934 [0.875, 0.992] | 0.538 / 0.687 |
    | files | 0.983 [0.930, 1] | 0.873 [0.821, 0.923] | 0.972 [0.921, 1] | 0.770 / 0.780 |
    | mouse | 0.923 [0.860, 0.984] | 0.729 [0.668, 0.790] | 0.972 [0.913, 1] | 0.722 / 0.586 |
    | net-wireless | 0.972 [0.912, 1] | 0.792 [0.730, 0.852] | 0.914 [0.853, 0.972] | 0.620 / 0.709 |
    | power | 0.984 [0.924, 1] | 0.711 [0.650, 0.771] | 0.954 [0.895, 1] | 0.619 / 0.718 |
    | printing | 0.988 [0.926, 1] | 0.753 [0.691, 0.816] | 0.968 [0.916, 1] | 0.917 / 0.773 |

    Day 3's true coverage is 1. Its level lies in day 1's level interval and above day 2's interval
    for all seven. It lies in day 1's day interval for six; color reads 0.013 below it. The rates
    are calibrated again on v2, so day 1's level interval is what compares across releases.

    The topics, day 2 → day 3 (listed as missed; set apart as likely the matcher's misses; how many
    of the three questions shown are held back, in the five largest missed; the day's share missed
    in the listed topics that show the subject):

    | held back | missed | matcher's misses | five largest missed, held back shown | share missed |
    |---|---|---|---|---|
    | a11y | 6 → 2 | 8 → 5 | 2, 2, 3, 3, 0 → 0, 0 | 0.095 → 0 |
    | color | 6 → 0 | 16 → 18 | 3, 3, 3, 3, 3 → none | 0.131 → 0 |
    | files | 2 → 1 | 7 → 3 | 3, 0 → 0 | 0.027 → 0 |
    | mouse | 3 → 0 | 17 → 13 | 3, 0, 0 → none | 0.047 → 0 |
    | net-wireless | 1 → 0 | 13 → 14 | 3 → none | 0.063 → 0 |
    | power | 11 → 0 | 8 → 14 | 2, 3, 3, 3, 3 → none | 0.187 → 0 |
    | printing | 5 → 3 | 13 → 3 | 3, 3, 3, 3, 3 → 0, 0, 0 | 0.177 → 0 |

    The subject leaves the list for all seven. Italian questions are matched at about 0.57, a rate
    measured on about 70 Italian user questions: the test of a topic weighs that uncertainty
    (topic_gaps.as_few_matched), so power's six Italian battery questions, none matched on day 3,
    are set apart as the matcher's misses instead of listed as a gap.
    """
    s = shifted(subject)
    workspace = Workspace.from_settings(s.settings)
    release_golden(
        workspace,
        "help",
        s.covered,
        chunk_id=chunk_id,
        template=TEMPLATE,
        added=s.held,
        version="v2",
    )
    closed = measure_day_coverage(s.settings, write_day(workspace, DAY_3, s.day_2), golden="help")
    control = measure_day_coverage(
        s.settings, workspace.traces_partition(DAY_1).parts, golden="help"
    )
    b, a, c, k = s.before.day, s.after.day, closed.day, control.day
    held = {(e["language"], e["question"]) for e in s.held}
    true_3 = true_coverage(s.day_2, s.covered + s.held)
    extra = a.traces - b.traces
    held_matched, others = (
        (c.covered_traces - k.covered_traces) / extra,
        k.covered_traces / k.traces,
    )

    def shown(topic) -> int:
        return sum((topic.language, r.question) in held for r in topic.representatives)

    def held_missed(result) -> float:
        """The day's share missed in the listed topics that show the held-back subject."""
        return sum(t.gap_share for t in result.clusters if shown(t) >= 2)

    top_five = [shown(t) for t in closed.clusters[:5]]
    print(
        f"\n{subject}: {closed.golden_version}, {closed.golden_passages} passages, threshold {closed.threshold.value:.3f}"
        f" (TPR {closed.threshold.tpr:.3f}, FPR {closed.threshold.fpr:.3f}); day 3 {c.ratio:.3f} [{c.ci_low:.3f}, "
        f"{c.ci_high:.3f}] (level's [{c.level_ci_low:.3f}, {c.level_ci_high:.3f}]) matched {c.matched:.3f} "
        f"n={c.questions} true {true_3:.3f}; held-back traces matched {held_matched:.3f}, the others {others:.3f}; "
        f"topics missed {len(s.after.clusters)} -> {len(closed.clusters)}, likely the matcher's misses "
        f"{len(s.after.matcher_misses)} -> {len(closed.matcher_misses)}; held back shown of 3 in the five largest "
        f"missed {[shown(t) for t in s.after.clusters[:5]]} -> {top_five}; their share of the day missed "
        f"{held_missed(s.after):.3f} -> {held_missed(closed):.3f}"
    )
    # Coverage reads the new release: its passages include the held-back pages'.
    assert (closed.golden_version, closed.golden_passages) == (
        "v2",
        s.before.golden_passages + len(s.held),
    )
    # Every day-3 question is answerable now, and the level says so: back within day 1's level
    # interval.
    assert true_3 == 1.0 and abs(c.ratio - true_3) <= 0.10
    assert b.level_ci_low <= c.ratio <= b.level_ci_high and c.ratio > a.ci_high
    # The held-back questions pass for covered about as often as the others: at least three quarters
    # as often.
    assert held_matched >= 0.75 * others
    # The subject leaves the topics the golden set misses: none of the five largest shows it, and
    # what they miss of it is at most a tenth of day 2's.
    assert all(n <= 1 for n in top_five)
    assert held_missed(closed) <= 0.1 * held_missed(s.after)
