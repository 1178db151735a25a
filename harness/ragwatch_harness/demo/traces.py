"""Realistic, labelled demo traces: engineers asking about the demo corpus in Spanish and English,
each quoting the passage they ask about (demo/reviewed.py), or on the planted days about packaging.

PII is planted where real users put it (questions, greetings in answers, support tickets among
the contexts, tool arguments, request metadata) and every planted string is recorded, so the
anonymizer is measured rather than trusted. Hard negatives (dates, order numbers, UUIDs,
versions) are mixed in and deliberately not recorded.

The assistant that "answered" them errs as a real one does, at known rates (`ANSWER_FAULTS`:
invented sentences, swapped numbers or names, wrong abstentions, answers from a distractor context;
and `INVALID_TOOL_ARGS`), so the online eval shows a spread rather than 1.0 everywhere. The faults
are drawn from each trace's own content, never from the shared generator, so every other field of a
seeded trace is what it was without them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import random
import re
import string
import unicodedata
import uuid
from collections import ChainMap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import phonenumbers
from faker import Faker
from stdnum import iban, luhn
from stdnum.es import dni, nie

from pipelines.core.records import Context, ToolCall, Trace
from pipelines.core.text import NOT_ENOUGH, sentences
from pipelines.models.offline import OfflineFaults, corrupt_sentences, draw, join_sentences
from ragwatch_harness.demo.corpus import DemoChunk, load_demo_chunks
from ragwatch_harness.demo.reviewed import asked_passages, quoted_question

SPANISH_SHARE = 0.55
MIXED_SHARE = 0.2
"""Of the Spanish questions, how many switch to English terms mid-sentence."""
PII_RATE = {"support-bot": 0.55, "docs-assistant": 0.28, "internal-search": 0.28}
TOOL_RATE = 0.25
NEGATIVE_RATE = 0.15
BROKEN_ROW_RATE = 0.015
HUGE_ANSWER_BYTES = 2_500_000
ANSWER_FAULTS = OfflineFaults(made_up=0.08, swapped=0.05, wrong_abstention=0.04, wrong_context=0.05)
"""How often the demo assistant's answers err (per sentence for made_up and swapped, per answer
otherwise)."""
INVALID_TOOL_ARGS = 0.06
"""Share of tool calls sent with arguments their tool's schema rejects."""
APPS = {"docs-assistant": 5, "support-bot": 3, "internal-search": 2}
MODELS = {"qwen2.5-7b-instruct": 6, "llama-3.1-8b-instruct": 4}
FEEDBACK = {None: 60, 1: 22, 0: 8, -1: 10}
USER_AGENTS = (
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/124.0.6367.91 Safari/537.36"
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/17.4 Safari/605.1.15"
    ),
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "python-requests/2.32.3",
    "Slackbot 1.0 (+https://api.slack.com/robots)",
)

