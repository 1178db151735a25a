"""Adversarial PII cases: labelled traces holding the forms of PII and secrets real traffic holds.

`generate_pii_cases(n, seed=...)` is the entry: deterministic by seed, importable without Airflow.
The forms (`forms.FORMS`) draw the values; tests/data/pii_cases.yaml holds the words around them
(`phrases`); `cases` plants them in a trace and records where, so recall is measured per type and
per form.
"""

from ragwatch_harness.bench.pii.cases import LANGUAGES, PLACES, PiiCase, Planted, generate_pii_cases
from ragwatch_harness.bench.pii.forms import FORMS
from ragwatch_harness.bench.pii.phrases import TEMPLATES
from ragwatch_harness.bench.pii.values import Maker, Value

__all__ = [
    "FORMS",
    "LANGUAGES",
    "PLACES",
    "TEMPLATES",
    "Maker",
    "PiiCase",
    "Planted",
    "Value",
    "generate_pii_cases",
]
