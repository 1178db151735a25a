"""Spanish/English text helpers without a model: accent folding, stopwords, language, overlap.

The BM25 tokenizer, the language detector, the offline backend and the filters all need the
same folding and stopword lists, so they live here once.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Literal

Language = Literal["es", "en"]

STOPWORDS_EN = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves""".split()
)

STOPWORDS_ES = frozenset(
    """a al algo algunas algunos ante antes como con contra cual cuales cuando de del desde donde
    durante e el ella ellas ellos en entre era erais eran eras eres es esa esas ese eso esos esta
    estaba estado estamos estan estar estas este esto estos fue fueron fui ha habia han has hasta
    hay la las le les lo los mas me mi mis mucho muy nada ni no nos nosotros o os otra otras otro
    otros para pero poco por porque que quien quienes se sea ser si sin sobre son su sus tambien
    te tiene tienen todo todos tu tus un una unas uno unos usted ustedes y ya yo""".split()
)
"""Accent-folded, as the tokenizer sees them ("está" and "esta" are the same token)."""

STOPWORDS = STOPWORDS_EN | STOPWORDS_ES

# Words that are stopwords in both languages ("a", "no", "me", "he"...) say nothing about which
# language a text is in.
_EN_ONLY = STOPWORDS_EN - STOPWORDS_ES
_ES_ONLY = STOPWORDS_ES - STOPWORDS_EN
_WORD = re.compile(r"[^\W\d_]+")
_SPANISH_LETTERS = re.compile(r"[ñ¿¡áéíóú]", re.I)


def fold(text: str) -> str:
    """Lowercase and strip accents: 'Configuración' -> 'configuracion' (ñ becomes n too)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def detect_language(text: str, default: Language = "en") -> Language:
    """'es' or 'en' by counting language-specific stopwords; Spanish letters break ties."""
    words = _WORD.findall(fold(text))
    es = sum(word in _ES_ONLY for word in words)
    en = sum(word in _EN_ONLY for word in words)
    if es == en:
        return "es" if _SPANISH_LETTERS.search(text) else default
    return "es" if es > en else "en"


WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z¿¡ÁÉÍÓÚÑ`\"'(])|\n{2,}")


@lru_cache(maxsize=65536)
def fold_word(word: str) -> str:
    return fold(word)


def words(text: str) -> list[str]:
    return WORD.findall(text)


def content_tokens(text: str) -> list[str]:
    return [t for t in (fold_word(w) for w in words(text)) if len(t) > 2 and t not in STOPWORDS]


def sentences(text: str) -> list[str]:
    parts = (p.strip() for p in SENTENCE_END.split(text.replace("\r", "")))
    return [" ".join(p.split()) for p in parts if p and len(words(p)) >= 3]


def coverage(part: str, whole: str) -> float:
    """Share of `part`'s content tokens that occur in `whole` (1.0 when `part` has none)."""
    tokens = set(content_tokens(part))
    if not tokens:
        return 1.0
    return len(tokens & set(content_tokens(whole))) / len(tokens)


def token_f1(a: str, b: str) -> float:
    ta, tb = content_tokens(a), content_tokens(b)
    if not ta or not tb:
        return 0.0
    common = sum(min(ta.count(t), tb.count(t)) for t in set(ta))
    if not common:
        return 0.0
    precision, recall = common / len(ta), common / len(tb)
    return 2 * precision * recall / (precision + recall)


# --- abstentions ------------------------------------------------------------------------------

NOT_ENOUGH = {
    "en": "There is not enough information in the documentation to answer this.",
    "es": "No hay suficiente información en la documentación para responder a esto.",
}
"""What an assistant (and a golden reference) says when the contexts do not hold the answer."""
ABSTENTIONS = tuple(fold(marker) for marker in (
    "not enough information", "no hay suficiente información", "no tengo suficiente información",
    "i don't know", "i do not know", "no lo sé", "i'm not sure", "no estoy seguro", "cannot answer",
    "no puedo responder",
))  # fmt: skip


def abstains(answer: str | None) -> bool:
    """True when the answer declines to answer (says there is not enough information)."""
    return bool(answer) and any(marker in fold(answer) for marker in ABSTENTIONS)