QUESTIONS = {
    "es": (
        "¿Cómo funciona{n} {s} en Python?",
        "¿Qué dice la documentación sobre {s}?",
        "¿Me puedes explicar {s} con un ejemplo?",
        "¿Cuáles son los casos límite de {s}?",
        "Duda rápida: ¿cómo se evalúa{n} {s}?",
        "¿Qué pasa en tiempo de ejecución con {s}?",
        "No entiendo bien {s}, ¿qué dice la referencia?",
        "¿Por qué {s} no se comporta{n} como espero?",
        "Resúmeme {s} para una revisión de código.",
        "¿Hay algún detalle a tener en cuenta con {s} en Python 3?",
        "¿Qué garantiza{n} {s} si salta una excepción?",
        "Estoy depurando un fallo en producción: ¿qué reglas sigue{n} {s}?",
    ),
    "mixed": (
        "¿Alguien sabe cómo funciona {e}? Tengo un bug en prod.",
        "¿Qué dice el reference manual sobre {e}?",
        "Oye, una duda con {e}: ¿cuál es el behaviour exacto?",
        "¿Me haces un quick summary de {e}?",
    ),
    "en": (
        "How does {e} work in Python?",
        "What does the reference say about {e}?",
        "Can you explain {e} with an example?",
        "What are the edge cases of {e}?",
        "Quick question: how is {e} evaluated?",
        "What happens at runtime with {e}?",
        "I'm confused about {e}, what does the spec say?",
        "Why doesn't {e} behave the way I expect?",
        "Summarize {e} for a code review.",
        "What does {e} guarantee when an exception is raised?",
        "Is there any gotcha with {e} in Python 3?",
        "Debugging a prod incident: which rules does {e} follow?",
    ),
}
LEAD_INS = {
    "es": (
        "Según la referencia: ",
        "La documentación lo explica así: ",
        "En resumen: ",
        "Resumiendo la sección relevante: ",
    ),
    "en": ("According to the reference, ", "From the docs: ", "In short: ", ""),
}
NEW_TOPIC = {
    "es": (
        "¿Cómo instalo un paquete con pip?",
        "pip install me dice permiso denegado, ¿cómo instalo el paquete?",
        "¿Qué comando de pip instala un paquete solo para mi usuario?",
        "¿Cómo instalo una versión concreta de un paquete con pip?",
        "¿Cómo actualizo un paquete que instalé con pip?",
    ),
    "en": (
        "How do I install a package with pip?",
        "pip install says permission denied, how do I install the package?",
        "Which pip command installs a package for my user only?",
        "How do I install a specific version of a package with pip?",
        "How do I upgrade a package I installed with pip?",
    ),
}
"""A topic the demo corpus (the language reference) and so its golden set never cover: on the days
it is planted (`new_topic_share`), that share of the traffic asks about packaging instead, and the
online eval's golden coverage shows it as the largest uncovered topic."""
GREETINGS = {"es": ("Hola {name}, ",), "en": ("Hi {name}, ", "Hello {name}, ")}
QUESTION_PII = {
    "es": (
        "Hola, soy {name}. {q}",
        "Me llamo {name} y llevo el equipo de datos. {q}",
        "{q} Si necesitáis algo, mi correo es {email}.",
        "{q} Podéis llamarme al {phone} si es más fácil.",
        "{q} Mi DNI es {dni}, por si hay que verificar la cuenta.",
        "{q} Con mi NIE {nie} no me deja completar el alta.",
        "{q} Ayer me cobraron dos veces en la tarjeta {card}.",
        "{q} Para el reembolso, mi IBAN es {iban}.",
        "{q} Estoy probando con la key {api_key} y da 401.",
        "{q} La cadena de conexión es {url_login} y no conecta.",
        "{q} El enlace {url_token} devuelve 403.",
        "{q} Mando la cabecera Authorization: Bearer {bearer}",
        "{q} El token que uso es {jwt}",
        "{q} Me bloquean desde la IP {ip}.",
        "{q} Por cierto, mi contraseña: {password} ya no funciona.",
        "{q}\n\nAtentamente,\n{name}\n{phone}",
    ),
    "en": (
        "Hi, I'm {name}. {q}",
        "My name is {name}, I run the data platform. {q}",
        "{q} You can reach me at {email}.",
        "{q} Call me on {phone} if that's easier.",
        "{q} I was charged twice on my card {card}.",
        "{q} I live in Spain and the signup form rejects my NIE {nie}.",
        "{q} For the refund my IBAN is {iban}.",
        "{q} I'm testing with the key {api_key} and get a 401.",
        "{q} My connection string is {url_login} and it fails.",
        "{q} The link {url_token} returns 403.",
        "{q} I send the header Authorization: Bearer {bearer}",
        "{q} The token I use is {jwt}",
        "{q} Requests from {ip} are being blocked.",
        "{q} Also my password: {password} stopped working.",
        "{q}\n\nRegards,\n{name}\n{phone}",
    ),
}
TICKETS = {
    "es": (
        (
            "Ticket #{order} ({date}). Cliente: {name} <{email}>, tel. {phone}. Incidencia: tras actualizar a "
            "Python {version} el asistente no responde. Se adjunta request_id {uuid}."
        ),
        "Ticket #{order}. {name} (DNI {dni}) pide devolver el pedido {order2} al IBAN {iban}. Atentamente,\n{name}",
        "Ticket #{order} ({date}): alta bloqueada para {name}, NIE {nie}, tel. {phone}.",
        "Ticket #{order} del {date}: {name} ve duplicado el cargo en la tarjeta {card}. Contacto: {email}.",
    ),
    "en": (
        (
            "Support ticket #{order} opened {date} by {name} <{email}>, phone {phone}. Customer reports timeouts "
            "from {ip} after upgrading to Python {version}."
        ),
        "Support ticket #{order}: {name} asks for a refund of order {order2} to IBAN {iban}. Best regards, {name}",
        "Support ticket #{order} ({date}): customer {name} sees a duplicated charge on card {card}. Contact: {email}.",
    ),
}
SQL_PII = (
    "SELECT id, status, created_at FROM tickets WHERE email = '{email}' ORDER BY created_at DESC LIMIT 5",
    "SELECT id, plan FROM customers WHERE dni = '{dni}'",
    "SELECT id, plan FROM customers WHERE nie = '{nie}'",
    "SELECT order_id, total FROM orders WHERE phone = '{phone}' AND created_at > '{date}'",
)
WEB_PII = ("{name} linkedin python", "{email} data breach")
NEGATIVES = {
    "es": (
        " Desde el {date} a las {time} falla el pedido {order}.",
        " Uso Python {version}, commit {sha}.",
        " request_id {uuid}, pedido {order_code}.",
        " El servicio escucha en el puerto {port} y cuesta {price} al mes.",
    ),
    "en": (
        " Since {date} at {time} order #{order7} fails.",
        " Running Python {version}, commit {sha}.",
        " request_id {uuid}, order {order_code}.",
        " The service listens on port {port} and costs {price} a month.",
    ),
}
PII_PLACES = {"question": 6, "ticket": 2, "greeting": 1, "sql": 1, "web": 1, "metadata": 2}


