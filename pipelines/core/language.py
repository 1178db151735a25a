"""The language a question or passage is written in: one of the configured languages, or `und`.

py3langid (a naive Bayes classifier over byte n-grams, trained on 97 languages) scores the text in
every language it knows; ragwatch keeps the configured ones (`RAGWATCH_LANGUAGES`, default es, ca,
en, pt, fr, de). The text is `und` unless both hold:
- the configured languages together have at least MIN_IN_SET of the probability: below it the text
  is in another language (an Italian question is not filed under Spanish) or is not prose at all;
- the likeliest of them has at least MIN_CONFIDENCE of their share: more likely than all the others
  together (a two-word label is `und` rather than a coin toss between Spanish and Portuguese).
  Restricting to the configured languages keeps a Spanish question from being filed under Galician
  or Asturian. `und` is a language like the others for the strata; it is never guessed into one.

A consumer with wording for a few languages only (prompts, templates) writes the others in English
(`template_language`) and keeps the detected language as the item's label and stratum.

`ragwatch bench language` measures it on short texts this machine holds in each language, beside
lingua-language-detector (docs/reference/benchmarks.md): py3langid was chosen for accuracy, speed
and memory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

UNDETERMINED = "und"
"""ISO 639-2's code for "undetermined": a valid language and stratum, never re-labelled."""
DEFAULT_LANGUAGES = ("es", "ca", "en", "pt", "fr", "de")
LANGUAGES_VARIABLE = "RAGWATCH_LANGUAGES"
MIN_IN_SET = 0.1
"""Probability, over all of py3langid's languages, that the text is in one of the configured ones;
below it, `und`. Measured (`ragwatch bench language`): of the Italian, Dutch, Japanese and Russian
texts, 7.4 % are forced into a configured language instead of 39.8 %, for 0.1 points of the
configured languages' accuracy."""
MIN_CONFIDENCE = 0.5
"""The likeliest configured language's share of their probability; below it, `und`: it is then more
likely than all the others together. Measured: wrong labels of the configured languages' texts fall
from 3.1 % to 1.9 %, and 4.0 % of them are `und` instead of 0.9 %; at 0.6, 0.9 % wrong for 6.8 %
`und`."""
MAX_CHARS = 1000
"""A text's first characters decide (a document's too): a thousand tell a language, and the cost
grows with each byte."""
FALLBACK = "en"
"""The language of a prompt or template where none is written in the text's own."""
_NOT_PROSE = re.compile(r"\[[^\]\s]+\]|`[^`]*`|\b\w+://\S+")
"""Placeholders (`[PERSON_3f9a2c1d]`), code spans and URLs: their letters are nobody's language."""


@dataclass(frozen=True)
class LanguageGuess:
    language: str
    """The likeliest of the configured languages."""
    confidence: float
    """Its share of the configured languages' probability."""
    in_set: float
    """The configured languages' probability together, over every language py3langid knows."""


def detect_language(
    text: str, default: str = UNDETERMINED, languages: Sequence[str] | None = None
) -> str:
    """The configured language (or one of `languages`) `text` is written in, else `default` (`und`
    unless given)."""
    guess = guess_language(text, languages)
    return (
        guess.language
        if guess.in_set >= MIN_IN_SET and guess.confidence >= MIN_CONFIDENCE
        else default
    )


def guess_language(text: str, languages: Sequence[str] | None = None) -> LanguageGuess:
    """py3langid's scores of `text` (its first MAX_CHARS characters, less placeholders, code and
    URLs) among the configured languages or `languages`."""
    chosen = _checked(tuple(languages) if languages is not None else configured_languages())
    probability = dict(_identifier().rank(_NOT_PROSE.sub(" ", text[:MAX_CHARS])))
    in_set = sum(probability[language] for language in chosen)
    best = max(chosen, key=probability.__getitem__)
    return LanguageGuess(best, probability[best] / in_set if in_set else 0.0, in_set)


def template_language(language: str, templates: Collection[str]) -> str:
    """The language to word a prompt or template in: the text's own where `templates` has it, else
    English."""
    return language if language in templates else FALLBACK


def configured_languages() -> tuple[str, ...]:
    """The settings' `languages`, read once per value of RAGWATCH_LANGUAGES (callers such as trace
    assembly have no settings at hand)."""
    return _configured(os.environ.get(LANGUAGES_VARIABLE))


@lru_cache(maxsize=4)
def _configured(_variable: str | None) -> tuple[str, ...]:
    from pipelines.core.settings import load_settings

    return tuple(load_settings().languages)


@lru_cache(maxsize=1)
def _identifier() -> LanguageIdentifier:
    # Loaded on first use, once per process (about 0.5 s and 76 MB): importing this module costs
    # nothing.
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@lru_cache(maxsize=8)
def _checked(languages: tuple[str, ...]) -> tuple[str, ...]:
    known = set(_identifier().labels)
    unknown = [language for language in languages if language not in known]
    if unknown or not languages:
        raise ValueError(
            f"{LANGUAGES_VARIABLE}: {', '.join(unknown) or 'no language'} is not a language py3langid tells apart "
            f"(it knows {', '.join(sorted(known))})"
        )
    return tuple(
        dict.fromkeys(languages)
    )  # in order: a tie goes to the first listed, the same on every run
