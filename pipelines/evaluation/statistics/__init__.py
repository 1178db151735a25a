"""The statistics of one run and of two: aggregates with intervals that cover at small n, paired
comparisons, randomization tests and the regression gate.

scores.py (what a metric's scores mean) -> intervals.py, randomization.py, multiplicity.py ->
aggregates.py, compare.py, gate/ (rule.py, level.py, sensitivity.py, run_gate.py); diagnose.py and
the judge modules read aggregates. Every figure, one line each (figure | exact definition | interval
or test | multiplicity correction):

| mean | mean of the ok scores of one metric in one stratum; failed/skipped are counted (n_failed, n_skipped), never averaged | its CI below | none |
| CI of 0/1 scores | every ok score at an end of the range (recall@k, precision@1, TSA, pass rates) | `jeffreys`: equal-tailed 95 %, Beta(x + ½, n − x + ½) quantiles 0.025/0.975; 0 when x = 0, 1 when x = n | none |
| CI of bounded scores | faithfulness, answer relevancy, context precision/recall, MRR, precision@k on [0, 1]; noise ΔF on [−1, 1] | `jeffreys-bounded-mean`: equal-tailed 95 %, Beta quantiles at an effective n (see `bounded_mean_interval`) | none |
| CI, range unknown | a metric outside METRIC_RANGES whose values leave [0, 1] | `student-t`: mean ± t(0.975, n − 1)·sd/√n, n ≥ 2 | none |
| paired difference | mean of candidate_i − baseline_i over the n items ok in both runs | CI equal-tailed 95 % (`paired_difference_interval`): 0/1 scores `mover-jeffreys-paired`, other bounded scores `agresti-min-paired`, range unknown `student-t-paired`; p: two-sided exact sign-flip test (`sign_flip_test`) | none alone |
| independent difference | mean(candidate) − mean(baseline) when the runs share no item (online) | CI `mover-jeffreys-independent`, MOVER of the two bounded-mean intervals; p: permutation test (`permutation_test`) | none alone |
| gate: status | a metric is gated where the baseline has ok scores of it and ≥ min_pairs (10) items are ok in both runs (independent: in each run); else "not gated: n = k < 10" (its change still shown), "not gated: measured in neither run", "not gated: the baseline did not measure it" or "recovery: the baseline measured no item"; a metric not gated passes unless its failure rise or its worst case fails it; one the baseline measured and the candidate has no score of fails (`missing_metric`) | deterministic | none |
| gate: score drop | worsening = baseline − candidate (candidate − baseline for LOWER_IS_BETTER), mean over the n items ok in both runs; fails when > min_tolerance (0.02) and significant | one-sided randomization test of "nothing changed": sign flips of whole items (all patterns up to 16 moving items — a move is a change over SCORE_RESOLUTION, 1e-6 —, else 10,000 seeded draws + the observed), items dealt between the runs when they share none (`family_sign_flip_test`, `family_permutation_test`) | Westfall–Young step-down maxT over every check of every metric of the gate, family-wise α = 0.05 |
| gate: worst case | the same worsening over all the baseline's items of the metric, every failed, skipped or missing score (either run) at the worst end of the metric's range (0; +1 for noise ΔF); tested when some item is not ok and the baseline has ≥ min_pairs ok scores of the metric, also where too few pairs leave the score drop untested; fails when > 0.02 and significant | the same draws | the same family |
| gate: failure rise | (failed + skipped + missing) / the baseline's items, candidate − baseline (independent: each run's not-ok share); fails when > max_failure_rise (0.05) and significant | the same draws (alone: McNemar's exact test) | the same family |
| gate: catches | the smallest worsening of a gated metric's mean that its score-drop check fails ≥ 90 % of the time at the run's n and spread (`detectable_drop`, paired design): what a pass can hide | normal approximation at the family's first-step critical value, the drop on as few items as possible (gate/sensitivity.py) | the family's |
| gate interval | `paired difference`'s interval at the two-sided level 1 − α (95 % at the default α), unadjusted: shown, not used to decide | as the paired difference | none |
| eval compare row | paired difference B − A per metric and stratum | the paired difference's 95 % CI; two-sided sign-flip p, H0 "A and B exchangeable" | Benjamini–Hochberg over all rows, q = 0.05 |
| diagnosis band | the strongest band the interval establishes, stepping down from the estimate's band to "not healthy", with n ≥ min_n (10) | one-sided p from the aggregate's interval distribution (diagnose.py) | Benjamini–Hochberg over one claim per aggregate outside the healthy band, q = 0.025; stronger rungs at the level the family stopped at |

0/1 scores are recognised from the values, not from the metric's name: the bounded-mean interval
*is* the Jeffreys interval on such data, so the check only decides which label is printed, and a
name list would mislabel precision@k (k > 1, values in steps of 1/k) or a faithfulness stratum whose
answers each had one claim. The one-sided α = 0.025 and the BH level q = 0.025 of band claims make a
lone band claim stand exactly when the printed two-sided 95 % interval clears the band's edge.
"""