@dataclass(frozen=True)
class LabelledTrace:
    trace: Trace
    planted: list[tuple[str, str]]
    """(entity type, the exact string as it appears in the trace) for every planted value."""
    asked_about: str | None = None
    """The chunk id of the passage the question asks about; None for a packaging question, which
    the corpus does not answer."""


def _ascii(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _token(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(data: dict) -> str:
    return (
        base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode())
        .rstrip(b"=")
        .decode()
    )


class _Persona(dict):
    """Values for one trace's placeholders, made on first use so repeated mentions agree.

    Every maker returns (text as written, the part that must not survive anonymization): the
    token inside a URL, not the URL. Hard-negative placeholders are made the same way, unrecorded.
    """

    def __init__(self, rng: random.Random, fake: Faker, spanish: bool):
        super().__init__()
        self.rng, self.fake, self.spanish = rng, fake, spanish
        self.es = _faker("es_ES")  # Spanish documents exist only there; any customer can hold one
        self.first, self.last = fake.first_name(), fake.last_name()
        if spanish and rng.random() < 0.6:
            self.last += " " + fake.last_name()
        self.planted: list[tuple[str, str]] = []

    def __missing__(self, key: str) -> str:
        entity_type, maker = _MAKERS[key]
        text, secret = maker(self)
        if entity_type and (entity_type, secret) not in self.planted:
            self.planted.append((entity_type, secret))
        self[key] = text
        return text


def _plain(make: Callable[[_Persona], str]) -> Callable[[_Persona], tuple[str, str]]:
    def maker(p: _Persona) -> tuple[str, str]:
        value = make(p)
        return value, value

    return maker


def _email(p: _Persona) -> str:
    first, last = (_ascii(x).lower().replace(" ", "") for x in (p.first, p.last.split()[0]))
    local = p.rng.choice(
        (f"{first}.{last}", f"{first[0]}{last}", f"{first}{last}{p.rng.randint(1, 99)}")
    )
    domains = (
        ("gmail.com", "hotmail.es", "telefonica.es", "empresa.es")
        if p.spanish
        else ("gmail.com", "outlook.com", "acme.io", "example.co.uk")
    )
    return f"{local}@{p.rng.choice(domains)}"


def _phone(p: _Persona) -> str:
    shapes = (
        (("ES", "6", 8), ("ES", "7", 8), ("ES", "91", 7), ("ES", "93", 7))
        if p.spanish and p.rng.random() < 0.8
        else (
            ("GB", "20", 8),
            ("GB", "7", 9),
            ("US", "", 10),
            ("FR", "6", 8),
            ("MX", "55", 8),
            ("DE", "30", 8),
        )
    )
    while True:
        region, prefix, n = p.rng.choice(shapes)
        number = phonenumbers.parse(prefix + _token(p.rng, n, string.digits), region)
        if phonenumbers.is_valid_number(number):
            break
    if region == "ES" and p.rng.random() < 0.6:
        national = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
        d = national.replace(" ", "")
        return p.rng.choice(
            (national, d, f"{d[:3]} {d[3:6]} {d[6:]}", f"{d[:2]} {d[2:5]} {d[5:7]} {d[7:]}")
        )
    style = p.rng.choice(
        (phonenumbers.PhoneNumberFormat.INTERNATIONAL, phonenumbers.PhoneNumberFormat.E164)
    )
    return phonenumbers.format_number(number, style)


def _checked(make: Callable[[], str], module) -> str:
    while not module.is_valid(value := make()):
        pass
    return value


def _dni(p: _Persona) -> str:
    value = _checked(p.es.nif, dni)
    return f"{value[:-1]}-{value[-1]}" if p.rng.random() < 0.2 else value


def _iban(p: _Persona) -> str:
    value = _checked(p.fake.iban, iban)
    return iban.format(value) if p.rng.random() < 0.5 else value


def _card(p: _Persona) -> str:
    kind = p.rng.choice(("visa16", "mastercard", "amex", "discover", "jcb16", "visa13", "diners"))
    digits = _checked(lambda: p.fake.credit_card_number(card_type=kind), luhn)
    separator = p.rng.choice((" ", "-", ""))
    return (
        separator.join(digits[i : i + 4] for i in range(0, len(digits), 4)) if separator else digits
    )


def _ip(p: _Persona) -> str:
    return p.fake.ipv4_public() if p.rng.random() < 0.7 else p.fake.ipv6()


def _url_token(p: _Persona) -> tuple[str, str]:
    secret = _token(p.rng, p.rng.randint(24, 40))
    param = p.rng.choice(("token", "access_token", "api_key", "sig", "key"))
    host = p.rng.choice(("api.acme.io", "files.empresa.es", "storage.example.com"))
    return f"https://{host}/v1/export?format=csv&{param}={secret}&page=2", secret


def _url_login(p: _Persona) -> tuple[str, str]:
    credentials = f"{_ascii(p.first).lower().replace(' ', '')}:{_token(p.rng, 10)}{p.rng.choice('!*$%')}{p.rng.randint(10, 99)}"
    return f"postgresql://{credentials}@db-prod.internal:5432/analytics", credentials


def _api_key(p: _Persona) -> str:
    r = p.rng
    upper = string.ascii_uppercase + string.digits
    return r.choice(
        (
            f"sk-proj-{_token(r, 48)}",
            f"sk-{_token(r, 48)}",
            f"AKIA{_token(r, 16, upper)}",
            f"ghp_{_token(r, 36)}",
            f"xoxb-{_token(r, 12, string.digits)}-{_token(r, 13, string.digits)}-{_token(r, 24)}",
            f"AIza{_token(r, 35, string.ascii_letters + string.digits + '_-')}",
        )
    )


def _jwt(p: _Persona) -> str:
    header = _b64({"alg": "HS256", "typ": "JWT"})
    payload = _b64(
        {
            "sub": str(p.rng.randint(10**6, 10**7)),
            "iat": p.rng.randint(1_700_000_000, 1_800_000_000),
        }
    )
    return f"{header}.{payload}.{_token(p.rng, 43, string.ascii_letters + string.digits + '_-')}"


def _password(p: _Persona) -> str:
    word = p.rng.choice(
        ("Verano", "Invierno", "Madrid", "Sunshine", "Dragon", "Barcelona", "Qwerty")
    )
    return f"{word}{p.rng.randint(2015, 2026)}{p.rng.choice('!#$*')}"


def _date(p: _Persona) -> str:
    day = date(2026, 1, 1) + timedelta(days=p.rng.randint(0, 364))
    return day.isoformat() if p.rng.random() < 0.5 else day.strftime("%d/%m/%Y")


_MAKERS: dict[str, tuple[str | None, Callable[[_Persona], tuple[str, str]]]] = {
    "name": ("PERSON", _plain(lambda p: f"{p.first} {p.last}")),
    "email": ("EMAIL", _plain(_email)),
    "phone": ("PHONE", _plain(_phone)),
    "dni": ("DNI", _plain(_dni)),
    "nie": ("NIE", _plain(lambda p: _checked(p.es.nie, nie))),
    "iban": ("IBAN", _plain(_iban)),
    "card": ("CREDIT_CARD", _plain(_card)),
    "ip": ("IP_ADDRESS", _plain(_ip)),
    "url_token": ("URL_SECRET", _url_token),
    "url_login": ("URL_SECRET", _url_login),
    "api_key": ("SECRET", _plain(_api_key)),
    "jwt": ("SECRET", _plain(_jwt)),
    "bearer": (
        "SECRET",
        _plain(lambda p: _token(p.rng, 40, string.ascii_letters + string.digits + "-._")),
    ),
    "password": ("SECRET", _plain(_password)),
    # Hard negatives: number-shaped, never PII, never recorded.
    "date": (None, _plain(_date)),
    "time": (None, _plain(lambda p: f"{p.rng.randint(0, 23):02d}:{p.rng.randint(0, 59):02d}")),
    "order": (None, _plain(lambda p: str(p.rng.randint(10_000, 99_999)))),
    "order2": (None, _plain(lambda p: str(p.rng.randint(10_000, 99_999)))),
    "order7": (None, _plain(lambda p: str(p.rng.randint(10**6, 10**7 - 1)))),
    "order_code": (None, _plain(lambda p: f"ORD-2026-{p.rng.randint(0, 999_999):06d}")),
    "uuid": (None, _plain(lambda p: str(uuid.UUID(int=p.rng.getrandbits(128), version=4)))),
    "sha": (None, _plain(lambda p: _token(p.rng, 40, "0123456789abcdef"))),
    "version": (None, _plain(lambda p: f"3.{p.rng.randint(9, 13)}.{p.rng.randint(0, 12)}")),
    "port": (None, _plain(lambda p: str(p.rng.choice((5432, 6333, 8000, 8080, 8793))))),
    "price": (None, _plain(lambda p: f"{p.rng.randint(5, 900)},{p.rng.randint(0, 99):02d} €")),
}


@functools.cache
def _faker(locale: str) -> Faker:
    return Faker(locale)


def _weighted(rng: random.Random, weights: dict):
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _sentences(chunk: DemoChunk, rng: random.Random) -> str:
    sentences = [
        s for s in re.split(r"(?<=[.!?])\s+", " ".join(chunk.text.split())) if 20 < len(s) < 400
    ]
    if not sentences:
        return " ".join(chunk.text.split())[:300]
    start = rng.randrange(len(sentences))
    return " ".join(sentences[start : start + rng.randint(2, 3)])


def _retrieve(gold: DemoChunk, chunks: list[DemoChunk], rng: random.Random) -> list[DemoChunk]:
    """3-5 chunks: the gold one (usually first), neighbours from its topic, and distractors."""
    same_topic = [c for c in chunks if c.topic == gold.topic and c is not gold]
    picked = [gold]
    while len(picked) < rng.randint(3, 5):
        pool = same_topic if same_topic and rng.random() < 0.5 else chunks
        candidate = rng.choice(pool)
        if candidate not in picked:
            picked.append(candidate)
    if rng.random() < 0.3:  # the gold chunk ranked low: what recall@k and MRR are there to show
        picked.insert(rng.randint(1, len(picked) - 1), picked.pop(0))
    return picked


def _scores(rng: random.Random, n: int) -> list[float]:
    scores = [rng.uniform(0.72, 0.93)]
    for _ in range(n - 1):
        scores.append(scores[-1] - rng.uniform(0.01, 0.12))
    return [round(s, 4) for s in scores]


@dataclass
class _Draft:
    question: str
    answer: str
    contexts: list[Context]
    tool_calls: list[ToolCall]
    metadata: dict


def _plant(place: str, draft: _Draft, persona: _Persona, lang: str) -> None:
    """Put PII where real users and systems put it: the question, a greeting, a ticket, tools,
    headers."""
    rng = persona.rng
    if place == "question":
        template = rng.choice(QUESTION_PII[lang])
        draft.question = template.format_map(ChainMap({"q": draft.question}, persona))
    elif place == "greeting":
        answer = draft.answer
        draft.answer = rng.choice(GREETINGS[lang]).format_map(persona) + (
            answer[0].lower() + answer[1:] if answer[1:2].islower() else answer
        )
    elif place == "ticket":
        ticket = Context(
            chunk_id=f"tickets/{persona['order']}#0",
            text=rng.choice(TICKETS[lang]).format_map(persona),
            score=0.0,
        )
        draft.contexts.insert(rng.randint(1, len(draft.contexts)), ticket)
    elif place == "sql":
        draft.tool_calls.append(
            ToolCall(name="sql_query", arguments={"query": rng.choice(SQL_PII).format_map(persona)})
        )
    elif place == "web":
        draft.tool_calls.append(
            ToolCall(
                name="web_search", arguments={"query": rng.choice(WEB_PII).format_map(persona)}
            )
        )
    else:
        key, placeholder = rng.choice(
            (("client_ip", "ip"), ("user_email", "email"), ("referer", "url_token"))
        )
        draft.metadata[key] = persona[placeholder]


def _answer_faults(
    answer: str, question: str, gold: DemoChunk, contexts: list[Context], lang: str
) -> str:
    """The answer as the demo assistant got it wrong, at ANSWER_FAULTS' rates, drawn from the
    question."""
    seed = ("demo-answer", question, gold.chunk_id)
    if draw("wrong_abstention", *seed) < ANSWER_FAULTS.wrong_abstention:
        return NOT_ENOUGH[lang]
    evidence = "\n".join(c.text for c in contexts)
    lead = next((lead for lead in LEAD_INS[lang] if lead and answer.startswith(lead)), "")
    body = answer[len(lead) :]
    others = [
        c for c in contexts if c.chunk_id != gold.chunk_id and not c.chunk_id.startswith("tickets/")
    ]
    if others and draw("wrong_context", *seed) < ANSWER_FAULTS.wrong_context:
        distractor = others[int(draw("which", *seed) * len(others))]
        body = " ".join(sentences(distractor.text)[:2]) or body
    parts = sentences(body) or [body]
    parts = corrupt_sentences(
        parts, ANSWER_FAULTS, topic=question, language=lang, evidence=evidence, seed=seed
    )
    return lead + join_sentences(parts)


def _invalid_arguments(draft: _Draft) -> None:
    """Some retrieval calls sent with arguments the schema rejects (a count out of range, or in
    words); calls that may carry planted PII (SQL, web searches) are left as they are, so every
    planted value stays."""
    for i, call in enumerate(draft.tool_calls):
        if (
            call.name == "vector_search"
            and draw("invalid_tool", draft.question, i) < INVALID_TOOL_ARGS
        ):
            top_k = "five" if draw("how", draft.question, i) < 0.5 else 0
            draft.tool_calls[i] = ToolCall(
                name=call.name, arguments={**call.arguments, "top_k": top_k}
            )


def _one_trace(
    rng: random.Random,
    chunks: list[DemoChunk],
    start: datetime,
    end: datetime,
    new_topic_share: float = 0.0,
) -> LabelledTrace:
    spanish = rng.random() < SPANISH_SHARE
    lang = "es" if spanish else "en"
    foreign_customer = rng.random() < 0.15
    persona = _Persona(rng, _faker("es_ES" if spanish != foreign_customer else "en_US"), spanish)
    app = _weighted(rng, APPS)
    passage = rng.choice(asked_passages())
    gold = passage.chunk
    style = "mixed" if spanish and rng.random() < MIXED_SHARE else lang
    plural = "n" if gold.subject_es.startswith(("los ", "las ")) else ""
    question = rng.choice(QUESTIONS[style]).format(s=gold.subject_es, e=gold.subject_en, n=plural)
    question = quoted_question(question, passage, style)
    asked_about: str | None = gold.chunk_id
    # Drawn from the trace's own content, not the shared generator: every other field stays what it
    # was.
    if (
        new_topic_share
        and draw("demo-new-topic", question, persona.first, persona.last) < new_topic_share
    ):
        asked_about = None
        question = NEW_TOPIC[lang][
            int(draw("demo-new-topic-question", question, gold.chunk_id) * len(NEW_TOPIC[lang]))
        ]
    if rng.random() < NEGATIVE_RATE:
        question += rng.choice(NEGATIVES[lang]).format_map(persona)
    draft = _Draft(
        question=question,
        answer=rng.choice(LEAD_INS[lang]) + _sentences(gold, rng),
        contexts=[
            Context(chunk_id=c.chunk_id, text=c.text, score=0.0)
            for c in _retrieve(gold, chunks, rng)
        ],
        tool_calls=[],
        metadata={
            "session_id": f"sess-{uuid.UUID(int=rng.getrandbits(128)).hex[:16]}",
            "user_agent": rng.choice(USER_AGENTS),
            "channel": rng.choice(("web", "slack", "api")),
        },
    )
    # Before any PII is planted: a fault never rewrites a planted value.
    draft.answer = _answer_faults(draft.answer, draft.question, gold, draft.contexts, lang)
    if rng.random() < PII_RATE[app]:
        places = rng.choices(
            list(PII_PLACES), weights=list(PII_PLACES.values()), k=rng.choice((1, 1, 1, 2, 2, 3))
        )
        for place in dict.fromkeys(places):
            _plant(place, draft, persona, lang)
    if rng.random() < TOOL_RATE:
        draft.tool_calls.insert(
            0,
            ToolCall(
                name="vector_search",
                arguments={"query": draft.question, "top_k": len(draft.contexts)},
            ),
        )
        if rng.random() < 0.3:
            draft.tool_calls.append(
                ToolCall(
                    name="web_search",
                    arguments={"query": f"python {gold.subject_en} site:docs.python.org"},
                )
            )
    for context, score in zip(draft.contexts, _scores(rng, len(draft.contexts))):
        context.score = score
    _invalid_arguments(draft)
    trace = Trace(
        trace_id=f"tr-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
        ts=start + (end - start) * rng.random(),
        question=draft.question,
        answer=draft.answer,
        contexts=draft.contexts,
        tool_calls=draft.tool_calls,
        model=_weighted(rng, MODELS),
        app=app,
        language=lang,
        user_feedback=_weighted(rng, FEEDBACK),
        latency_ms=int(rng.lognormvariate(7.2, 0.5)),
        metadata=draft.metadata,
    )
    return LabelledTrace(trace, persona.planted, asked_about)


def generate_traces(
    n: int, *, seed: int, start: datetime, end: datetime, new_topic_share: float = 0.0
) -> list[LabelledTrace]:
    """`n` traces with timestamps in [start, end), ordered by time; the same seed, the same traces.
    A `new_topic_share` of them ask about NEW_TOPIC instead of the corpus."""
    rng = random.Random(seed)
    for locale in ("es_ES", "en_US"):
        _faker(locale).seed_instance(rng.getrandbits(32))
    chunks = load_demo_chunks()
    traces = [_one_trace(rng, chunks, start, end, new_topic_share) for _ in range(n)]
    return sorted(traces, key=lambda t: t.trace.ts)


def day_traces(
    day: date, *, per_day: int, seed: int, new_topic_share: float = 0.0
) -> list[LabelledTrace]:
    """The `per_day` traces of `day` in the store seeded with `seed`, each with what it asks
    about."""
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return generate_traces(
        per_day,
        seed=_day_seed(seed, day),
        start=start,
        end=start + timedelta(days=1),
        new_topic_share=new_topic_share,
    )


def _day_seed(seed: int, day: date) -> int:
    # Per-day seeds keep a day's rows identical however long the generated range is.
    return int.from_bytes(hashlib.sha256(f"{seed}:{day.isoformat()}".encode()).digest()[:8], "big")


def _row(trace: Trace) -> dict:
    row = trace.model_dump(mode="python")
    for key in ("contexts", "tool_calls", "metadata"):
        row[key] = json.dumps(row[key], ensure_ascii=False)
    return row


def _break(row: dict, kind: str, day: date) -> dict:
    """The ways real trace stores go wrong; the sampler must quarantine each, not crash."""
    if kind == "missing_question":
        row["question"] = None
    elif kind == "bad_contexts":
        row["contexts"] = row["contexts"][: max(1, len(row["contexts"]) // 2)]
    elif kind == "bad_ts":
        row["ts"] = f"{day.isoformat()} 25:61:00"
    else:  # huge_answer: a logging bug that dumped a payload into the answer column
        line = f"DEBUG retriever payload: {row['answer']}\n"
        row["answer"] = (line * (HUGE_ANSWER_BYTES // len(line) + 1))[:HUGE_ANSWER_BYTES]
    return row


def generate_store_rows(
    *,
    days: int,
    per_day: int,
    end: date,
    seed: int,
    new_topic_days: int = 0,
    new_topic_share: float = 0.0,
) -> Iterator[dict]:
    """Raw rows for the SQL trace store over the `days` days before `end`, about 1.5% broken; on the
    last `new_topic_days` days, `new_topic_share` of the traffic asks about NEW_TOPIC (a launch the
    golden set missed)."""
    for offset in range(days, 0, -1):
        day = end - timedelta(days=offset)
        rng = random.Random(_day_seed(seed, day) ^ 0x5EED)
        huge_allowed = day.toordinal() % 3 == 0  # at most one multi-MB row every three days
        share = new_topic_share if offset <= new_topic_days else 0.0
        for labelled in day_traces(day, per_day=per_day, seed=seed, new_topic_share=share):
            row = _row(labelled.trace)
            if rng.random() < BROKEN_ROW_RATE:
                kinds = ["missing_question", "bad_contexts", "bad_ts"] + (
                    ["huge_answer"] if huge_allowed else []
                )
                kind = rng.choice(kinds)
                huge_allowed = huge_allowed and kind != "huge_answer"
                row = _break(row, kind, day)
            yield row
