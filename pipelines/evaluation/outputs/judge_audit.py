"""The judge audit: a small daily queue of judged items for people to label yes/no, and the labels
taken back.

Each eval run queues `RAGWATCH_JUDGE_AUDIT_PER_DAY` items (default 20) of the metrics with a 0/1
form (metrics/verdicts.py) per run (suite, day, target), as many per (metric, judge verdict) stratum
as the run has, in an order fixed by a hash of (run, item, metric): a rerun queues the same items.
The queue is `inbox/judge-audit-<suite>-<day>_<target>.csv` (+ `.jsonl`), like the review inbox:
unversioned (production text), formulas kept as text. The judge's verdicts are not in it (labellers
must not see them): ragwatch keeps them in `golden/judge_audit/keys/`. `ragwatch judge labels import
FILE` checks the whole file first and imports nothing when a row is wrong; accepted labels go to
`golden/judge_audit/labels/` and the next eval run of the suite calibrates its judge on every label
so far (statistics/judge_agreement.py): its key records each queued run's date and verdict mix,
which the correction needs to weigh each label for its own run.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from pipelines.core.files import read_filled_in_rows, read_jsonl, write_filled_in_rows, write_jsonl
from pipelines.core.records import Score
from pipelines.core.settings import Settings
from pipelines.core.workspace import Workspace
from pipelines.evaluation.metrics.verdicts import AUDITED
from pipelines.evaluation.outputs.report import ItemView
from pipelines.evaluation.statistics.judge_agreement import Calibration, agreement, calibrate
from pipelines.stores.results import EvalRun

COLUMNS = [
    "audit_id",
    "metric",
    "ask",
    "question",
    "answer",
    "contexts",
    "reference_answer",
    "label",
    "labeller",
    "notes",
]
YES, NO = {"yes", "y", "1", "true"}, {"no", "n", "0", "false"}
CONTEXT_CHARS = 1500
"""Of each context shown to a labeller: enough to check a claim, short enough for a spreadsheet
cell."""


class LabelFileError(ValueError):
    """A label file with rows that cannot be imported; nothing of it was imported."""


def audit_id(run_id: str, item_id: str, metric: str) -> str:
    return hashlib.sha256(f"judge-audit\x00{run_id}\x00{item_id}\x00{metric}".encode()).hexdigest()[
        :16
    ]


def audit_sample(scores: Sequence[Score], per_day: int) -> list[tuple[Score, int]]:
    """Up to `per_day` (score, judge verdict) pairs, round-robin over the (metric, verdict) strata
    in hash order, so both verdicts of every audited metric are represented whenever the run has
    them."""
    strata: dict[tuple[str, int], list[Score]] = defaultdict(list)
    for s in scores:
        if s.status == "ok" and s.metric in AUDITED:
            strata[(s.metric, AUDITED[s.metric].verdict(s.value))].append(s)
    queues = [
        sorted(members, key=lambda s: audit_id(s.run_id, s.item_id, s.metric))
        for _, members in sorted(strata.items())
    ]
    picked: list[tuple[Score, int]] = []
    while len(picked) < per_day and any(queues):
        for queue in queues:
            if queue and len(picked) < per_day:
                s = queue.pop(0)
                picked.append((s, AUDITED[s.metric].verdict(s.value)))
    return picked


def queue_judge_audit(
    workspace: Workspace,
    suite: str,
    day: date,
    target: str,
    scores: Sequence[Score],
    items: Mapping[str, ItemView],
    per_day: int,
) -> tuple[int, Path | None]:
    """Write the day's audit queue (CSV + JSONL in the inbox) and its key; (items queued, the CSV or
    None)."""
    picked = [(s, v) for s, v in audit_sample(scores, per_day) if s.item_id in items]
    if not picked:
        return 0, None
    # Each label must later stand for its own run's items
    # (statistics/misclassification.label_weights): the key keeps the run's date and, per metric,
    # how many items the judge scored and said yes to.
    judged: dict[str, list[int]] = defaultdict(list)
    for s in scores:
        if s.status == "ok" and s.metric in AUDITED:
            judged[s.metric].append(AUDITED[s.metric].verdict(s.value))
    rows, key = [], {}
    for s, verdict in picked:
        item, aid = items[s.item_id], audit_id(s.run_id, s.item_id, s.metric)
        rows.append(
            {
                "audit_id": aid,
                "metric": s.metric,
                "ask": AUDITED[s.metric].ask,
                "question": item.question,
                "answer": item.answer,
                "contexts": "\n---\n".join(c[:CONTEXT_CHARS] for c in item.contexts),
                "reference_answer": item.reference_answer or "",
                "label": "",
                "labeller": "",
                "notes": "",
            }
        )
        key[aid] = {
            "run_id": s.run_id,
            "suite": s.suite,
            "item_id": s.item_id,
            "metric": s.metric,
            "judge_value": s.value,
            "judge_verdict": verdict,
            "day": day.isoformat(),
            "run_judged": len(judged[s.metric]),
            "run_judged_yes": sum(judged[s.metric]),
        }
    path = workspace.judge_audit_queue(suite, day, target)
    write_filled_in_rows(path, COLUMNS, rows)
    write_jsonl(path.with_suffix(".jsonl"), rows)
    key_path = workspace.judge_audit_key(suite, day, target)
    key_path.parent.mkdir(parents=True, exist_ok=True)
    key_path.write_text(json.dumps(key, indent=1, sort_keys=True), encoding="utf-8")
    return len(rows), path


def _read_rows(path: Path) -> list[dict[str, Any]]:
    try:
        return read_filled_in_rows(path)
    except ValueError as exc:
        raise LabelFileError(f"{exc}; nothing was imported") from exc


def _keys(workspace: Workspace) -> dict[str, dict[str, Any]]:
    keys: dict[str, dict[str, Any]] = {}
    for path in (
        sorted(workspace.judge_audit_keys.glob("*.json"))
        if workspace.judge_audit_keys.exists()
        else []
    ):
        keys.update(json.loads(path.read_text(encoding="utf-8")))
    return keys


def read_label_file(workspace: Workspace, path: Path) -> list[dict[str, Any]]:
    """The labelled rows of an audit file, each joined with the judge's verdict from its key. Every
    problem of the file is listed in one LabelFileError, and then nothing is imported."""
    rows, keys = _read_rows(path), _keys(workspace)
    if rows and not {"audit_id", "label"} <= set(rows[0]):
        raise LabelFileError(
            f"{path.name} has no audit_id and label columns: label a file from "
            f"{workspace.inbox}/judge-audit-*.csv and import that; nothing was imported"
        )
    first = 2 if path.suffix.lower() == ".csv" else 1
    labels, problems, seen = [], [], {}
    for number, row in enumerate(rows, start=first):
        text = str(row.get("label") or "").strip().lower()
        if not text:
            continue  # not labelled yet
        aid = str(row.get("audit_id") or "").strip()
        where = f"{path.name} row {number}"
        if aid not in keys:
            problems.append(
                f"{where}: audit_id {aid!r} was never queued (is this a judge-audit file of this workspace?)"
            )
        elif text not in YES | NO:
            problems.append(f"{where}: label {row.get('label')!r} is not yes or no")
        elif seen.get(aid, text in YES) != (text in YES):
            problems.append(f"{where}: audit_id {aid} is labelled both yes and no")
        else:
            seen[aid] = text in YES
            labels.append(
                {
                    **keys[aid],
                    "audit_id": aid,
                    "human": int(text in YES),
                    "labeller": str(row.get("labeller") or "").strip(),
                    "notes": str(row.get("notes") or "").strip(),
                }
            )
    if problems:
        raise LabelFileError(
            "; ".join(problems)
            + ". Fix these rows (label: yes or no, or leave it empty) and import "
            "the file again: nothing was imported."
        )
    return list({label["audit_id"]: label for label in labels}.values())


@dataclass(frozen=True)
class LabelImport:
    imported: int
    path: Path | None
    agreement: dict[tuple[str, str], Any]
    """(suite, metric) -> statistics.judge_agreement.Agreement over every label so far
    (unweighted)."""
    labels: dict[tuple[str, str], int]


def import_labels(workspace: Workspace, path: Path) -> LabelImport:
    """Check a labelled audit file and store its labels (a new numbered file; the latest label of an
    item wins)."""
    labels = read_label_file(workspace, path)
    stored = None
    if labels:
        now = datetime.now(timezone.utc).isoformat()
        stored = workspace.judge_labels(len(workspace.judge_label_files) + 1)
        write_jsonl(
            stored, ({**label, "imported_at": now, "source": path.name} for label in labels)
        )
    by_pair: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for label in all_labels(workspace).values():
        by_pair[(label["suite"], label["metric"])].append(label)
    return LabelImport(
        imported=len(labels),
        path=stored,
        agreement={
            k: agreement([x["human"] for x in v], [x["judge_verdict"] for x in v])
            for k, v in sorted(by_pair.items())
        },
        labels={k: len(v) for k, v in sorted(by_pair.items())},
    )


def all_labels(workspace: Workspace) -> dict[str, dict[str, Any]]:
    """audit_id -> its latest label, over every import so far."""
    return {
        row["audit_id"]: row for path in workspace.judge_label_files for row in read_jsonl(path)
    }


def calibrate_suite(
    workspace: Workspace, suite: str, scores: Sequence[Score], half_width: float, run: str = ""
) -> list[Calibration]:
    """Per audited metric the run scored: agreement over every label of the suite so far (any day,
    any target), and the run's mean of the metric's 0/1 form judge-only and corrected by the judge's
    error rates on those labels, each label standing for its own run's items
    (statistics/judge_agreement.py)."""
    labels = [label for label in all_labels(workspace).values() if label["suite"] == suite]
    out = []
    for metric, form in AUDITED.items():
        judged = [form.verdict(s.value) for s in scores if s.metric == metric and s.status == "ok"]
        mine = [label for label in labels if label["metric"] == metric]
        if judged or mine:
            shares = {
                label["run_id"]: label["run_judged_yes"] / label["run_judged"]
                for label in mine
                if label.get("run_judged")
            }
            out.append(
                calibrate(
                    suite,
                    metric,
                    form.meaning,
                    human=[label["human"] for label in mine],
                    labelled_verdicts=[label["judge_verdict"] for label in mine],
                    labelled_runs=[label["run_id"] for label in mine],
                    labelled_days=[label.get("day") or _day_of(label["run_id"]) for label in mine],
                    run_yes_share=shares,
                    judged_verdicts=judged,
                    run=run,
                    half_width=half_width,
                )
            )
    return out


def _day_of(run_id: str) -> str:
    """A run id is suite/YYYY-MM-DD/target (stores.results.run_id): its date, for labels keyed
    before "day"."""
    parts = run_id.split("/")
    return parts[1] if len(parts) == 3 else ""


JUDGE_AUDIT = "judge_audit"
"""The run params key of the audit (queued items, calibration): the report, summary and push read it
there."""


def audit_run(
    settings: Settings, run: EvalRun, scores: Sequence[Score], items: Mapping[str, ItemView]
) -> dict[str, Any]:
    """The eval run's audit step: queue its items for labelling, calibrate its judge on every label
    so far."""
    workspace = Workspace.from_settings(settings)
    queued, path = queue_judge_audit(
        workspace,
        run.suite,
        run.logical_date,
        run.target,
        scores,
        items,
        settings.judge_audit_per_day,
    )
    calibration = calibrate_suite(
        workspace, run.suite, scores, settings.judge_audit_half_width, run=run.run_id
    )
    return {
        "queued": queued,
        "queue": str(workspace.relative(path)) if path else None,
        "calibration": [c.to_dict() for c in calibration],
    }
