"""The eval results DB: one row per eval run, one row per (item, metric) score.

SQLAlchemy Core with bound parameters only; SQLite under `home` by default, PostgreSQL in
production. A run is identified by one id, `<suite>/<logical date>/<target>` (`run_id()`): saving
a run replaces every row of the same id in one transaction, so rerunning or backfilling a logical
date never duplicates results, and readers never see half a run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Engine, make_url

from pipelines.core.records import Score
from pipelines.core.settings import Settings

RunStatus = Literal["running", "success", "failed"]


class ResultsStoreError(RuntimeError):
    """The results DB refused a write or cannot be reached; the message says what to fix."""


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def run_id(suite: str, logical_date: date, target: str) -> str:
    """The one id of a run: a rerun of the same logical date and target replaces it."""
    return f"{suite}/{logical_date.isoformat()}/{target}"


@dataclass
class EvalRun:
    """One evaluation of one target on one suite for one logical date."""

    run_id: str
    """`run_id(suite, logical_date, target)`; score rows carry it."""
    suite: str
    logical_date: date
    target: str
    """Name of the system under test, e.g. `prod` or `candidate-reranker`."""
    dataset_version: str
    judge_model: str | None = None
    generator_model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    status: RunStatus = "success"
    gate_passed: bool | None = None
    """None when no gate ran (first run of a target, or no baseline)."""
    gate: dict[str, Any] | None = None
    report_path: str | None = None
    created_at: datetime = field(default_factory=_utcnow)
    finished_at: datetime | None = None
    cost: dict[str, Any] | None = None
    """What the run's model requests cost per stage and metric
    (`pipelines.evaluation.runs.cost.RunCost`); None for runs saved before it was recorded."""
    pinned_at: datetime | None = None
    """When the run was pinned as a release (`ragwatch eval pin`): the reference later runs of its
    target are also gated against, even if its own gate failed. A rerun of the date keeps it."""
    reference_at: datetime | None = None
    """When `ragwatch eval pin RUN_ID --reference` made this release the reference
    (`reference_choice`): pinning alone records a release without moving the reference. A rerun of
    the date keeps it."""

    def __post_init__(self) -> None:
        expected = run_id(self.suite, self.logical_date, self.target)
        if self.run_id != expected:
            raise ValueError(f"run id {self.run_id!r} does not name its run: expected {expected!r}")


_json = sa.JSON().with_variant(JSONB(), "postgresql")
metadata = sa.MetaData()

eval_runs = sa.Table(
    "eval_runs",
    metadata,
    sa.Column("run_id", sa.String(500), primary_key=True),
    sa.Column("suite", sa.String(32), nullable=False),
    sa.Column("logical_date", sa.Date, nullable=False),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("dataset_version", sa.String(200), nullable=False),
    sa.Column("judge_model", sa.String(200)),
    sa.Column("generator_model", sa.String(200)),
    sa.Column("params", _json, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("gate_passed", sa.Boolean),
    sa.Column("gate", _json),
    sa.Column("report_path", sa.Text),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("finished_at", sa.DateTime(timezone=True)),
    # Added after the first release: nullable without a default, so `create()` adds it to an
    # existing table.
    sa.Column("pinned_at", sa.DateTime(timezone=True)),
    sa.Column("cost", _json),
    sa.Column("reference_at", sa.DateTime(timezone=True)),
    sa.Index("ix_eval_runs_suite_target_date", "suite", "target", "logical_date"),
)

eval_scores = sa.Table(
    "eval_scores",
    metadata,
    sa.Column(
        "run_id",
        sa.String(500),
        sa.ForeignKey("eval_runs.run_id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("item_id", sa.String(200), nullable=False),
    sa.Column("stratum", sa.String(200), nullable=False),
    sa.Column("metric", sa.String(100), nullable=False),
    sa.Column("value", sa.Float),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("judge_model", sa.String(200)),
    sa.Column("dataset_version", sa.String(200), nullable=False),
    sa.PrimaryKeyConstraint("run_id", "item_id", "metric", name="pk_eval_scores"),
)


@dataclass(frozen=True)
class ReferenceChoice:
    """A reference `ResultsStore.references` chose, why, the gated metrics it is the reference of,
    and the releases it skipped as empty."""

    run: EvalRun | None
    why: str | None
    skipped: tuple[EvalRun, ...] = ()
    """Pinned releases that measured no gated metric: never a reference (the gate's note names
    them)."""
    metrics: frozenset[str] = frozenset()
    """The gated metrics this run is the reference of: each metric's reference measured it."""


