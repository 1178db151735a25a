"""Assemble the dataset: dev/test by stable hash, a frozen test split, stale gold replaced.

With a published baseline, its items whose gold chunks all still exist are kept verbatim
(split and review included). Items whose gold chunks vanished or changed are stale: they are
dropped, and new items generated from the same chunk positions replace them in the same split.
Other new items go to dev, so the test split only ever changes where the corpus changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pipelines.golden.plan import position_key
from pipelines.records import GoldenItem


def hash_split(item_id: str, dev_fraction: float) -> str:
    bucket = int(hashlib.sha256(f"split\x00{item_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "dev" if bucket < dev_fraction else "test"


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


def assemble(
    generated: Sequence[GoldenItem],
    human: Sequence[GoldenItem],
    baseline: Sequence[GoldenItem] | None,
    current_chunk_ids: set[str],
    *,
    dev_fraction: float,
) -> SplitResult:
    result = SplitResult(items=[])
    taken: set[str] = set()

    def add(item: GoldenItem) -> None:
        if item.item_id not in taken:
            taken.add(item.item_id)
            result.items.append(item)

    # Hand-written items are never regenerated or filtered: their split is theirs.
    for item in human:
        add(item)

    if baseline is None:
        for item in generated:
            add(item.model_copy(update={"split": hash_split(item.item_id, dev_fraction)}))
        return _sorted(result)

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
            add(item.model_copy(update={"split": "dev"}))
    return _sorted(result)


def _sorted(result: SplitResult) -> SplitResult:
    result.items.sort(key=lambda i: (i.split, i.qtype, i.item_id))
    return result


def test_split_ids(items: Iterable[GoldenItem]) -> set[str]:
    return {i.item_id for i in items if i.split == "test"}
