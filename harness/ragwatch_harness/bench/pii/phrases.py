"""The words around the planted values, read from tests/data/pii_cases.yaml: the sentences per
family and language, the trace's question, answer and context, phone separators, street and city
names."""

from __future__ import annotations

from pathlib import Path

import yaml

PHRASES = Path(__file__).resolve().parents[4] / "tests" / "data" / "pii_cases.yaml"

_phrases = yaml.safe_load(PHRASES.read_text(encoding="utf-8"))
TEMPLATES: dict[str, dict[str, list[str]]] = _phrases["sentences"]
"""Sentences by family (a form's `Value.templates`) and language; "{v}" is the value as written."""
QUESTIONS: dict[str, list[str]] = _phrases["questions"]
ANSWERS: dict[str, str] = _phrases["answers"]
CONTEXT: str = _phrases["context"]
SEPARATORS: dict[str, str] = _phrases["separators"]
SPANISH_STREETS: list[str] = _phrases["spanish_streets"]
CATALAN_STREETS: list[str] = _phrases["catalan_streets"]
SPANISH_CITIES: list[tuple[str, str]] = [tuple(city) for city in _phrases["spanish_cities"]]
ENGLISH_STREETS: list[str] = _phrases["english_streets"]
US_CITIES: list[tuple[str, str, str]] = [tuple(city) for city in _phrases["us_cities"]]
UK_CITIES: list[tuple[str, str]] = [tuple(city) for city in _phrases["uk_cities"]]
FAKER_ADDRESS_LOCALES: list[str] = _phrases["faker_address_locales"]
