"""The data workspace: the one owner of every path in it, and the reader of its `.dvc` files.

The workspace is a git + DVC repository (`RAGWATCH_WORKSPACE`, default `.ragwatch/workspace`):

    golden/traces/dt=YYYY-MM-DD/   a day's sampled traces (PartitionPaths: part files), in DVC
    golden/datasets/<name>/        a released golden set (items.parquet, rejected.jsonl, manifest)
    golden/build/<name>/           a golden build in progress: plan, generated, filtered, staged
    golden/human/<name>.jsonl      hand-written items (versioned with each release)
    golden/reviews/<name>/         review decisions (versioned with each release)
    golden/judge_audit/keys/, labels/   the judge audit's verdicts per queued item, people's labels
    golden/reports/<suite>/<day>_<target>.html   eval reports (+ .metrics.json: `dvc metrics diff`)
    golden/corpus.json             the indexed corpus version the golden pipeline depends on
    runs/<suite>/<day>_<target>/   an eval run's working files (responses, scores)
    inbox/                         golden candidates from the online eval and the judge-audit queue,
                                   for people to fill in
    .staging/                      partitions being written, swapped in when validated, and the
                                   selection their shards write from (SelectionPaths)
    .workspace.lock                held by whoever changes the workspace's git or DVC state

Nothing else in ragwatch joins paths under the workspace: steps ask this object. `runs/`, `inbox/`,
`.staging/` and the lock file are ignored by git and DVC, so releasing a golden set never versions
them.

A versioned folder's `.dvc` file names the folder's content twice: DVC's md5 of the whole folder,
and (under `meta`) the SHA-256 of the folder's manifest when that md5 was taken. Promoting a folder
and versioning it are two steps, and a run can die between them or inside `dvc add`: the folder then
holds a new sample while its `.dvc` file still names the old one. Readers ask `data_version`, which
compares the recorded manifest hash with the manifest in the folder (a small file: no data is read)
and raises `StaleVersion` on a mismatch, so nothing is stamped with a version its data is not; the
next versioning run completes what the dead one left (pipelines.traces.steps,
pipelines.golden.steps).
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from pipelines.core import inputs

log = logging.getLogger(__name__)
LOCK_FILE = ".workspace.lock"
MANIFEST_RECORD = "manifest_sha256"
"""The key, under a `.dvc` file's `meta`, of the SHA-256 of the folder's manifest that DVC's md5 was
taken of."""
UNVERSIONED = ("/.staging/", "/runs/", "/inbox/", f"/{LOCK_FILE}")
"""Workspace paths neither git nor DVC ever track (written to .gitignore and .dvcignore)."""
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class StaleVersion(RuntimeError):
    """A folder's `.dvc` file does not name what the folder holds: a versioning step stopped
    half-way."""


def manifest_sha256(folder: Path) -> str | None:
    manifest = folder / "_manifest.json"
    return hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.exists() else None


def release_remedy(name: str) -> str:
    return (
        f"run `ragwatch golden release --name {name}` or clear the golden_build DAG's `release` task: it versions the "
        "promoted release before anything else"
    )


def safe_name(name: str) -> str:
    """A name usable as one path component: anything but letters, digits, `_`, `-` and `.` becomes
    `_`."""
    return _UNSAFE_NAME.sub("_", name).lstrip(".") or "_"


@dataclass(frozen=True)
class PartitionPaths:
    """One day partition: sampled rows and quarantined rows in numbered part files, and the
    manifest.

    Part `i` is `part-<i>.parquet` with its quarantined rows in `_quarantine/part-<i>.parquet`
    (zero-padded, so name order is row order). Names starting with `_` are skipped by pyarrow's
    dataset discovery, so the partitions of a dataset read as a hive-partitioned dataset of sampled
    rows only.
    """

    root: Path

    def part(self, index: int) -> Path:
        return self.root / f"part-{index:05d}.parquet"

    def quarantine_part(self, index: int) -> Path:
        return self.root / "_quarantine" / f"part-{index:05d}.parquet"

    @property
    def parts(self) -> list[Path]:
        """The sampled rows' files in row order: what a reader reads as the partition's rows."""
        return sorted(self.root.glob("part-*.parquet"))

    @property
    def quarantine_parts(self) -> list[Path]:
        return sorted((self.root / "_quarantine").glob("part-*.parquet"))

    @property
    def manifest(self) -> Path:
        return self.root / "_manifest.json"


@dataclass(frozen=True)
class SelectionPaths:
    """A day's selection while its shards write the staged partition: the selected ids (row group
    `i` holds part `i`'s ids), the plan, one record per finished shard, and a scratch folder for
    parts being written."""

    root: Path

    @property
    def ids(self) -> Path:
        return self.root / "selected.parquet"

    @property
    def plan(self) -> Path:
        return self.root / "plan.json"

    def shard_record(self, index: int) -> Path:
        return self.root / f"shard-{index:04d}.json"

    @property
    def shard_records(self) -> list[Path]:
        return sorted(self.root.glob("shard-*.json"))

    @property
    def scratch(self) -> Path:
        """Parts are written here and renamed into the staged partition (same filesystem), so a part
        is whole or absent there, and a shard that dies leaves nothing the partition would
        publish."""
        return self.root / "tmp"


@dataclass(frozen=True)
class GoldenPaths:
    """Where one golden set's build, release and inputs live."""

    root: Path
    """The workspace root."""
    name: str

    @property
    def build(self) -> Path:
        return self.root / "golden" / "build" / self.name

    @property
    def plan(self) -> Path:
        return self.build / "plan.jsonl"

    @property
    def plan_meta(self) -> Path:
        return self.build / "plan.meta.json"

    @property
    def parts(self) -> Path:
        return self.build / "parts"

    def generated_part(self, start: int) -> Path:
        return self.parts / f"part-{start:06d}.jsonl"

    def failed_part(self, start: int) -> Path:
        return self.parts / f"failed-{start:06d}.jsonl"

    def cost_part(self, start: int) -> Path:
        """The generator's request and token counters for the batch that starts at `start`."""
        return self.parts / f"cost-{start:06d}.json"

    @property
    def filtered(self) -> Path:
        return self.build / "filtered"

    @property
    def kept(self) -> Path:
        return self.filtered / "kept.jsonl"

    @property
    def filter_rejected(self) -> Path:
        return self.filtered / "rejected.jsonl"

    @property
    def funnel(self) -> Path:
        return self.filtered / "funnel.json"

    @property
    def staged(self) -> Path:
        return self.build / "staged"

    @property
    def staged_items(self) -> Path:
        return self.staged / "items.parquet"

    @property
    def staged_rejected(self) -> Path:
        return self.staged / "rejected.jsonl"

    @property
    def staged_manifest(self) -> Path:
        return self.staged / "_manifest.json"

    @property
    def staged_chunk_ids(self) -> Path:
        """The index's chunk ids when the set was staged; validation checks gold ids against
        them."""
        return self.staged / "_current_chunk_ids.json"

    @property
    def released(self) -> Path:
        return self.root / "golden" / "datasets" / self.name

    @property
    def released_items(self) -> Path:
        return self.released / "items.parquet"

    @property
    def released_rejected(self) -> Path:
        return self.released / "rejected.jsonl"

    @property
    def released_manifest(self) -> Path:
        return self.released / "_manifest.json"

    @property
    def human(self) -> Path:
        return self.root / "golden" / "human" / f"{self.name}.jsonl"

    @property
    def reviews(self) -> Path:
        return self.root / "golden" / "reviews" / self.name

    def decisions(self, number: int) -> Path:
        return self.reviews / f"decisions-{number:04d}.jsonl"

    @property
    def decision_files(self) -> list[Path]:
        return sorted(self.reviews.glob("decisions-*.jsonl"))

    @property
    def pending_review(self) -> Path:
        return self.reviews / "pending.json"

    @property
    def filter_verdicts(self) -> Path:
        return self.reviews / "filter-verdicts.json"

    @property
    def tag_prefix(self) -> str:
        return f"golden/{self.name}/v"

    def tag(self, version: str) -> str:
        return f"golden/{self.name}/{version}"


