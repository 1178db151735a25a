"""The regression gate of an offline run: against which runs, on which items and metrics, and what
failing does.

A run is compared twice (docs/explanation/statistics.md):
- with its **baseline**, the previous run of its target whatever its verdict
  (`ResultsStore.baseline_for` says why), or the run named by `baseline_run`: a sudden regression
  fails;
- with its **reference** (`ResultsStore.references`), per gated metric the first release (`ragwatch
  eval pin`) that measured it since the reference was last moved (`eval pin --reference`, or pinning
  a run whose gate failed), else the first accepted run that measured it, on any golden version of
  the set; or the run named by `reference_run`: ten small drops that each pass against the previous
  run add up and fail here, even when every release is pinned. A release that measured no gated
  metric is never a reference (the note names it); a partial one (`eval pin --partial`, the judge
  off) is the reference of what it measured only, and a metric it lacks is compared with the first
  release that measured it: one more comparison. It passes only when it passes every comparison;
  they share the gate's false-alarm level (level.py), so an unchanged system fails the run's gate at
  most GATE_ALPHA of the time, not once per comparison. A run in which no gated metric was measured
  (every item failed or skipped, or the judge metrics switched off) is never chosen as a baseline
  while a measured one exists. A gated metric the earlier run measured and this run lacks fails.

Across golden versions (a refresh retires stale items and adds new ones; item ids are content
hashes) the runs are compared on the items both have, and the report says how many were retired and
how many are new. A refresh does not move the reference: its level is carried across on the shared
items, the interval as wide as their number makes it, until refreshes leave it fewer than
`min_pairs` of the run's items (the note says so). Offline runs of one golden set pair their items
by id: when the two runs share fewer than `min_pairs` ids the comparison fails as not comparable
instead of silently becoming an unpaired one. A `limit` run is compared on the subset it drew: the
baseline's items it did not draw are not missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pipelines.core.records import Score
from pipelines.evaluation.statistics.gate.gated_metrics import GATED_METRICS
from pipelines.evaluation.statistics.gate.level import level_note, split_alpha
from pipelines.evaluation.statistics.gate.rule import (
    DEFAULT_MIN_PAIRS,
    GATE_ALPHA,
    GateResult,
    regression_gate,
)
from pipelines.stores.results import EvalRun, ReferenceChoice, ResultsStore, golden_set_of

Role = Literal["baseline", "reference"]
CHOOSE_ANOTHER = (
    "pass --baseline-run / --reference-run (DAG params baseline_run / reference_run) to choose a "
    "comparable run, or pin this run as a release (`ragwatch eval pin RUN_ID`) to start from it"
)


@dataclass(frozen=True)
class Comparison:
    """The run against one earlier run: the gate's verdict, or why the two cannot be compared."""

    role: Role
    against: EvalRun
    """The earlier run: the baseline or the reference."""
    chosen: str
    """How it was chosen, e.g. "the previous run of this target"."""
    gate: GateResult | None
    """None when no gated metric was scored in both runs, or when they are not comparable."""
    scope: str | None = None
    """Across golden versions: "compared on the N items golden@v3 and golden@v4 share; M retired, K
    new not gated"."""
    not_comparable: str | None = None
    """Why the runs cannot be paired (too few shared item ids); the comparison fails."""

    @property
    def passed(self) -> bool | None:
        """None when nothing was gated (no gated metric scored in both runs)."""
        if self.not_comparable:
            return False
        return self.gate.passed if self.gate is not None else None

    @property
    def verdict(self) -> str:
        if self.not_comparable:
            return f"gate failed: not comparable: {self.not_comparable}"
        if self.gate is None:
            return "not gated: no gated metric was scored in both runs"
        return self.gate.summary()

    def summary(self) -> str:
        scope = f" ({self.scope})" if self.scope else ""
        return f"against the {self.role} {self.against.run_id}{scope}: {self.verdict}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "run_id": self.against.run_id,
            "dataset_version": self.against.dataset_version,
            "chosen": self.chosen,
            "passed": self.passed,
            "summary": self.summary(),
            "scope": self.scope,
            "not_comparable": self.not_comparable,
            "gate": self.gate.to_dict() if self.gate else None,
        }


