"""Does the golden set cover what users ask today? The day's distinct questions matched to the
passages that answer the golden set's items.

threshold.py calibrates the question-to-passage cosine on the golden set's user questions (items
from traces or imported by people); estimate.py matches the day's questions (nearest golden passage,
same language) and estimates coverage per app/language with intervals over distinct questions;
topic_cut.py calibrates where topics are cut on the golden set's documents; clusters.py groups the
uncovered questions into topics; daily.py is the online eval's step.
"""
