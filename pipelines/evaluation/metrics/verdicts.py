"""The 0/1 form of the judge metrics a person can check with a yes or a no: what the judge audit
asks.

Only metrics with a per-item yes/no the project already uses are audited:

| metric | the judge's verdict | what the labeller answers |
|---|---|---|
| answer_correctness | the score itself (0/1 per item) | is the answer right against the reference answer? |
| faithfulness | supported = faithfulness ≥ 0.75 (finalize.UNSUPPORTED_BELOW: the report's "made-up answers" line) | is the answer supported by its contexts? |

The other judge metrics (answer relevancy, context precision and recall, noise sensitivity) are
fractions with no per-item line in the project: a person cannot say yes or no to "0.6 of the claims
are attributable", so they are not audited.
"""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED_FROM = 0.75
"""Faithfulness from which an answer counts as supported: the same line as
finalize.UNSUPPORTED_BELOW (a test checks that they agree)."""


@dataclass(frozen=True)
class BinaryForm:
    metric: str
    meaning: str
    """What 1 means, in the words the report uses."""
    ask: str
    """The question a labeller answers yes or no."""
    threshold: float
    """The score from which the judge's verdict is yes."""

    def verdict(self, value: float) -> int:
        return int(value >= self.threshold)


AUDITED: dict[str, BinaryForm] = {
    "answer_correctness": BinaryForm(
        "answer_correctness",
        "answer correct",
        threshold=1.0,
        ask="Is the answer right against the reference answer (states its key facts, contradicts none; abstains "
        "exactly when the reference does)?",
    ),
    "faithfulness": BinaryForm(
        "faithfulness",
        f"answer supported (faithfulness ≥ {SUPPORTED_FROM})",
        threshold=SUPPORTED_FROM,
        ask="Is the answer supported by the contexts shown (at least 3 of every 4 of its claims can be read there)?",
    ),
}