class ResultsStore:
    def __init__(self, url: str):
        self.engine = _engine(url)

    @classmethod
    def from_settings(cls, settings: Settings) -> ResultsStore:
        return cls(settings.resolved_results_url)

    def create(self) -> None:
        """Create the tables if missing and add the columns a newer version introduced
        (idempotent)."""
        self._refuse_legacy_schema()
        metadata.create_all(self.engine)
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """ALTER TABLE ... ADD COLUMN for every column of `metadata` an older DB lacks; rows read it
        as NULL."""
        quote = self.engine.dialect.identifier_preparer.quote
        for table in metadata.sorted_tables:
            for column in table.columns:
                if column.name in self._columns(table):
                    continue
                ddl = (
                    f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column.name)} "
                    f"{column.type.compile(dialect=self.engine.dialect)}"
                )
                try:
                    with self.engine.begin() as conn:
                        conn.execute(sa.text(ddl))
                except sa.exc.DBAPIError:
                    if column.name not in self._columns(
                        table
                    ):  # else another process added it meanwhile
                        raise

    def _columns(self, table: sa.Table) -> set[str]:
        return {c["name"] for c in sa.inspect(self.engine).get_columns(table.name)}

    def exists(self) -> bool:
        """Whether any eval has written here yet (a read-only page must not create the tables)."""
        try:
            return sa.inspect(self.engine).has_table(eval_runs.name)
        except sa.exc.DBAPIError as exc:
            # The driver's message, never SQLAlchemy's (it may quote the URL); the URL with its
            # password masked.
            raise ResultsStoreError(
                f"cannot open the results DB {self.engine.url.render_as_string(hide_password=True)}: "
                f"{str(exc.orig).strip()}. Check RAGWATCH_RESULTS_URL."
            ) from None

    def _refuse_legacy_schema(self) -> None:
        if self.exists() and "run_key" in {
            c["name"] for c in sa.inspect(self.engine).get_columns(eval_runs.name)
        }:
            raise ResultsStoreError(
                f"the results DB {self.engine.url.render_as_string(hide_password=True)} was written by ragwatch 0.1, "
                "which gave each run two ids; this version names a run by run_id = suite/date/target alone. "
                "Results are derived data: drop the tables eval_scores and eval_runs (or point RAGWATCH_RESULTS_URL "
                "at a new database), then rerun or backfill the evals."
            )

    def dispose(self) -> None:
        self.engine.dispose()

    def save_run(self, run: EvalRun, scores: Iterable[Score]) -> int:
        """Replace the run with this run_id and its scores by `run` and `scores`; returns scores
        written."""
        rows = [_score_row(run, s) for s in scores]
        try:
            try:
                return self._replace(run, rows)
            except sa.exc.IntegrityError:
                # Two attempts of the same logical date raced between delete and insert: the other
                # one committed first, so replacing it again is exactly the rerun semantics we want.
                return self._replace(run, rows)
        except sa.exc.DBAPIError as exc:
            # A server killed or restarted mid-write: the transaction is rolled back whole.
            raise ResultsStoreError(
                f"could not save run {run.run_id} to the results DB "
                f"{self.engine.url.render_as_string(hide_password=True)}: {str(exc.orig).strip()}. Nothing of this "
                f"attempt was kept (one transaction). Once the DB answers, rerun it: `ragwatch eval {run.suite} --date {run.logical_date}` with the "
                "same options (in Airflow, clear the run's `finalize` task)."
            ) from None

    def _replace(self, run: EvalRun, rows: list[dict[str, Any]]) -> int:
        with self.engine.begin() as conn:
            same_run = sa.bindparam("run_id", run.run_id)
            row = _run_row(run)
            if (
                row["pinned_at"] is None
            ):  # a rerun of a release's date stays the release (and the reference)
                kept = conn.execute(
                    sa.select(eval_runs.c.pinned_at, eval_runs.c.reference_at).where(
                        eval_runs.c.run_id == same_run
                    )
                ).first()
                if kept is not None:
                    row["pinned_at"], row["reference_at"] = (
                        kept.pinned_at,
                        row["reference_at"] or kept.reference_at,
                    )
            conn.execute(sa.delete(eval_scores).where(eval_scores.c.run_id == same_run))
            conn.execute(sa.delete(eval_runs).where(eval_runs.c.run_id == same_run))
            conn.execute(sa.insert(eval_runs), [row])
            if rows:
                conn.execute(sa.insert(eval_scores), rows)
        return len(rows)

    def latest_run(
        self,
        suite: str,
        target: str | None = None,
        before: date | None = None,
        *,
        successful_only: bool = False,
    ) -> EvalRun | None:
        """The run with the latest logical date (strictly before `before` when given)."""
        found = self._select_runs(
            suite,
            target=target,
            before=before,
            status="success" if successful_only else None,
            limit=1,
        )
        return found[0] if found else None

    def runs(
        self,
        suite: str,
        limit: int = 30,
        *,
        target: str | None = None,
        before: date | None = None,
        status: RunStatus | None = "success",
    ) -> list[EvalRun]:
        """The latest `limit` runs of a suite, oldest first (the order a trend is drawn in)."""
        return self._select_runs(suite, target=target, before=before, status=status, limit=limit)[
            ::-1
        ]

    def get_run(self, run_id: str) -> EvalRun | None:
        """The run saved under `run_id`, or None."""
        with self.engine.connect() as conn:
            row = (
                conn.execute(
                    sa.select(eval_runs).where(eval_runs.c.run_id == sa.bindparam("run_id", run_id))
                )
                .mappings()
                .first()
            )
        return _run_from_row(row) if row else None

    def latest_per_target(self) -> dict[str, list[EvalRun]]:
        """Per suite, the latest run of each target (any status: a failed latest run is news)."""
        pairs = (
            sa.select(eval_runs.c.suite, eval_runs.c.target)
            .distinct()
            .order_by(eval_runs.c.suite, eval_runs.c.target)
        )
        with self.engine.connect() as conn:
            found = conn.execute(pairs).all()
        latest: dict[str, list[EvalRun]] = {}
        for suite, target in found:
            run = self.latest_run(suite, target)
            if run is not None:
                latest.setdefault(suite, []).append(run)
        return latest

    def earlier_runs(
        self,
        run: EvalRun,
        *,
        metrics: Collection[str] | None = None,
        min_ok: int = 1,
        accepted_only: bool = False,
    ) -> list[tuple[EvalRun, frozenset[str]]]:
        """The runs a later run of the same suite and target may be compared with, latest first,
        each with the metrics it measured (of `metrics` when given: at least `min_ok` items scored
        ok): successful, on the same golden set (the name before `@` in `dataset_version`; any
        version), before `run`'s logical date.

        `accepted_only`: and not failed by its own gate, unless pinned as a release; the runs a
        reference is chosen from. A gate-failed run never becomes a reference on its own: the
        reference would then follow a regression down; pinning it says the change was meant.
        """
        same = (
            (eval_runs.c.suite == sa.bindparam("suite", run.suite))
            & (eval_runs.c.target == sa.bindparam("target", run.target))
            & (eval_runs.c.logical_date < sa.bindparam("before", run.logical_date))
            & (eval_runs.c.status == "success")
        )
        accepted = (
            same
            & sa.or_(
                eval_runs.c.gate_passed.is_(None),
                eval_runs.c.gate_passed.is_(True),
                eval_runs.c.pinned_at.is_not(None),
            )
            if accepted_only
            else same
        )
        runs_query = (
            sa.select(eval_runs)
            .where(accepted)
            .order_by(eval_runs.c.logical_date.desc(), eval_runs.c.created_at.desc())
        )
        counts = (
            sa.select(eval_scores.c.run_id, eval_scores.c.metric, sa.func.count().label("n"))
            .join(eval_runs, eval_runs.c.run_id == eval_scores.c.run_id)
            .where(accepted, eval_scores.c.status == "ok")
            .group_by(eval_scores.c.run_id, eval_scores.c.metric)
        )
        if metrics is not None:
            counts = counts.where(
                eval_scores.c.metric.in_(sa.bindparam("metrics", sorted(metrics), expanding=True))
            )
        with self.engine.connect() as conn:
            found = [_run_from_row(row) for row in conn.execute(runs_query).mappings()]
            measured: dict[str, set[str]] = {}
            for row in conn.execute(counts):
                if row.n >= min_ok:
                    measured.setdefault(row.run_id, set()).add(row.metric)
        golden_set = golden_set_of(run)
        return [
            (r, frozenset(measured.get(r.run_id, ())))
            for r in found
            if golden_set_of(r) == golden_set
        ]

    def baseline_for(
        self,
        run: EvalRun,
        *,
        metrics: Collection[str] | None = None,
        min_ok: int = 1,
        wanted: Collection[str] | None = None,
        items: Collection[str] | None = None,
    ) -> EvalRun | None:
        """The run `run` is gated against: the latest earlier run (`earlier_runs`) that measured a
        metric, whatever its own gate said.

        Whatever its verdict, because choosing among the runs that passed chooses runs whose noise
        leaned high: an unchanged system then fails the comparison more often than its level, more
        each week of a chain. A regression does not become the new normal this way: the reference
        (`references`) is chosen among accepted runs and holds the earlier level.

        Among those, the one that measured most of `wanted` (the metrics `run` measured; default:
        all) wins, then one on `run`'s own golden version, then the latest: a quick run without the
        judge never becomes the baseline of a full one. With `items` (the run's item ids), the first
        of that order sharing at least `min_ok` of them: a run on renamed ids or another subset,
        whose own gate failed as not comparable, does not fail the next run too; when none shares
        enough, the first all the same, and the gate says they are not comparable. All of this looks
        at what runs measured, never at their scores. A run that measured nothing (every item
        failed, or no metric of `metrics` scored) is the baseline only when no earlier run measured
        anything: the gate then says it recovers.
        """
        earlier = self.earlier_runs(run, metrics=metrics, min_ok=min_ok)
        measured = [(r, m) for r, m in earlier if m]
        if not measured:
            return earlier[0][0] if earlier else None
        goal = set(wanted) if wanted is not None else set().union(*(m for _, m in measured))
        ranked = [
            r
            for r, _ in sorted(  # stable: the latest first among equals
                measured,
                key=lambda pair: (
                    len(pair[1] & goal),
                    pair[0].dataset_version == run.dataset_version,
                ),
                reverse=True,
            )
        ]
        if items is not None:
            for candidate in ranked:
                if self._shared_items(candidate.run_id, items) >= min_ok:
                    return candidate
        return ranked[0]

    def reference_for(self, run: EvalRun, **options) -> EvalRun | None:
        """`reference_choice(run, **options).run`."""
        return self.reference_choice(run, **options).run

    def reference_choice(
        self,
        run: EvalRun,
        *,
        metrics: Collection[str] | None = None,
        min_ok: int = 1,
        items: Collection[str] | None = None,
    ) -> ReferenceChoice:
        """The first of `references`: the reference of most gated metrics (the earliest when they
        tie); an empty choice when there is none."""
        found = self.references(run, metrics=metrics, min_ok=min_ok, items=items)
        if not found:
            pinned = self.earlier_runs(run, metrics=metrics, min_ok=min_ok, accepted_only=True)
            return ReferenceChoice(
                None, None, tuple(r for r, m in pinned if r.pinned_at is not None and not m)
            )
        return max(found, key=lambda choice: len(choice.metrics))

    def references(
        self,
        run: EvalRun,
        *,
        metrics: Collection[str] | None = None,
        min_ok: int = 1,
        items: Collection[str] | None = None,
    ) -> list[ReferenceChoice]:
        """Each gated metric's reference, so slow drift fails too: one choice per reference run,
        oldest first, each with the metrics it is the reference of.

        A metric's reference measured that metric (≥ `min_ok` items ok; of `metrics`). Among the
        releases (runs before `run` pinned with `pin`) that measured it, the latest *anchor* is one
        that moved the reference: pinned with `reference=True`, or pinned although its own gate
        failed (accepting a change; else every later run would fail against the old level). The
        reference is:
        1. the first release that measured the metric since its latest anchor (the anchor itself, if
           any): pinning every weekly release keeps the reference where it was, so ten releases of
           −0.012 each add up against it instead of each becoming the next one's reference; a
           release pinned without a metric (`--partial`, the judge off) leaves that metric to the
           first release that measured it;
        2. with no release that measured it, the first accepted run that measured it. Any golden
           version of the set: a golden refresh does not move the reference, the gate compares the
           two runs on the items both versions hold. With `items` (the run's item ids), a reference
           must share at least `min_ok` of them; one that refreshes retired is passed over for the
           next, and the note says the drift before that one is not gated. A pin that measured no
           gated metric is never a reference (`skipped` names it)."""
        accepted = self.earlier_runs(run, metrics=metrics, min_ok=min_ok, accepted_only=True)[::-1]
        skipped = tuple(r for r, m in accepted[::-1] if r.pinned_at is not None and not m)
        shared: dict[str, int] = {}

        def shares_enough(candidate: EvalRun) -> bool:
            if items is None or candidate.dataset_version == run.dataset_version:
                return True  # on its own version a run holds every item, or draws a subset of them
            if candidate.run_id not in shared:
                shared[candidate.run_id] = self._shared_items(candidate.run_id, items)
            return shared[candidate.run_id] >= min_ok

        chosen: dict[str, tuple[EvalRun, str]] = {}
        for metric in sorted(set().union(*(m for _, m in accepted))):
            measured = [r for r, m in accepted if metric in m]
            releases = [r for r in measured if r.pinned_at is not None]
            anchors = [r for r in releases if r.reference_at is not None or r.gate_passed is False]
            if anchors:
                candidates = [r for r in releases if r.logical_date >= anchors[-1].logical_date]
            else:
                candidates = releases or measured
            first = next((r for r in candidates if shares_enough(r)), None)
            if first is None:
                continue
            why = _why_reference(first, anchors[-1] if anchors else None, released=bool(releases))
            if first is not candidates[0]:
                retired = candidates[0]
                why += (
                    f"; {retired.run_id} ({retired.dataset_version}) shares only {shared[retired.run_id]} of this "
                    f"run's items, golden refreshes retired the rest: drift before {first.run_id} is not gated"
                )
            chosen[metric] = (first, why)
        by_run: dict[str, list[str]] = {}
        for metric, (ref, _) in chosen.items():
            by_run.setdefault(ref.run_id, []).append(metric)
        choices = []
        for ref, _ in accepted:
            if ref.run_id not in by_run:
                continue
            names = by_run[ref.run_id]
            why = chosen[names[0]][1]
            if len(by_run) > 1:
                why = f"{why}; the reference of {', '.join(names)}"
            choices.append(ReferenceChoice(ref, why, skipped, frozenset(names)))
        return choices

    def _shared_items(self, run_id: str, items: Collection[str]) -> int:
        """How many of `items` the run has score rows of."""
        return len(set(items) & self._score_values(run_id, eval_scores.c.item_id))

    def _score_values(self, run_id: str, column: sa.Column) -> set[str]:
        """The values `column` of the run's score rows takes (its item ids, its metrics), whatever
        the rows' status."""
        query = (
            sa.select(column)
            .distinct()
            .where(eval_scores.c.run_id == sa.bindparam("run_id", run_id))
        )
        with self.engine.connect() as conn:
            return set(conn.execute(query).scalars())

    def pin(
        self,
        run_id: str,
        *,
        pinned: bool = True,
        reference: bool = False,
        metrics: Collection[str] | None = None,
        min_ok: int = 1,
        expected: Collection[str] = (),
        partial: bool = False,
    ) -> EvalRun:
        """Mark the run as a release (or, with `pinned=False`, no longer); returns the run as saved.

        `reference`: also make it the reference of later runs (`references`). With `metrics` (the
        gated ones), a run that measured none of them (≥ `min_ok` items ok) is refused: it cannot
        vouch for anything as a reference. So is a *partial* run, one that lacks a gated metric it
        should hold, unless `partial`: one of `expected` (what a full eval measures), one it has
        score rows of (all failed or skipped), or one another successful run of its target and
        golden set measured. Pinned with `partial`, each metric it lacks keeps the earliest release
        that measured it as its reference."""
        if pinned and metrics is not None:
            found = self.get_run(run_id)
            if found is not None:
                self._refuse_partial(found, set(metrics), min_ok, set(expected), partial)
        stamp = _utcnow() if pinned else None
        values = {"pinned_at": stamp, "reference_at": stamp if reference else None}
        with self.engine.begin() as conn:
            found = conn.execute(
                sa.update(eval_runs)
                .where(eval_runs.c.run_id == sa.bindparam("run_id", run_id))
                .values(**values)
            ).rowcount
        if not found:
            raise LookupError(
                f"run {run_id!r} is not in the results DB (run ids look like offline/2026-11-30/reference-rag)"
            )
        return self.get_run(run_id)

    def _refuse_partial(
        self, run: EvalRun, metrics: set[str], min_ok: int, expected: set[str], partial: bool
    ) -> None:
        measured = self._measured(run.run_id, metrics, min_ok)
        if not measured:
            raise ValueError(
                f"run {run.run_id!r} measured no gated metric ({', '.join(sorted(metrics))}: none has "
                f"{min_ok} items scored ok), so it cannot be a release: a reference that measured "
                "nothing would pass every later run; pin a run that measured what it gates"
            )
        others = self._measured_by_siblings(run, metrics, min_ok)
        missing = (
            (expected | self._score_values(run.run_id, eval_scores.c.metric) | others) & metrics
        ) - measured
        if missing and not partial:
            raise ValueError(
                f"run {run.run_id!r} lacks {', '.join(sorted(missing))} (fewer than {min_ok} items scored ok): "
                f"as a release it would vouch only for {', '.join(sorted(measured))}. Pin a full run, or pass "
                "--partial to pin it all the same: each metric it lacks then keeps the earliest release that "
                "measured it as its reference"
            )

    def _measured(self, run_id: str, metrics: Collection[str], min_ok: int) -> set[str]:
        """The metrics of `metrics` the run scored ok on at least `min_ok` items."""
        counts = (
            sa.select(eval_scores.c.metric)
            .where(
                eval_scores.c.run_id == sa.bindparam("run_id", run_id),
                eval_scores.c.status == "ok",
                eval_scores.c.metric.in_(sa.bindparam("metrics", sorted(metrics), expanding=True)),
            )
            .group_by(eval_scores.c.metric)
            .having(sa.func.count() >= min_ok)
        )
        with self.engine.connect() as conn:
            return set(conn.execute(counts).scalars())

    def _measured_by_siblings(
        self, run: EvalRun, metrics: Collection[str], min_ok: int
    ) -> set[str]:
        """The metrics of `metrics` any other successful run of the target and golden set measured
        (any date)."""
        counts = (
            sa.select(eval_runs.c.dataset_version, eval_scores.c.metric)
            .join(eval_runs, eval_runs.c.run_id == eval_scores.c.run_id)
            .where(
                eval_runs.c.suite == sa.bindparam("suite", run.suite),
                eval_runs.c.target == sa.bindparam("target", run.target),
                eval_runs.c.run_id != sa.bindparam("run_id", run.run_id),
                eval_runs.c.status == "success",
                eval_scores.c.status == "ok",
                eval_scores.c.metric.in_(sa.bindparam("metrics", sorted(metrics), expanding=True)),
            )
            .group_by(eval_scores.c.run_id, eval_runs.c.dataset_version, eval_scores.c.metric)
            .having(sa.func.count() >= min_ok)
        )
        with self.engine.connect() as conn:
            found = conn.execute(counts).all()
        golden_set = golden_set_of(run)
        return {metric for version, metric in found if version.partition("@")[0] == golden_set}

    def scores(self, run_id: str) -> list[Score]:
        query = (
            sa.select(eval_scores, eval_runs.c.suite)
            .join(eval_runs, eval_runs.c.run_id == eval_scores.c.run_id)
            .where(eval_scores.c.run_id == sa.bindparam("run_id", run_id))
            .order_by(eval_scores.c.item_id, eval_scores.c.metric)
        )
        with self.engine.connect() as conn:
            return [Score(**row) for row in conn.execute(query).mappings()]

    def _select_runs(
        self, suite: str, *, target: str | None, before: date | None, status: str | None, limit: int
    ) -> list[EvalRun]:
        query = sa.select(eval_runs).where(eval_runs.c.suite == sa.bindparam("suite", suite))
        if target is not None:
            query = query.where(eval_runs.c.target == sa.bindparam("target", target))
        if before is not None:
            query = query.where(eval_runs.c.logical_date < sa.bindparam("before", before))
        if status is not None:
            query = query.where(eval_runs.c.status == sa.bindparam("status", status))
        query = query.order_by(
            eval_runs.c.logical_date.desc(), eval_runs.c.created_at.desc()
        ).limit(limit)
        with self.engine.connect() as conn:
            return [_run_from_row(row) for row in conn.execute(query).mappings()]


