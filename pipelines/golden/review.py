"""Human review: export a stratified sample, import decisions, measure agreement with filters.

The sample mixes kept items with some the automatic filters rejected, without saying which, so
the import can report how often reviewers and filters agree (and Cohen's kappa).
Decisions are stored in the data workspace and re-applied on every rebuild.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.core.files import write_filled_in_rows
from pipelines.core.records import GoldenItem

ITEM_COLUMNS = (
    "item_id",
    "qtype",
    "variant",
    "language",
    "split",
    "question",
    "reference_answer",
)
"""The golden item's own fields, as the sheet shows them."""
COLUMNS = [
    *ITEM_COLUMNS,
    "gold_excerpt",
    "decision",
    "edited_question",
    "edited_reference_answer",
    "reviewer",
    "notes",
]
DECISIONS = {"accept", "reject", "edit"}


def _order(item_id: str) -> str:
    return hashlib.sha256(f"review\x00{item_id}".encode()).hexdigest()


def review_sample(
    kept: Sequence[GoldenItem], rejected: Sequence[dict], fraction: float
) -> list[dict[str, Any]]:
    """At least one item per (qtype, language) stratum, ~`fraction` overall, plus ~1/4 as many
    filter rejects."""
    strata: dict[tuple, list[GoldenItem]] = defaultdict(list)
    for item in kept:
        if item.source != "human":
            strata[(item.qtype, item.language)].append(item)
    picked: list[dict] = []
    for stratum in sorted(strata):
        members = sorted(strata[stratum], key=lambda i: _order(i.item_id))
        picked += [
            _row(i.model_dump(mode="json"), "kept")
            for i in members[: max(1, round(fraction * len(members)))]
        ]
    n_rejects = max(1, len(picked) // 4) if rejected else 0
    for row in sorted(rejected, key=lambda r: _order(r["item_id"]))[:n_rejects]:
        picked.append(_row(row, "rejected"))
    return sorted(picked, key=lambda r: _order(r["item_id"]))


def _row(item: dict[str, Any], filter_verdict: str) -> dict[str, Any]:
    excerpt = " … ".join(c[:200] for c in item.get("reference_contexts") or [])
    row = {c: "" for c in COLUMNS}
    row.update({k: item[k] for k in ITEM_COLUMNS})
    row["gold_excerpt"] = excerpt
    row["_filter"] = filter_verdict
    return row


def write_review_files(rows: Sequence[dict], out_dir: Path, name: str) -> tuple[Path, Path, Path]:
    """CSV and JSONL for reviewers; the filter verdicts go to a separate key file they don't see."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, jsonl_path, key_path = (
        out_dir / f"{name}-review.csv",
        out_dir / f"{name}-review.jsonl",
        out_dir / f"{name}-review.key.json",
    )
    write_filled_in_rows(csv_path, COLUMNS, rows)  # generated text may start with "="
    jsonl_path.write_text(
        "".join(json.dumps({c: r[c] for c in COLUMNS}, ensure_ascii=False) + "\n" for r in rows),
        encoding="utf-8",
    )
    key_path.write_text(
        json.dumps({r["item_id"]: r["_filter"] for r in rows}, indent=1, sort_keys=True)
    )
    return csv_path, jsonl_path, key_path


@dataclass(frozen=True)
class Decision:
    item_id: str
    decision: str
    edited_question: str | None = None
    edited_reference_answer: str | None = None
    reviewer: str = ""


def read_decisions(path: Path) -> tuple[list[Decision], list[str]]:
    from pipelines.core.files import read_filled_in_rows

    decisions, problems = [], []
    for number, row in enumerate(
        read_filled_in_rows(path), start=2 if path.suffix.lower() == ".csv" else 1
    ):
        decision = (row.get("decision") or "").strip().lower()
        if not decision:
            continue  # not reviewed yet
        if decision not in DECISIONS:
            problems.append(
                f"{path.name} row {number}: decision {decision!r} is not one of {sorted(DECISIONS)}"
            )
            continue
        edited_q = (row.get("edited_question") or "").strip() or None
        edited_a = (row.get("edited_reference_answer") or "").strip() or None
        if decision == "edit" and not (edited_q or edited_a):
            problems.append(
                f"{path.name} row {number}: decision 'edit' without an edited question or answer"
            )
            continue
        decisions.append(
            Decision(
                row["item_id"], decision, edited_q, edited_a, (row.get("reviewer") or "").strip()
            )
        )
    return decisions, problems


def agreement(decisions: Sequence[Decision], filter_verdicts: dict[str, str]) -> dict[str, Any]:
    """Reviewer vs filters on the items both judged: raw agreement and Cohen's kappa."""
    pairs = [
        (d.decision != "reject", filter_verdicts[d.item_id] == "kept")
        for d in decisions
        if d.item_id in filter_verdicts
    ]
    n = len(pairs)
    if not n:
        return {"n": 0, "agreement": None, "kappa": None}
    observed = sum(h == f for h, f in pairs) / n
    p_h, p_f = sum(h for h, _ in pairs) / n, sum(f for _, f in pairs) / n
    expected = p_h * p_f + (1 - p_h) * (1 - p_f)
    kappa = None if expected == 1 else (observed - expected) / (1 - expected)
    both_reject = sum(not h and not f for h, f in pairs)
    return {
        "n": n,
        "agreement": round(observed, 4),
        "kappa": None if kappa is None else round(kappa, 4),
        "human_rejects_filter_kept": sum(not h and f for h, f in pairs),
        "human_accepts_filter_rejected": sum(h and not f for h, f in pairs),
        "both_reject": both_reject,
    }


def apply_decisions(
    items: Sequence[GoldenItem], decisions: Sequence[Decision], pending: set[str]
) -> tuple[list[GoldenItem], list[dict]]:
    """Latest decision per item wins; rejected items leave the dataset (kept as rejections)."""
    latest = {d.item_id: d for d in decisions}
    kept, rejected = [], []
    for item in items:
        decision = latest.get(item.item_id)
        if decision is None:
            kept.append(
                item.model_copy(update={"review": "pending"})
                if item.item_id in pending and item.review == "unreviewed"
                else item
            )
        elif decision.decision == "reject":
            rejected.append(
                {
                    **item.model_dump(mode="json"),
                    "reason": "human_rejected",
                    "detail": f"rejected by {decision.reviewer or 'a reviewer'}",
                }
            )
        else:
            update = {"review": "accepted"}
            if decision.edited_question:
                update["question"] = decision.edited_question
            if decision.edited_reference_answer:
                update["reference_answer"] = decision.edited_reference_answer
            kept.append(item.model_copy(update=update))
    return kept, rejected
