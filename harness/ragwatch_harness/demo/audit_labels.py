"""The demo's reviewer: labels the judge-audit queue as a person who disagrees with the judge at
known rates would.

A real team labels `inbox/judge-audit-*.csv` by hand. The demo has no person, so it plants the
labels: the judge's own verdict (from the audit key, which real labellers never see), flipped for
FALSE_YES of its "yes" verdicts and FALSE_NO of its "no" verdicts, chosen by a hash of the audit id
— a judge that errs at those known rates. The labelled copy is written beside the queue; `ragwatch
judge labels import` then takes it back like any file a person filled in, and the next eval run of
the suite reports Cohen's κ and the judge-corrected mean beside the judge-only one.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from pipelines.core.files import read_filled_in_rows, write_filled_in_rows
from pipelines.core.workspace import Workspace
from pipelines.evaluation.outputs.judge_audit import COLUMNS
from pipelines.models.offline import draw

FALSE_YES, FALSE_NO = 0.15, 0.05
"""The planted reviewer says "no" to 15 % of the judge's "yes" verdicts and "yes" to 5 % of its "no"
ones."""
LABELLER = "demo reviewer (planted labels)"


def plant_audit_labels(
    workspace: Workspace, suite: str, day: date, target: str
) -> tuple[int, Path]:
    """Label the run's audit queue; (rows labelled, the labelled CSV)."""
    queue = workspace.judge_audit_queue(suite, day, target)
    key_path = workspace.judge_audit_key(suite, day, target)
    if not queue.exists() or not key_path.exists():
        raise FileNotFoundError(
            f"no judge-audit queue for the {suite} eval of {day} ({queue}): run that eval first"
        )
    key = json.loads(key_path.read_text(encoding="utf-8"))
    rows = read_filled_in_rows(queue)
    for row in rows:
        verdict = key[row["audit_id"]]["judge_verdict"]
        flipped = draw("demo-audit-label", row["audit_id"]) < (FALSE_YES if verdict else FALSE_NO)
        row.update(label="yes" if verdict != flipped else "no", labeller=LABELLER)
    labelled = queue.with_name(queue.stem + "-labelled.csv")
    write_filled_in_rows(labelled, COLUMNS, rows)
    return len(rows), labelled