def _score_row(run: EvalRun, score: Score) -> dict[str, Any]:
    if score.run_id != run.run_id or score.suite != run.suite:
        raise ResultsStoreError(
            f"score of item {score.item_id} belongs to run {score.run_id!r} ({score.suite}), "
            f"not to {run.run_id!r} ({run.suite})"
        )
    return score.model_dump(exclude={"suite"})


def _run_row(run: EvalRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "suite": run.suite,
        "logical_date": run.logical_date,
        "target": run.target,
        "dataset_version": run.dataset_version,
        "judge_model": run.judge_model,
        "generator_model": run.generator_model,
        "params": run.params,
        "status": run.status,
        "gate_passed": run.gate_passed,
        "gate": run.gate,
        "report_path": run.report_path,
        "created_at": _as_utc(run.created_at),
        "finished_at": _as_utc(run.finished_at),
        "pinned_at": _as_utc(run.pinned_at),
        "cost": run.cost,
        "reference_at": _as_utc(run.reference_at),
    }


def _run_from_row(row: sa.RowMapping) -> EvalRun:
    values = dict(row)
    values["created_at"] = _as_utc(values["created_at"])
    values["finished_at"] = _as_utc(values["finished_at"])
    values["pinned_at"] = _as_utc(values["pinned_at"])
    values["reference_at"] = _as_utc(values["reference_at"])
    return EvalRun(**values)


