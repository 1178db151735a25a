"""A language-agnostic match signal: the words a question shares with the passage that answers it.

The shipped embedding model is English-only: on the Debian FAQ in French, Portuguese, Italian,
German and Dutch its cosine does not tell a user question's own passage from another chapter's (ROC
AUC 0.6), while the question still shares its content words with its answer ("Comment puis-je
installer un paquet" / "pour installer les paquets ..."). So a question is also matched by the
TF-IDF cosine of its character 3–5-grams (inside words, case and accents folded: "paquet" meets
"paquets", "Pakete" meets "Paket") against each golden passage of its language, with idf learnt per
language from the golden passages. daily.py calibrates both signals on the golden set's user
questions and matches with the one that separates them better.

The rest of the coverage step works on dense vectors whose dot product is the similarity. A
language's TF-IDF vectors are projected onto an orthonormal basis of its golden passages' span (the
eigenvectors of their Gram matrix): a passage keeps its unit length and a question's dot product
with any golden passage is its TF-IDF cosine exactly, in at most as many dimensions as the language
has passages. Languages share the columns (padded to the widest) but never meet: matching,
calibration and clustering compare within a language only.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

NGRAMS = (3, 5)
SIGNAL = "character 3-5-gram TF-IDF cosine"
MIN_EIGENVALUE = 1e-9
"""Gram eigenvalues below this are the passages' linear dependence (repeated passages), not
directions."""


def fold(text: str) -> str:
    """Case and accents folded: a user types "systeme" for "système"."""
    return "".join(
        c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c)
    )


class LexicalSpace:
    """Fitted on the golden passages (`texts` with their `languages`); `vectors` places any text of
    those languages."""

    def __init__(self, texts: Sequence[str], languages: Sequence[str]):
        languages = np.asarray(languages)
        self._spaces: dict[str, tuple[TfidfVectorizer, object, np.ndarray]] = {}
        for language in np.unique(languages):
            own = [texts[i] for i in np.flatnonzero(languages == language)]
            vectorizer = TfidfVectorizer(
                analyzer="char_wb", ngram_range=NGRAMS, preprocessor=fold, sublinear_tf=True
            )
            passages = vectorizer.fit_transform(own)
            gram = (passages @ passages.T).toarray()
            values, vectors = np.linalg.eigh(gram)
            keep = values > MIN_EIGENVALUE
            # Basis rows B = Λ^-1/2 Uᵀ P are orthonormal and span the passages: x ↦ B x keeps every
            # x·p.
            self._spaces[str(language)] = (
                vectorizer,
                passages,
                vectors[:, keep] / np.sqrt(values[keep]),
            )
        self.dim = max((u.shape[1] for _, _, u in self._spaces.values()), default=1)

    def vectors(self, texts: Sequence[str], languages: Sequence[str]) -> np.ndarray:
        """One row per text; a text of a language without golden passages is the zero vector (it
        matches nothing)."""
        out = np.zeros((len(texts), self.dim))
        languages = np.asarray(languages)
        for language, (vectorizer, passages, coordinates) in self._spaces.items():
            rows = np.flatnonzero(languages == language)
            if len(rows):
                x = vectorizer.transform([texts[i] for i in rows])
                out[rows, : coordinates.shape[1]] = (x @ passages.T).toarray() @ coordinates
        return out