@dataclass(frozen=True)
class RunPaths:
    """One eval run's working files: its parameters, the target's responses (online: the judged
    traces), the score batches."""

    root: Path

    @property
    def meta(self) -> Path:
        return self.root / "run.json"

    @property
    def responses(self) -> Path:
        return self.root / "responses.jsonl"

    @property
    def traces(self) -> Path:
        """The online eval's judged traces, selected from the day's sample."""
        return self.root / "traces.jsonl"

    @property
    def coverage(self) -> Path:
        """The online eval's golden coverage of the day (pipelines/evaluation/coverage/daily.py)."""
        return self.root / "coverage.json"

    def scores(self, part: str) -> Path:
        return self.root / f"scores-{part}.jsonl"

    @property
    def score_files(self) -> list[Path]:
        return sorted(self.root.glob("scores-*.jsonl"))

    def usage(self, part: str) -> Path:
        """What one step's model requests cost (the judge batch's, or the offline prepare's target),
        per stage and metric: `pipelines.evaluation.runs.cost`."""
        return self.root / f"usage-{part}.json"

    @property
    def usage_files(self) -> list[Path]:
        return sorted(self.root.glob("usage-*.json"))

    def verdicts(self, part: str) -> Path:
        """Per-item answer-correctness verdicts of one judge batch with the judge's reasons, which
        the report shows (the verdicts themselves are the `answer_correctness` scores)."""
        return self.root / f"verdicts-{part}.jsonl"

    @property
    def verdict_files(self) -> list[Path]:
        return sorted(self.root.glob("verdicts-*.jsonl"))

    def retests(self, part: str) -> Path:
        """The second judgements of one judge batch's retested items (metrics/judge_retest.py):
        score rows that the aggregates, the gate and the results DB never read, only the judge-noise
        statistics."""
        return self.root / f"retests-{part}.jsonl"

    @property
    def retest_files(self) -> list[Path]:
        return sorted(self.root.glob("retests-*.jsonl"))


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def from_settings(cls, settings) -> Workspace:
        return cls(settings.resolved_workspace)

    # -- trace partitions ------------------------------------------------------------------------

    @property
    def traces_root(self) -> Path:
        return self.root / "golden" / "traces"

    def traces_partition(self, day: date) -> PartitionPaths:
        return PartitionPaths(self.traces_root / f"dt={day.isoformat()}")

    def has_traces(self, day: date, *, versioned: bool = False) -> bool:
        """Has this day's sampled partition been promoted, and does its `.dvc` file, if any, name
        it? With `versioned` (the online eval's sensor), it must have one: a DAG run's data is
        versioned before it is read."""
        if not self.traces_partition(day).manifest.exists():
            return False
        try:
            md5 = self.traces_version(day)
        except StaleVersion as exc:
            log.warning("%s", exc)
            return False
        return md5 is not None or not versioned

    def traces_version(self, day: date) -> str | None:
        """DVC's md5 of the day's partition; None if it was never versioned. StaleVersion if it
        names another."""
        return self.data_version(
            self.traces_partition(day).root,
            f"version it: clear the `version` task of the trace_sampling run for {day} (any later run of "
            f"trace_sampling versions it too), or run `ragwatch traces version --date {day}`",
        )

    def promoted_trace_days(self) -> list[date]:
        """Every day with a promoted partition (a manifest), oldest first."""
        folders = self.traces_root.glob("dt=*/_manifest.json")
        return sorted(date.fromisoformat(path.parent.name.removeprefix("dt=")) for path in folders)

    @property
    def traces_staging_root(self) -> Path:
        """Every attempt's staging and selection folders (`traces_staging`, `traces_selection`) of
        every day."""
        return self.root / ".staging" / "traces"

    def traces_staging(self, day: date, attempt: str = "") -> PartitionPaths:
        """A private staging folder per day (and per attempt), so concurrent runs never share
        one."""
        suffix = f".{safe_name(attempt)}" if attempt else ""
        return PartitionPaths(self.traces_staging_root / f"dt={day.isoformat()}{suffix}")

    def traces_selection(self, day: date, attempt: str) -> SelectionPaths:
        """The selection beside the staging folder of the same attempt (never inside it: it is not
        published)."""
        return SelectionPaths(
            self.traces_staging_root / f"dt={day.isoformat()}.{safe_name(attempt)}.selection"
        )

    # -- golden sets -----------------------------------------------------------------------------

    def release_version(self, name: str) -> str | None:
        """DVC's md5 of a golden set's release; None if it has none. StaleVersion if its `.dvc` file
        names another."""
        return self.data_version(self.golden(name).released, release_remedy(name))

    def golden(self, name: str) -> GoldenPaths:
        # The name becomes a folder that builds reset: a hostile one ("../..") must never get here.
        return GoldenPaths(self.root, inputs.golden_name(name))

    @property
    def corpus_record(self) -> Path:
        return self.root / "golden" / "corpus.json"

    @property
    def params_file(self) -> Path:
        return self.root / "params.yaml"

    @property
    def input_dirs(self) -> tuple[Path, ...]:
        """Folders people write into, created with the workspace so `dvc repro` finds them."""
        return (self.root / "golden" / "human", self.root / "golden" / "reviews")

    # -- eval runs, reports, inbox ---------------------------------------------------------------

    def run_folder(self, suite: str, day: date, target: str) -> RunPaths:
        return RunPaths(self.root / "runs" / inputs.suite(suite) / self._report_name(day, target))

    @property
    def reports_dir(self) -> Path:
        return self.root / "golden" / "reports"

    def report(self, suite: str, day: date, target: str) -> Path:
        """`golden/reports/<suite>/<day>_<target>.html`: one file per run, replaced on rerun."""
        return self.reports_dir / inputs.suite(suite) / f"{self._report_name(day, target)}.html"

    @staticmethod
    def _report_name(day: date, target: str) -> str:
        return inputs.report_name(f"{day.isoformat()}_{inputs.target_name(target)}")

    @staticmethod
    def metrics_json(report: Path) -> Path:
        return report.with_suffix(".metrics.json")

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    def review_candidates(self, day: date) -> Path:
        return self.inbox / f"candidates-{day.isoformat()}.csv"

    def uncovered_topics(self, day: date) -> Path:
        """The day's largest traffic topics the golden set does not cover, three questions each: for
        people to review, and the first trace questions of the next golden builds."""
        return self.inbox / f"uncovered-{day.isoformat()}.csv"

    def judge_audit_queue(self, suite: str, day: date, target: str) -> Path:
        """`inbox/judge-audit-<suite>-<day>_<target>.csv` (+ `.jsonl`): judged items for people to
        label yes/no."""
        return (
            self.inbox / f"judge-audit-{inputs.suite(suite)}-{self._report_name(day, target)}.csv"
        )

    @property
    def judge_audit_keys(self) -> Path:
        return self.root / "golden" / "judge_audit" / "keys"

    def judge_audit_key(self, suite: str, day: date, target: str) -> Path:
        """The judge's verdict of each queued item, kept out of the labellers' file."""
        return (
            self.judge_audit_keys / f"{inputs.suite(suite)}-{self._report_name(day, target)}.json"
        )

    def judge_labels(self, number: int) -> Path:
        return self.root / "golden" / "judge_audit" / "labels" / f"labels-{number:04d}.jsonl"

    @property
    def judge_label_files(self) -> list[Path]:
        """Every label import so far, oldest first (a later label of the same item wins)."""
        return sorted((self.root / "golden" / "judge_audit" / "labels").glob("labels-*.jsonl"))

    # -- versioning ------------------------------------------------------------------------------

    @property
    def lock_file(self) -> Path:
        """The file whose lock serialises changes to the workspace's git and DVC state
        (pipelines.core.versioning)."""
        return self.root / LOCK_FILE

    def relative(self, path: Path) -> Path:
        return Path(path).resolve().relative_to(self.root.resolve())

    @staticmethod
    def dvc_file(path: Path) -> Path:
        return path.with_name(path.name + ".dvc")

    def data_version(self, folder: Path, remedy: str) -> str | None:
        """DVC's md5 of a promoted folder (one with a manifest) whose `.dvc` file was written for
        the folder as it is now; None if there is no folder or no `.dvc` file. StaleVersion, saying
        `remedy`, if the `.dvc` file names other content, or records no manifest (a `dvc add` that
        has not finished its step)."""
        current = manifest_sha256(folder)
        dvc_file = self.dvc_file(folder)
        if current is None or not dvc_file.exists():
            return None
        body = yaml.safe_load(dvc_file.read_text()) or {}
        if (body.get("meta") or {}).get(MANIFEST_RECORD) != current:
            raise StaleVersion(
                f"{self.relative(folder)} is not the data its {dvc_file.name} names (the run that promoted it "
                f"stopped before it was versioned): {remedy}"
            )
        return ((body.get("outs") or [{}])[0]).get("md5")

    def dvc_md5(self, path: Path) -> str | None:
        """DVC's content hash of a versioned folder or file (from its `.dvc` file), or None if
        unversioned."""
        dvc_file = self.dvc_file(path)
        if not dvc_file.exists():
            return None
        outs = (yaml.safe_load(dvc_file.read_text()) or {}).get("outs") or [{}]
        return outs[0].get("md5")
