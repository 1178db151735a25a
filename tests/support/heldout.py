"""What both held-out coverage checks share: real questions with their passages, one subject held
back from the golden set, two days of traffic, and the release that adds the held-back subject back
(tests/unit/pipelines/evaluation/coverage/test_daily_heldout*.py).

Each entry is a dict with `language`, `question` (a real question: a FAQ heading, a help page's
title) and `answer` (the passage that answers it). The golden set holds a passage for every entry it
keeps: a generated question for two of three (a template, as the offline backend writes), and the
real question, imported by a person, for every third — the user questions the threshold is
calibrated on. Day 1's traffic is the kept entries' other real questions, each asked one to four
times; on day 2 a quarter of the traffic moves to the held-back entries' questions. The true
coverage of a day is known: the share of its distinct questions whose answering passage (the entry's
own) is a golden item's source passage. A later release may add entries a corpus refresh brought in:
a generated question each, no one's real question, as a build seeds them from new chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.core.records import GoldenItem
from pipelines.core.workspace import Workspace
from pipelines.golden.dataset import write_items
from pipelines.stores.partitions import write_manifest

EVIDENCE_EVERY = 3
"""Every third golden item is a real question imported by a person, the rest are generated."""
DAY_1, DAY_2, DAY_3 = date(2026, 12, 1), date(2026, 12, 2), date(2026, 12, 3)


def release_golden(
    workspace: Workspace,
    name: str,
    kept: list[dict],
    *,
    chunk_id: Callable[[dict], str],
    template: dict[str, str],
    added: Sequence[dict] = (),
    version: str = "v1",
) -> None:
    """The golden set `name` over the `kept` entries, released as `version`. `chunk_id` names an
    entry's passage (its document before the "#"); `template` per language writes the generated
    questions from the passage's first six words. The `added` entries, new in the corpus, each get a
    generated question only."""
    items = []
    for k, e in enumerate([*kept, *added]):
        chunk = chunk_id(e)
        user = k < len(kept) and k % EVIDENCE_EVERY == 0
        question = (
            e["question"]
            if user
            else template[e["language"]].format(" ".join(e["answer"].split()[:6]))
        )
        items.append(
            GoldenItem(
                item_id=f"{e['language']}-{chunk}",
                question=question,
                reference_answer="…",
                qtype="single_hop",
                language=e["language"],
                source="human" if user else "corpus",
                source_ref=f"{name}.csv:{k}" if user else chunk,
                gold_chunk_ids=[chunk],
                reference_contexts=[e["answer"]],
                generator_model="template",
                corpus_version=name,
                created_at="2026-11-30",
            )
        )
    paths = workspace.golden(name)
    write_items(paths.released_items, items)
    write_manifest(paths.released_manifest, {"name": name, "version": version})


def traffic(
    kept: list[dict], held: list[dict]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Day 1's and day 2's (language, question) rows: the kept entries no golden item asks, one to
    four times each; then a third as many traces again on the held-back entries, a quarter of day
    2."""
    asked = [e for k, e in enumerate(kept) if k % EVIDENCE_EVERY]
    day_1 = [(e["language"], e["question"]) for k, e in enumerate(asked) for _ in range(1 + k % 4)]
    extra = len(day_1) // 3
    day_2 = day_1 + [
        (held[k % len(held)]["language"], held[k % len(held)]["question"]) for k in range(extra)
    ]
    return day_1, day_2


def write_day(workspace: Workspace, day: date, rows: list[tuple[str, str]]) -> list[Path]:
    """The day's sampled partition of (language, question) rows, one app."""
    paths = workspace.traces_partition(day)
    paths.part(0).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "trace_id": [f"{day}-{i:04d}" for i in range(len(rows))],
                "app": ["docs"] * len(rows),
                "language": [r[0] for r in rows],
                "question": [r[1] for r in rows],
            }
        ),
        paths.part(0),
    )
    return paths.parts


def true_coverage(rows: list[tuple[str, str]], kept: list[dict]) -> float:
    """The share of the distinct (language, question) `rows` whose entry is `kept`: its passage is
    in the golden set."""
    golden = {(e["language"], e["question"]) for e in kept}
    distinct = set(rows)
    return sum(row in golden for row in distinct) / len(distinct)
