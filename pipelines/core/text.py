"""Spanish/English text helpers without a model: accent folding, stopwords, overlap, abstentions.

The BM25 tokenizer, the offline backend and the filters all need the same folding and stopword
lists, so they live here once. The language a text is written in is pipelines/core/language.py's.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

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

FILLER_WORDS = frozenset(
    """about above across actually additionally after again against almost along already also although
    always among another anyone anything anyway around away basically because before behind below beside
    besides between beyond certain certainly consequently could despite during either else elsewhere enough
    especially even ever every everyone everything example finally first following further furthermore
    generally hence however indeed instance instead later latter least less likewise maybe meanwhile might
    moreover much must namely neither never nevertheless next nonetheless nothing often once other others
    otherwise overall perhaps please possibly probably quite rather really regarding respectively second
    several should similarly simply since something sometimes somewhat still such therefore thereby though
    thus together toward towards typically unless unlike until upon usually various whatever whenever
    whereas wherever whether which while within without would
    acerca adelante ademas ahora algun alguna alguno alli alrededor anterior apenas aproximadamente aquel
    aquella aquellas aquellos aqui asi aun aunque bajo bastante cada casi cierta ciertas cierto ciertos
    cualquier cualquiera cuanto debajo dentro despues detras ejemplo embargo encima entonces enseguida
    finalmente forma fuera general igual incluso lado luego manera mediante menos mientras misma mismas
    mismo mismos modo ningun ninguna ninguno parte pesar primer primera primero pronto propia propio
    pues quiza quizas respecto segun siempre siguiente siguientes solo tampoco tanto tarde temprano todavia
    traves ultimo varias varios veces""".split()
)
"""Accent-folded words that carry no topic: discourse markers, quantifiers and adverbs a question
never asks about ("nevertheless", "sin embargo", "por ejemplo")."""


def fold(text: str) -> str:
    """Lowercase and strip accents: 'Configuración' -> 'configuracion' (ñ becomes n too)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    if decomposed.isascii():
        return decomposed
    # Look up each distinct character once and drop each mark in a C-level pass (a text holds a few
    # kinds of accent): a per-character Python loop made folding most of the cost of BM25 indexing.
    for mark in [ch for ch in set(decomposed) if unicodedata.combining(ch)]:
        decomposed = decomposed.replace(mark, "")
    return decomposed


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


NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,:]\d+)*(?![\w])")
"""A number standing alone: `6333`, `3.11`, `2,5`, `10:30`; not the digits inside `utf8` or `x2`."""
_CAPITALISED = re.compile(r"^[A-ZÁÉÍÓÚÑÜ]")
_STARTS_SENTENCE = re.compile(r"(^|[.!?:;¿¡\"'(«\[]\s*)$")


def numbers(text: str) -> list[str]:
    """The numbers of a text as written, in order, repeats kept once."""
    return list(dict.fromkeys(NUMBER.findall(text)))


def named_entities(text: str) -> list[str]:
    """Capitalised words that do not open a sentence (or follow a colon, quote or bracket) and are
    not stopwords: the names a claim stands on (Python, CPython, Qdrant, PEP, Madrid). A lexical
    stand-in for a named-entity recogniser, for the offline backend."""
    found = []
    for match in WORD.finditer(text):
        word = match.group(0)
        if len(word) < 2 or not _CAPITALISED.match(word) or fold_word(word) in STOPWORDS:
            continue
        if _STARTS_SENTENCE.search(text[: match.start()]):
            continue
        found.append(word)
    return list(dict.fromkeys(found))


PSEUDONYM = re.compile(r"\[[A-Z][A-Z_]*_[0-9a-f]{8}\]")
"""The anonymizer's placeholder (`[PERSON_3f9a2c1d]`): a stand-in for a value, not a name or number
itself."""


def missing_facts(claim: str, evidence: str) -> list[str]:
    """The claim's numbers and named entities that the evidence does not contain (entities compared
    accent- and case-folded; numbers as written, or without thousands separators). Anonymizer
    placeholders are neither."""
    claim, evidence = PSEUDONYM.sub(" ", claim), PSEUDONYM.sub(" ", evidence)
    evidence_numbers = set(numbers(evidence))
    evidence_numbers |= {n.replace(",", "") for n in evidence_numbers}
    evidence_words = {fold_word(w) for w in words(evidence)}
    missing = [
        n
        for n in numbers(claim)
        if n not in evidence_numbers and n.replace(",", "") not in evidence_numbers
    ]
    missing += [e for e in named_entities(claim) if fold_word(e) not in evidence_words]
    return missing


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
ABSTENTIONS = tuple(
    fold(marker)
    for marker in (
        "not enough information",
        "no hay suficiente información",
        "no tengo suficiente información",
        "i don't know",
        "i do not know",
        "no lo sé",
        "i'm not sure",
        "no estoy seguro",
        "cannot answer",
        "no puedo responder",
    )
)


ABSTENTION_WORDS = frozenset(
    fold(word)
    for word in """
    answer answers answering question questions information info documentation documents document docs
    context contexts passage passages source sources text texts provided given available enough sufficient
    sure certain know knowledge find found say tell determine based retrieved corpus data details detail
    unfortunately sorry afraid unable cannot can't able there's it's that's mention mentions mentioned
    respuesta responder contestar pregunta preguntas información documentación documento documentos contexto
    contextos fragmentos fuentes texto proporcionado proporcionada disponible suficiente suficientes seguro
    segura saber decir determinar encontrar encontrado basado basada lamentablemente lamento siento puedo
    menciona mencionan datos detalles
""".split()
)
"""Words an abstention uses around its marker ("… in the provided documentation to answer this
question"): they assert nothing about the subject."""


def abstains(answer: str | None, question: str | None = None) -> bool:
    """True when the answer declines to answer (says there is not enough information) and asserts
    nothing else: beyond the abstention phrase, its words are an abstention's own or the question's.
    "I'm not sure, but Qdrant was written in Haskell at CERN" makes a claim, so it is not an
    abstention."""
    if not answer:
        return False
    folded = fold(answer)
    if not any(marker in folded for marker in ABSTENTIONS):
        return False
    for marker in ABSTENTIONS:
        folded = folded.replace(marker, " ")
    asked = set(content_tokens(question or ""))
    # A word of the question, inflected ("use" asked, "uses" in the answer), restates and asserts
    # nothing.
    return all(
        token in ABSTENTION_WORDS or any(token.startswith(q) or q.startswith(token) for q in asked)
        for token in content_tokens(folded)
    )
