"""Match a hand-written gold passage to the chunk that holds it.

The rule: the first chunk (in corpus order) whose normalised text contains the normalised passage
(accent-, case- and space-insensitive); failing that, the chunk covering the largest share of the
passage's content words, if that share is at least 90 % (the first such chunk on a tie).

`match_passage` states the rule by comparing the passage with every chunk. `PassageMatcher` gives
the same answers from inverted indexes built once per import, so 1,000 passages against 10,000
chunks cost seconds instead of 10 million comparisons.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from pipelines.core.text import STOPWORDS, content_tokens, coverage, fold_word, words

PASSAGE_COVERAGE = 0.9


def normal(text: str) -> str:
    """Folded words joined by one space: what containment is checked on."""
    return " ".join(fold_word(w) for w in words(text))


def match_passage(passage: str, chunks: Sequence[Any]) -> str | None:
    """The rule, one chunk at a time: the reference `PassageMatcher` must agree with."""
    needle = normal(passage)
    for chunk in chunks:
        if needle and needle in normal(chunk.text):
            return chunk.chunk_id
    best = max(chunks, key=lambda c: coverage(passage, c.text), default=None)
    if best is not None and coverage(passage, best.text) >= PASSAGE_COVERAGE:
        return best.chunk_id
    return None


class PassageMatcher:
    """`match_passage` over a fixed list of chunks, with the chunks normalised and indexed once."""

    def __init__(self, chunks: Sequence[Any]):
        self.chunk_ids = [chunk.chunk_id for chunk in chunks]
        self._normals: list[str] = []
        # Containment index: the space-separated pieces of each normalised text. Inside a match,
        # every piece of the passage but the first and the last is a whole piece of the chunk.
        self._pieces: dict[str, list[int]] = defaultdict(list)
        # Coverage index: content tokens (the words `coverage` counts) -> chunks that hold them.
        self._tokens: dict[str, list[int]] = defaultdict(list)
        for position, chunk in enumerate(chunks):
            folded = [
                fold_word(w) for w in words(chunk.text)
            ]  # once: `normal` and `content_tokens` share it
            text = " ".join(folded)
            self._normals.append(text)
            for piece in set(text.split(" ")):
                self._pieces[piece].append(position)
            for token in {t for t in folded if len(t) > 2 and t not in STOPWORDS}:
                self._tokens[token].append(position)

    def match(self, passage: str) -> str | None:
        if not self.chunk_ids:
            return None
        needle = normal(passage)
        if needle:
            for position in self._containing_candidates(needle):
                if needle in self._normals[position]:
                    return self.chunk_ids[position]
        return self._best_covering(passage)

    def _containing_candidates(self, needle: str) -> Sequence[int]:
        inner = set(needle.split(" ")[1:-1])
        if not inner:  # one or two words may start or end inside a chunk's word: try every chunk
            return range(len(self._normals))
        postings = sorted((self._pieces.get(piece, []) for piece in inner), key=len)
        candidates = set(postings[0])
        for posting in postings[1:]:
            candidates.intersection_update(posting)
            if not candidates:
                break
        return sorted(candidates)

    def _best_covering(self, passage: str) -> str | None:
        tokens = set(content_tokens(passage))
        if not tokens:  # `coverage` is 1.0 everywhere: the rule picks the first chunk
            return self.chunk_ids[0]
        shared: Counter[int] = Counter()
        for token in tokens:
            shared.update(self._tokens.get(token, ()))
        if not shared:
            return None
        most = max(shared.values())
        if most / len(tokens) < PASSAGE_COVERAGE:
            return None
        return self.chunk_ids[min(position for position, n in shared.items() if n == most)]
