"""How a run's gate spends its false-alarm level over its comparisons (baseline and reference).

A run fails its gate when any comparison fails, so the level the user is promised (GATE_ALPHA: an
unchanged system fails a run's gate at most 5 % of the time) must cover the comparisons together.
Each comparison at the full 5 % let the pair fail an unchanged system 7.5 % (n = 100) to 8.8 % (n =
30) of the time, and 8.3 % of the runs of a weekly chain (`ragwatch bench gate --whole` / `--chain`,
1,000 targets / 200 chains; docs/explanation/statistics.md).

Bonferroni over the comparisons: each spends `alpha / k`. Why this and not the alternatives:
- Holm across the two comparisons rejects the first at α/2 and then the second at α; but the run
  already fails once one comparison fails, so for the pass/fail verdict Holm is exactly Bonferroni.
  It would only relabel which comparison "also" failed, which is not worth a second rule in the
  report.
- One Westfall–Young family over both comparisons would use their correlation (they share the
  candidate's noise; the two differences correlate about 0.5), which lowers the critical value: for
  two normal statistics at ρ = 0.5 the joint one-sided 5 % point is z ≈ 1.92 against Bonferroni's
  1.96, about 2 % of a tolerance. It needs a randomization of three runs per item (six label orders,
  not a sign flip) that `randomization.py` does not have; Bonferroni is valid whatever the
  dependence, and the bench measures what it costs (`ragwatch bench gate --whole`): a sudden drop is
  seen by both comparisons (the reference is an earlier run of the same system), so the whole gate
  catches more than either comparison alone; a 10-point drop at n = 100 is caught 2.5–11.5 points
  less often than with 5 % per comparison, whose power came with 7.5–8.8 % false alarms.
- When the reference is the baseline, or there is none, the one comparison keeps the full α. A
  partial release (`eval pin --partial`) adds a comparison for the metrics it lacks: three at α / 3
  each.
"""

from __future__ import annotations

from pipelines.evaluation.statistics.gate.rule import GATE_ALPHA


def split_alpha(comparisons: int, alpha: float = GATE_ALPHA) -> float:
    """The family-wise level of each of `comparisons` comparisons so that the run's gate as a whole
    keeps `alpha`."""
    if comparisons < 0:
        raise ValueError(f"a run makes no comparison or some, not {comparisons}")
    return alpha / max(comparisons, 1)


def level_note(comparisons: int, alpha: float = GATE_ALPHA) -> str:
    """The rule in one sentence, for the gate's summary and report."""
    if comparisons <= 1:
        return (
            f"one comparison at family-wise α = {alpha:g}: an unchanged system fails this gate at most "
            f"{100 * alpha:g} % of the time"
        )
    return (
        f"{comparisons} comparisons at α = {split_alpha(comparisons, alpha):g} each (Bonferroni): an unchanged "
        f"system fails this run's gate at most {100 * alpha:g} % of the time"
    )
