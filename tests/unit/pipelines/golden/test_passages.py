"""Gold passages -> chunk ids: the indexed matcher gives exactly the answers of the one-by-one
rule."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from pipelines.golden.passages import PassageMatcher, match_passage


@dataclass(frozen=True)
class Piece:
    chunk_id: str
    text: str


CHUNKS = [
    Piece(
        "a#0", "The burst bucket refills at five requests per second. Accurate isolation matters."
    ),
    Piece(
        "a#1", "Las instantáneas de Qdrant se guardan durante treinta días en el bucket de copias."
    ),
    Piece(
        "b#0",
        "The burst bucket refills at five requests per second, and the daily quota resets at midnight.",
    ),
    Piece(
        "b#1",
        "Rollback takes two minutes; the index is never deleted during a rollback of the service.",
    ),
    Piece("c#0", "Quota, midnight, daily, resets: words without their sentence."),
]


@pytest.mark.parametrize(
    ("passage", "expected"),
    [
        (
            "the burst bucket refills at five requests per second",
            "a#0",
        ),  # first containing chunk wins
        ("SE GUARDAN durante   TREINTA dias", "a#1"),  # accents, case and spaces do not matter
        (
            "rate is",
            "a#0",
        ),  # two words may start and end inside the chunk's words ("accurATE ISolation")
        ("refills at five requests per second and the daily quota resets", "b#0"),
        (
            "the daily quota resets at midnight after every rollback",
            None,
        ),  # 5/6 content words: below 90 %
        (
            "midnight quota resets daily",
            "b#0",
        ),  # all content words, no containment: coverage, first on a tie
        ("the rollback of the index is never deleted in two minutes", "b#1"),  # coverage alone
        (
            "of the and",
            "a#0",
        ),  # no content words: coverage is 1.0 everywhere, the rule takes the first chunk
        ("nothing here matches anything", None),
        ("", "a#0"),
    ],
)
def test_matcher_follows_the_rule(passage: str, expected: str | None) -> None:
    assert match_passage(passage, CHUNKS) == expected
    assert PassageMatcher(CHUNKS).match(passage) == expected


def test_matcher_agrees_with_the_rule_on_random_passages() -> None:
    rng = random.Random(7)
    vocabulary = (
        "cola lenta réplica índice quota burst rollback cuota servidor latencia bucket refill "
        "snapshot instantánea minuto segundo días treinta five cinco reinicia restart"
    ).split()
    chunks = [
        Piece(f"doc{i}#0", " ".join(rng.choice(vocabulary) for _ in range(rng.randint(5, 40))))
        for i in range(60)
    ]
    passages = []
    for _ in range(400):
        source = rng.choice(chunks).text.split()
        start = rng.randrange(len(source))
        piece = source[start : start + rng.randint(1, 8)]
        kind = rng.random()
        if kind < 0.3:  # cut inside words at both ends
            piece = (
                [piece[0][1:] or piece[0], *piece[1:-1], piece[-1][:-1] or piece[-1]]
                if len(piece) > 1
                else piece
            )
        elif kind < 0.6:  # shuffled: only coverage can match
            rng.shuffle(piece)
        elif kind < 0.8:  # a word of no chunk: coverage drops below 90 % unless the passage is long
            piece.insert(rng.randrange(len(piece) + 1), f"zafiro{rng.randrange(9)}")
        passages.append(" ".join(piece))
    matcher = PassageMatcher(chunks)
    expected = [match_passage(p, chunks) for p in passages]
    assert [matcher.match(p) for p in passages] == expected
    assert None in expected and len(set(expected)) > 20  # the case exercises misses and many chunks


def test_an_empty_corpus_matches_nothing() -> None:
    assert (
        PassageMatcher([]).match("anything at all") is None is match_passage("anything at all", [])
    )