@dataclass(frozen=True)
class RunGate:
    """Both comparisons of a run; it passes only when each gated comparison passes."""

    comparisons: tuple[Comparison, ...]
    """The baseline comparison (none for the first run of a target given a `reference_run`), then
    the reference's when the reference is another run."""
    reference_note: str
    """Which run is the reference and why, or why there is none (and which empty releases were
    skipped)."""
    alpha: float = GATE_ALPHA
    """The family-wise level each comparison spent: GATE_ALPHA split over them (level.py)."""

    @property
    def baseline(self) -> Comparison | None:
        return next((c for c in self.comparisons if c.role == "baseline"), None)

    @property
    def reference(self) -> Comparison | None:
        """The first reference comparison (the only one unless a partial release left some metrics
        to another)."""
        return next((c for c in self.comparisons if c.role == "reference"), None)

    @property
    def references(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.role == "reference"]

    @property
    def passed(self) -> bool | None:
        verdicts = [c.passed for c in self.comparisons if c.passed is not None]
        return all(verdicts) if verdicts else None

    def summary(self) -> str:
        head = {True: "gate passed", False: "gate failed", None: "not gated"}[self.passed]
        note = (
            "" if self.reference else f"; {self.reference_note}"
        )  # else the reference's comparison says it
        return f"{head}: " + "; ".join(c.summary() for c in self.comparisons) + note

    @property
    def level(self) -> str:
        """How the run's false-alarm level is spent over its comparisons."""
        return level_note(len(self.comparisons))

    def to_dict(self) -> dict[str, Any]:
        """What the results DB keeps: the baseline comparison's gate at the top (the shape older
        runs have), the combined verdict, and every comparison."""
        baseline, reference = self.baseline, self.reference
        top = baseline.gate.to_dict() if baseline and baseline.gate else {"metrics": []}
        return {
            **top,
            "passed": self.passed,
            "summary": self.summary(),
            "level": self.level,
            "baseline": baseline.against.run_id if baseline else None,
            "reference": reference.against.run_id if reference else None,
            "references": [c.against.run_id for c in self.references],
            "reference_note": self.reference_note,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }


def measured_metrics(scores: Sequence[Score], *, min_ok: int) -> set[str]:
    """The gated metrics a run measured: at least `min_ok` items scored ok."""
    counts: dict[str, int] = {}
    for s in scores:
        if s.status == "ok" and s.metric in GATED_METRICS:
            counts[s.metric] = counts.get(s.metric, 0) + 1
    return {m for m, n in counts.items() if n >= min_ok}


def gate_against_baseline(
    store: ResultsStore,
    run: EvalRun,
    scores: Sequence[Score],
    *,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    baseline_run: str | None = None,
    reference_run: str | None = None,
) -> RunGate | None:
    """Gate `run` against its baseline and its reference (module docstring); None when there is no
    baseline.

    `baseline_run` / `reference_run` name the runs instead (e.g. a candidate target against the
    accepted run of another). `min_pairs` (settings: `RAGWATCH_GATE_MIN_PAIRS`): fewest items ok in
    both runs for a metric to be decided, and the fewest a run must score ok of a metric to count as
    having measured it.

    The gate's α (GATE_ALPHA) is the promise of the whole run: an unchanged system fails it at most
    that often. k comparisons each spend α / k of it (`split_alpha`): two (baseline and reference)
    half, one alone all of it."""
    wanted = measured_metrics(scores, min_ok=min_pairs)
    items = {s.item_id for s in scores} if run.suite == "offline" else None
    baseline = (
        _named(store, run, baseline_run, "baseline_run")
        if baseline_run
        else store.baseline_for(
            run, metrics=GATED_METRICS, min_ok=min_pairs, wanted=wanted, items=items
        )
    )
    skipped: tuple[EvalRun, ...] = ()
    if reference_run:
        references = [
            ReferenceChoice(
                _named(store, run, reference_run, "reference_run"), "named by reference_run"
            )
        ]
    else:
        references = store.references(run, metrics=GATED_METRICS, min_ok=min_pairs, items=items)
        skipped = (
            references[0].skipped
            if references
            else store.reference_choice(run, metrics=GATED_METRICS, min_ok=min_pairs).skipped
        )
    note = _reference_note(run, baseline, references, skipped)
    planned: list[tuple[Role, EvalRun, str | None, frozenset[str]]] = []
    if baseline is not None:
        planned.append(("baseline", baseline, None, frozenset()))
    # A reference that is the baseline adds nothing: the baseline comparison gates every metric
    # already.
    planned += [
        ("reference", r.run, r.why, r.metrics)
        for r in references
        if baseline is None or r.run.run_id != baseline.run_id
    ]
    alpha = split_alpha(len(planned))
    # Each reference gates the metrics it is the reference of; a metric no reference measured goes
    # with the first, where it is listed "not gated: the baseline did not measure it".
    claimed = set().union(*(r.metrics for r in references))
    comparisons = []
    for index, (role, against, why, metrics) in enumerate(planned):
        against_scores = store.scores(against.run_id)
        own_scores = scores
        if role == "baseline":
            chosen = (
                "named by baseline_run"
                if baseline_run
                else _why_baseline(run, against, against_scores, min_pairs)
            )
        else:
            chosen = why
            if len(planned) - (baseline is not None) > 1:
                first_reference = index == (baseline is not None)
                keep = metrics | (set(GATED_METRICS) - claimed if first_reference else set())
                own_scores = [s for s in scores if s.metric in keep]
                against_scores = [s for s in against_scores if s.metric in metrics]
        comparisons.append(
            compare_with(
                run,
                own_scores,
                against,
                against_scores,
                role=role,
                chosen=chosen,
                min_pairs=min_pairs,
                alpha=alpha,
            )
        )
    return (
        RunGate(comparisons=tuple(comparisons), reference_note=note, alpha=alpha)
        if comparisons
        else None
    )


