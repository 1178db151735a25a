"""Small, dependency-free text helpers shared by the offline backend, filters and search."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here hers
    him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
    out over own same she should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you your yours
    use used using also may must one two see e g i e
    al algo algunas algunos ante antes como con contra cual cuales cuando de del desde donde durante e el ella ellas
    ellos en entre era eran es esa esas ese eso esos esta estaba estado estan estar este esto estos fue fueron ha
    han hay la las le les lo los mas me mi mis mucho muy nada ni no nos nosotros o otra otras otro otros para pero
    poco por porque que quien quienes se sea ser si sin sobre son su sus tambien te tiene tienen todo todos tu tus
    un una uno unos usted y ya puede pueden hace hacer cada
    """.split()
)
SPANISH_MARKERS = frozenset("el la los las del que por para una con como qué cómo cuál está según también sobre es".split())
ENGLISH_MARKERS = frozenset("the of and to is in that for with as are this which be by what how does".split())
WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z¿¡ÁÉÍÓÚÑ`\"'(])|\n{2,}")


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """Lowercase without accents, so `Función` and `funcion` match."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    return WORD.findall(text)


def content_tokens(text: str) -> list[str]:
    return [t for t in (fold(w) for w in words(text)) if len(t) > 2 and t not in STOPWORDS]


def sentences(text: str) -> list[str]:
    parts = (p.strip() for p in SENTENCE_END.split(text.replace("\r", "")))
    return [" ".join(p.split()) for p in parts if p and len(words(p)) >= 3]


def detect_language(text: str) -> str:
    """'es' or 'en' from marker words; enough for routing templates and strata, not for linguistics."""
    lowered = [w.lower() for w in words(text[:4000])]
    es = sum(w in SPANISH_MARKERS for w in lowered) + 3 * sum(c in "¿¡ñ" for c in text[:4000])
    en = sum(w in ENGLISH_MARKERS for w in lowered)
    return "es" if es > en else "en"


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
