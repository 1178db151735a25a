"""Assemble the dataset: dev/test by stable hash, a frozen test split, stale gold replaced.

With a published baseline, its items whose gold chunks all still exist are kept verbatim
(split and review included). Items whose gold chunks vanished or changed are stale: they are
dropped, and new items generated from the same chunk positions replace them in the same split.
Other new items go to dev, so the test split only ever changes where the corpus changed.

One exception on both paths: each question type gets at least `min_test` test items where the build
has them (the gate's min pairs, so that tool metrics can be gated and every type diagnosed): the new
items of a type short of it move from dev to test, those whose hash lies nearest the test side
first. Items already released keep their split.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pipelines.core.records import GoldenItem
from pipelines.golden.plan import position_key


def _bucket(item_id: str) -> float:
    return int(hashlib.sha256(f"split\x00{item_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def hash_split(item_id: str, dev_fraction: float) -> str:
    return "dev" if _bucket(item_id) < dev_fraction else "test"


def is_stale(item: GoldenItem, current_chunk_ids: set[str]) -> bool:
    return any(cid not in current_chunk_ids for cid in item.gold_chunk_ids)


def _positions(item: GoldenItem) -> frozenset[str]:
    if item.source != "corpus":
        return frozenset()
    return frozenset(position_key(ref.split("@")[0]) for ref in item.source_ref.split("+"))


@dataclass
class SplitResult:
    items: list[GoldenItem]
    stale: list[GoldenItem] = field(default_factory=list)
    replacements: dict[str, str] = field(default_factory=dict)
    """new item id -> stale item id it replaces."""
    floor_additions: list[str] = field(default_factory=list)
    """Ids of new items moved from dev to test to fill a question type's `min_test`."""


def assemble(
    generated: Sequence[GoldenItem],
    human: Sequence[GoldenItem],
    baseline: Sequence[GoldenItem] | None,
    current_chunk_ids: set[str],
    *,
    dev_fraction: float,
    min_test: int = 0,
) -> SplitResult:
    result = SplitResult(items=[])
    taken: set[str] = set()
    placed: set[str] = (
        set()
    )  # items whose split this build chose: not hand-written, not released before

    def add(item: GoldenItem, *, chosen: bool = False) -> None:
        if item.item_id not in taken:
            taken.add(item.item_id)
            result.items.append(item)
            if chosen:
                placed.add(item.item_id)

    # Hand-written items are never regenerated or filtered: their split is theirs.
    for item in human:
        add(item)

    if baseline is None:
        for item in generated:
            add(
                item.model_copy(update={"split": hash_split(item.item_id, dev_fraction)}),
                chosen=True,
            )
        return _sorted(_fill_test_floor(result, placed, min_test))

    baseline_ids = {i.item_id for i in baseline}
    stale_by_position: dict[frozenset, GoldenItem] = {}
    for item in baseline:
        if item.generator_model == "human":
            continue  # re-imported above from the hand-written file, which is the source of truth
        if is_stale(item, current_chunk_ids):
            result.stale.append(item)
            stale_by_position.setdefault(_positions(item), item)
        else:
            add(item)

    for item in generated:
        if item.item_id in baseline_ids:
            continue
        replaced = stale_by_position.get(_positions(item))
        if replaced is not None and replaced.qtype == item.qtype:
            result.replacements[item.item_id] = replaced.item_id
            add(item.model_copy(update={"split": replaced.split}))
        else:
            add(item.model_copy(update={"split": "dev"}), chosen=True)
    return _sorted(_fill_test_floor(result, placed, min_test))


def _fill_test_floor(result: SplitResult, placed: set[str], min_test: int) -> SplitResult:
    """Move items of `placed` from dev to test, per question type, until test holds `min_test` of
    the type or none is left to move; the highest hash buckets (the nearest to test) move first."""
    test = Counter(i.qtype for i in result.items if i.split == "test")
    movable = sorted(
        (i for i in result.items if i.item_id in placed and i.split == "dev"),
        key=lambda i: (-_bucket(i.item_id), i.item_id),
    )
    for item in movable:
        if test[item.qtype] < min_test:
            test[item.qtype] += 1
            result.floor_additions.append(item.item_id)
    moving = set(result.floor_additions)
    result.items = [
        i.model_copy(update={"split": "test"}) if i.item_id in moving else i for i in result.items
    ]
    return result


def floor_shortfalls(items: Sequence[GoldenItem], min_test: int, planned_tool: int) -> list[str]:
    """One line per question type whose test split holds fewer than `min_test` items (tool: when
    triples were planned), saying what it costs."""
    kept = Counter(i.qtype for i in items)
    test = Counter(i.qtype for i in items if i.split == "test")
    if planned_tool:
        kept.setdefault("tool", 0)
    lines = []
    for qtype in sorted(kept):
        if test[qtype] < min_test:
            cost = (
                "tool selection and tool-call accuracy cannot be gated"
                if qtype == "tool"
                else "its stratum is too small to gate or diagnose alone"
            )
            planned = f" of {planned_tool} planned" if qtype == "tool" else ""
            lines.append(
                f"{qtype}: {test[qtype]} test item(s), fewer than {min_test} (the gate's min pairs); the "
                f"build kept {kept[qtype]}{planned}: {cost}"
            )
    return lines


def _sorted(result: SplitResult) -> SplitResult:
    result.items.sort(key=lambda i: (i.split, i.qtype, i.item_id))
    return result


def test_split_ids(items: Iterable[GoldenItem]) -> set[str]:
    return {i.item_id for i in items if i.split == "test"}