def _reference_note(
    run: EvalRun,
    baseline: EvalRun | None,
    references: Sequence[ReferenceChoice],
    skipped: Sequence[EvalRun],
) -> str:
    if not references:
        note = (
            f"no reference yet: no release pinned and no earlier accepted run of {golden_set_of(run)} that shares "
            f"this run's items (`ragwatch eval pin RUN_ID` pins one)"
        )
    else:
        notes = []
        for r in references:
            if baseline is not None and r.run.run_id == baseline.run_id:
                notes.append(f"the reference is the baseline ({r.why})")
            else:
                notes.append(f"reference {r.run.run_id}: {r.why}")
        note = "; ".join(notes)
    if skipped:
        note += "; " + "; ".join(
            f"release {r.run_id} skipped: it measured no gated metric" for r in skipped
        )
    return note


def compare_with(
    run: EvalRun,
    scores: Sequence[Score],
    baseline: EvalRun,
    baseline_scores: Sequence[Score],
    *,
    role: Role,
    chosen: str,
    min_pairs: int = DEFAULT_MIN_PAIRS,
    alpha: float = GATE_ALPHA,
) -> Comparison:
    """`run` against `baseline` on the gated metrics the run scored or the baseline measured, on the
    items both have, at family-wise `alpha` (the share of the run's α this comparison may spend).

    Offline items are paired by id; across golden versions only the shared items are compared
    (retired items are not missing, new items have nothing to be compared with)."""
    # Every gated metric either run has a score of is listed. One the baseline measured (scored ok)
    # and the candidate has no score of at all fails (regression_gate's missing_metric): switched
    # off or lost, it is a change the gate cannot vouch for, and leaving it out would pass the run
    # on the metrics left.
    present = {s.metric for s in scores} | {s.metric for s in baseline_scores if s.status == "ok"}
    gated = [m for m in GATED_METRICS if m in present]
    if not gated or not {s.metric for s in baseline_scores} & set(gated):
        return Comparison(role=role, against=baseline, chosen=chosen, gate=None)
    items, baseline_items = {s.item_id for s in scores}, {s.item_id for s in baseline_scores}
    shared = items & baseline_items
    same_version = baseline.dataset_version == run.dataset_version
    if run.suite == "offline" and len(shared) < min_pairs:
        cause = (
            f"the same golden version {run.dataset_version} with other item ids: renamed ids or another subset"
            if same_version
            else f"{baseline.dataset_version} and {run.dataset_version} are a different golden set or renamed ids"
        )
        problem = (
            f"candidate and {role} share {len(shared)} of {len(baseline_items)} item ids (need ≥ {min_pairs} "
            f"to pair them): {cause}; {CHOOSE_ANOTHER}"
        )
        return Comparison(
            role=role, against=baseline, chosen=chosen, gate=None, not_comparable=problem
        )
    scope = None
    if run.suite == "offline" and not same_version:
        scores = [s for s in scores if s.item_id in shared]
        baseline_scores = [s for s in baseline_scores if s.item_id in shared]
        scope = (
            f"compared on the {len(shared)} items {baseline.dataset_version} and {run.dataset_version} share; "
            f"{len(baseline_items - shared)} retired, {len(items - shared)} new not gated"
        )
    elif run.suite == "offline" and run.params.get("subset") and baseline_items - items:
        # A `limit` run evaluates the subset it drew (every drawn item has a score row, failed ones
        # too): the baseline's other items were not asked for, so they are not missing ones.
        baseline_scores = [s for s in baseline_scores if s.item_id in items]
        scope = (
            f"compared on this run's subset: {len(shared)} of the {role}'s {len(baseline_items)} items; "
            f"{len(baseline_items - items)} not drawn"
        )
    gate = regression_gate(scores, baseline_scores, gated, min_pairs=min_pairs, alpha=alpha)
    return Comparison(role=role, against=baseline, chosen=chosen, gate=gate, scope=scope)


def _named(store: ResultsStore, run: EvalRun, run_id: str, param: str) -> EvalRun:
    # Checked before the lookup: a run's first attempt is not saved yet, and "not in the results DB"
    # would hide that it named itself.
    if run_id == run.run_id:
        raise ValueError(f"run {run.run_id!r} cannot be its own {param.removesuffix('_run')}")
    found = store.get_run(run_id)
    if found is None:
        raise ValueError(f"{param} {run_id!r} is not in the results DB")
    return found


def _why_baseline(
    run: EvalRun, baseline: EvalRun, baseline_scores: Sequence[Score], min_pairs: int
) -> str:
    if not measured_metrics(baseline_scores, min_ok=min_pairs):
        return "the latest run, although it measured no gated metric: no run of this target measured one yet"
    chosen = "the previous run of this target"
    if baseline.dataset_version != run.dataset_version:
        chosen += f" (none yet on {run.dataset_version})"
    return chosen
