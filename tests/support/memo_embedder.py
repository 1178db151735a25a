"""The shipped embedding model with each text embedded once per instance: a test that measures two
days against one golden set embeds the golden passages and the repeated questions once, not once a
day."""

from __future__ import annotations

import pytest


class MemoEmbedder:
    def __init__(self):
        from pipelines.models.embeddings import LocalEmbedder

        self.model, self.seen = LocalEmbedder(), {}
        self.name = self.model.name

    def embed(self, texts: list[str]) -> list[list[float]]:
        new = [t for t in dict.fromkeys(texts) if t not in self.seen]
        self.seen.update(zip(new, self.model.embed(new)))
        return [self.seen[t] for t in texts]


def memoized_coverage_embedder(monkeypatch: pytest.MonkeyPatch) -> MemoEmbedder:
    """Make the coverage step use one MemoEmbedder (the real model underneath) until `monkeypatch`
    is undone."""
    from pipelines.evaluation.coverage import daily

    memo = MemoEmbedder()
    monkeypatch.setattr(daily, "build_embedder", lambda settings: memo)
    return memo