def _why_reference(first: EvalRun, anchor: EvalRun | None, *, released: bool) -> str:
    if not released:
        return f"the first accepted run of {golden_set_of(first)} ({first.dataset_version})"
    if first is anchor:
        why = (
            f"the reference since {anchor.reference_at:%Y-%m-%d} (`eval pin --reference`)"
            if anchor.reference_at
            else "the release that accepted a change (pinned although its gate failed)"
        )
    else:
        since = f" since {anchor.run_id} moved it" if anchor else ""
        why = f"the first release{since}"
    return f"{why}, on {first.dataset_version}, pinned {first.pinned_at:%Y-%m-%d}"


def golden_set_of(run: EvalRun) -> str:
    """The golden set a run evaluated, without its version: `golden@v3` -> `golden`."""
    return run.dataset_version.partition("@")[0]


def _as_utc(ts: datetime | None) -> datetime | None:
    # SQLite keeps no zone: values are written in UTC and read back as naive UTC.
    if ts is None:
        return None
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


def _engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(parsed)

        @sa.event.listens_for(engine, "connect")
        def _foreign_keys(
            dbapi_connection, _record
        ):  # SQLite ignores FOREIGN KEY clauses unless asked
            dbapi_connection.execute("PRAGMA foreign_keys=ON")

        return engine
    return sa.create_engine(parsed, pool_pre_ping=True)
