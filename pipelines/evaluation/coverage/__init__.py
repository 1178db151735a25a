"""Does the golden set cover what users ask today? The day's questions matched to the golden set's.

threshold.py calibrates "the same question" on the golden set's own paraphrase pairs; estimate.py matches
the day's questions (nearest golden neighbour, same language) and estimates coverage per app/language with
intervals; clusters.py groups the uncovered questions into topics; daily.py is the online eval's step.
"""
