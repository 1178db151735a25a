"""A cap on the tokens one step may spend (`RAGWATCH_LLM_BUDGET_TOKENS`), checked before every
request is sent.

The LLM clients hold a `TokenBudget`: before a request goes to a server (first attempt, retry,
repair round or extra sample alike) the client asks `allows()`; once the tokens charged reach the
cap, the request is not sent and the call comes back with `REFUSAL` as its error, which the eval
steps turn into a `skipped` score with the reason `BUDGET_REASON` ("budget"). Cache hits are free
and are still served after the cap.

What is charged: prompt + completion tokens as the server reported them in `usage`. A reply without
`usage` (the offline backend, a server that does not report it) is charged an estimate instead,
`estimated_tokens`: its request's and its reply's characters divided by 4 (the simulator's rule,
roughly English text in a BPE vocabulary), so the cap still applies, approximately. The usage
records keep what the server reported (0 for those). Requests already in flight when the cap is
reached still finish and are charged: a step may end above the cap by at most its endpoints'
concurrency × the tokens of one request.
"""

from __future__ import annotations

import threading

BUDGET_REASON = "budget"
"""The `error` of a score skipped because the run's token budget was spent: exactly this word."""
REFUSAL = "not sent: the run's LLM token budget (RAGWATCH_LLM_BUDGET_TOKENS) is spent"
"""The error of a model call refused by the budget; every message wrapping it keeps it whole."""
CHARS_PER_TOKEN = 4


class BudgetSpent(Exception):
    """Raised where a call's failure cannot travel as an error string (an answer that is only `str |
    None`)."""

    def __init__(self) -> None:
        super().__init__(REFUSAL)


def is_refusal(error: str | None) -> bool:
    """Whether a failure (possibly wrapped: "judge claim extraction failed: ...") is the budget's
    refusal."""
    return error is not None and REFUSAL in error


def estimated_tokens(*texts: str) -> int:
    """Tokens charged for a call whose server reported no usage: its characters / 4, rounded up."""
    return -(-sum(len(text) for text in texts) // CHARS_PER_TOKEN)


class TokenBudget:
    """Tokens one step may spend; None: no cap (everything is still counted). Safe to share between
    threads and between the LLM clients of one step (judge and generator draw on the same
    budget)."""

    def __init__(self, cap: int | None) -> None:
        if cap is not None and cap < 0:
            raise ValueError(f"a token budget is 0 or more, not {cap}")
        self.cap = cap
        self._lock = threading.Lock()
        self.spent = 0
        self.refused = 0
        """Requests not sent because the cap was reached."""

    def allows(self) -> bool:
        """True when a request may be sent now; False (and counted as refused) once the cap is
        reached."""
        with self._lock:
            if self.cap is None or self.spent < self.cap:
                return True
            self.refused += 1
            return False

    def charge(self, tokens: int) -> None:
        with self._lock:
            self.spent += tokens

    @property
    def left(self) -> int | None:
        return None if self.cap is None else max(0, self.cap - self.spent)
