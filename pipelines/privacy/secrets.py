"""Secrets in free text: credentials people paste into a chat with an assistant.

- provider tokens, recognised by their published prefixes (OpenAI, Anthropic, AWS, GitHub, GitLab,
  Slack, Stripe, Google, Hugging Face, npm, PyPI, SendGrid, Twilio, Azure AD, ...) and JWTs;
- private-key blocks (PEM, OpenSSH, PGP, PuTTY), whole, even when cut short;
- HTTP credentials: `Authorization:` headers (Basic, Bearer, Digest...), a bare `Bearer <token>` or
  `Basic <base64 of user:password>`, `Cookie:`/`Set-Cookie:` headers, session cookies;
- URLs: `user:password@` and token-like query or fragment values (`?token=`, `&sig=`,
  `#access_token=`);
- assignments (`password=`, `"api_key": "..."`, `DB_PASS: ...`) and sentences ("my password is",
  "mi contraseña es").

What the value must look like depends on how sure the context is. After a password keyword anything
but a placeholder or a word of prose counts ("password: sunshine" is a secret; "password: required"
is documentation). After weaker keywords (`token`, `*_key`, `secret`) the value must look random:
a digit or a symbol in it, or sixteen characters.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from pipelines.privacy.matching import confirmed
from pipelines.privacy.spans import Span
from pipelines.privacy.views import TextView

# --- provider tokens ------------------------------------------------------------------------------
PROVIDER_TOKENS = {
    "openai/anthropic": [
        r"sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin|sid)\d\d-|live-|test-)?[A-Za-z0-9_\-]{20,}"
    ],
    "stripe": [
        r"sk_(?:live|test)_[A-Za-z0-9]{16,}",
        r"rk_(?:live|test)_[A-Za-z0-9]{16,}",
        r"pk_(?:live|test)_[A-Za-z0-9]{16,}",
        r"whsec_[A-Za-z0-9]{24,}",
    ],
    "aws access key id": [r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|PKA|ROA|SCA)[0-9A-Z]{16}"],
    "github": [r"gh[pousr]_[A-Za-z0-9]{36,}", r"github_pat_[A-Za-z0-9_]{22,}"],
    "gitlab": [
        r"gl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat|ffct|agent)-[A-Za-z0-9_\-]{20,}",
        r"GR1348941[A-Za-z0-9_\-]{20,}",
    ],
    "slack": [
        r"xox[abposer]-[A-Za-z0-9\-]{10,}",
        r"xapp-\d-[A-Za-z0-9\-]{10,}",
        r"T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{20,}",
    ],
    "google": [
        r"AIza[0-9A-Za-z_\-]{35}",
        r"ya29\.[0-9A-Za-z_\-]{20,}",
        r"GOCSPX-[A-Za-z0-9_\-]{20,}",
        r"1//0[A-Za-z0-9_\-]{40,}",
    ],
    "hugging face": [r"hf_[A-Za-z0-9]{30,}", r"api_org_[A-Za-z0-9]{30,}"],
    "npm": [r"npm_[A-Za-z0-9]{36,}"],
    "pypi": [r"pypi-[A-Za-z0-9_\-]{50,}"],
    "sendgrid": [r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"],
    "twilio": [r"SK[0-9a-f]{32}", r"AC[0-9a-f]{32}"],
    "xai": [r"xai-[A-Za-z0-9]{40,}"],
    "groq": [r"gsk_[A-Za-z0-9]{40,}"],
    "replicate": [r"r8_[A-Za-z0-9]{30,}"],
    "perplexity": [r"pplx-[A-Za-z0-9]{40,}"],
    "shopify": [r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"],
    "databricks": [r"dapi[0-9a-f]{32}(?:-\d)?"],
    "digitalocean": [r"do[opr]_v1_[a-f0-9]{64}"],
    "grafana": [r"glsa_[A-Za-z0-9_]{32,}", r"glc_[A-Za-z0-9+/=]{32,}"],
    "new relic": [r"NRAK-[A-Z0-9]{27}"],
    "postman": [r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"],
    "sentry": [r"sntry[su]_[A-Za-z0-9+/=_]{40,}"],
    "vault": [r"hv[sb]\.[A-Za-z0-9_\-]{24,}"],
    "notion": [r"ntn_[A-Za-z0-9]{40,}", r"secret_[A-Za-z0-9]{40,}"],
    "linear": [r"lin_api_[A-Za-z0-9]{40}"],
    "figma": [r"figd_[A-Za-z0-9_\-]{40,}"],
    "atlassian": [r"ATATT3[A-Za-z0-9_\-=]{50,}"],
    "age": [r"AGE-SECRET-KEY-1[0-9A-Z]{58}"],
    "square": [r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,}"],
    "meta": [r"EAA[A-Za-z0-9]{60,}"],
    "mailgun": [r"key-[0-9a-f]{32}"],
    "supabase": [r"sbp_[a-f0-9]{40}"],
    "doppler": [r"dp\.(?:st|ct|sa|scim)\.[A-Za-z0-9_\-]{40,}"],
    "pulumi": [r"pul-[a-f0-9]{40}"],
    "jwt": [r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"],
    # itsdangerous and Flask sessions: a base64url JSON payload, a timestamp perhaps, an HMAC
    # signature.
    "signed payload": [r"eyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]{4,}){0,1}\.[A-Za-z0-9_\-]{16,}"],
}
"""Published token formats by issuer, each opening with a literal character. Formats change: lengths
are lower bounds."""
UNPREFIXED_TOKENS = {
    "azure ad client secret": ("Q~", r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    "mailchimp": ("-us", r"[0-9a-f]{32}-us\d{1,2}"),
    "telegram bot": (":AA", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}"),
}
"""Formats without a leading literal, each with the literal its middle always holds."""


_PROVIDER_TOKEN = re.compile(
    "(?:"
    + "|".join(p for patterns in PROVIDER_TOKENS.values() for p in patterns)
    + r")(?![A-Za-z0-9_\-])"
)
_UNPREFIXED_TOKENS = [
    (literal, re.compile(rf"(?<![A-Za-z0-9_\-])(?:{pattern})(?![A-Za-z0-9_\-])"))
    for literal, pattern in UNPREFIXED_TOKENS.values()
]
_TOKEN_START = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9]")
_MIN_TOKEN = 20
_RULER = "-=_*#~.+"


def _provider_tokens(view: TextView) -> Iterator[Span]:
    """Tokens by prefix, searched only inside words long enough to hold one.

    `str.split` finds the long words far faster than a regex scan can, and most texts have none;
    `str.find` gives back the offsets of each.
    """
    words = view.word_set
    if not words or len(max(words, key=len)) < _MIN_TOKEN:
        return
    text, lower = view.text, view.lower
    # Longest first, in C: the loop below sees only the long words, however many short ones there
    # are.
    for word in sorted(words, key=len, reverse=True):
        if len(word) < _MIN_TOKEN:
            break
        if not word.strip(_RULER):  # "--------": a ruler line, as documentation has many
            continue
        start = lower.find(word)
        while start != -1:
            end = start + len(word)
            for token_start in _TOKEN_START.finditer(text, start, end):
                m = _PROVIDER_TOKEN.match(text, token_start.start(), end)
                if m:
                    yield Span(m.start(), m.end(), "SECRET", m.group(), m.group())
            for literal, regex in _UNPREFIXED_TOKENS:
                if literal.lower() in word:
                    for m in regex.finditer(text, start, end):
                        yield Span(m.start(), m.end(), "SECRET", m.group(), m.group())
            start = lower.find(word, end)


# --- private keys ---------------------------------------------------------------------------------
_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_BODY = re.compile(
    r"(?:\s+(?:[A-Za-z0-9+/=]*[0-9+/=][A-Za-z0-9+/=]*|[A-Za-z0-9+/=]{16,}|[A-Za-z\-]+:|[\w\-]+,[\w\-]+))*"
)
"""What follows a header that lost its END line: base64 and `Proc-Type:`/`DEK-Info:` fields."""
_PUTTY_PRIVATE = re.compile(
    r"Private-Lines:[ \t]*\d+((?:\s+[A-Za-z0-9+/=]{8,})+)(?:\s+Private-MAC:[ \t]*[0-9a-f]+)?"
)


def _private_keys(text: str) -> Iterator[Span]:
    if "-----BEGIN" in text:  # noqa: SIM102 - one test per format
        for begin in _PEM_BEGIN.finditer(text):
            end_marker = f"-----END {begin.group(1)}-----"
            limit = text.find("\x00", begin.end())  # a string joined to others ends at a NUL
            end = text.find(end_marker, begin.end(), len(text) if limit == -1 else limit)
            end = end + len(end_marker) if end != -1 else _PEM_BODY.match(text, begin.end()).end()
            block = text[begin.start() : end]
            yield Span(begin.start(), end, "SECRET", block, " ".join(block.split()))
    if "Private-Lines:" in text:
        for m in _PUTTY_PRIVATE.finditer(text):
            yield Span(
                m.start(1),
                m.end(),
                "SECRET",
                text[m.start(1) : m.end()],
                " ".join(m.group(1).split()),
            )


# --- HTTP credentials
# ------------------------------------------------------------------------------ Each scan opens
# with a literal, which the regex engine finds at memchr speed.
_AUTH_HEADER = re.compile(
    r"authori[sz]ation[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(basic|bearer|token|digest|negotiate|ntlm|apikey|api-key|key|sharedaccesssignature|sharedkey|hmac|dpop|mac|jwt"
    r"|aws4-hmac-sha256|splunk|sso-key)[ \t]+)?([^\s\"'][^\n\"']*)"
)
_REST_OF_LINE_SCHEMES = ("digest", "aws4-hmac-sha256", "hmac", "sharedaccesssignature", "mac")
_COOKIE_HEADER = re.compile(
    r"cookie(?<![a-z0-9_]cookie)[\"']?[ \t]*:[ \t]*[\"']?([^\s\"'][^\n\"']*)"
)
_BEARER = re.compile(
    r"earer(?<![^\W_][Bb]earer)(?<=[Bb]earer)[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)(?![\w\-.~+/])"
)
_BASIC = re.compile(
    r"asic(?<![^\W_][Bb]asic)(?<=[Bb]asic)[ \t]+([A-Za-z0-9+/]{6,}={0,2})(?![\w+/=])"
)
_TRAILING = " \t,;"


def _basic_credentials(value: str) -> bool:
    """A Basic credential is base64 of "user:password"; "Basic usage" is not."""
    try:
        return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False


def _http_credentials(view: TextView) -> Iterator[Span]:
    text, lower = view.text, view.lower
    if "authori" in lower:
        for m in _AUTH_HEADER.finditer(lower):
            start, end = m.span(2)
            if m.group(1) not in _REST_OF_LINE_SCHEMES:
                end = start + len(m.group(2).split()[0])
            end = start + len(text[start:end].rstrip(_TRAILING))
            if end > start and not _placeholder(text[start:end]):
                yield Span(start, end, "SECRET", text[start:end], text[start:end])
    if "cookie" in lower:
        for m in _COOKIE_HEADER.finditer(lower):
            start = m.start(1)
            end = start + len(text[start : m.end(1)].rstrip(_TRAILING))
            yield Span(start, end, "SECRET", text[start:end], text[start:end])
    if "earer" in text:
        yield from confirmed(_BEARER, text, _random_enough, group=1)
    if "asic" in text:
        yield from confirmed(
            _BASIC, text, lambda v: ("SECRET", v) if _basic_credentials(v) else None, group=1
        )


# --- URLs -----------------------------------------------------------------------------------------
URL_CREDENTIALS = r"(?i:\b[a-z][a-z0-9+.\-]*://)([^\s/@:\[\]]+:[^\s/\[\]]+)@"
"""`scheme://user:password@`, as a regex for validation suites; detection anchors on the `://`."""
# The password may hold "@" itself: the credentials run to the last "@" before the host.
_URL_CREDENTIALS = re.compile(r"://([^\s/@:\[\]]+:[^\s/\[\]]+)@")


def _url_credentials(text: str) -> Iterator[Span]:
    for m in _URL_CREDENTIALS.finditer(text):
        yield Span(m.start(1), m.end(1), "URL_SECRET", m.group(1), m.group(1))


# --- assignments, query strings, cookies and sentences --------------------------------------------
_PASSWORD_STEMS = ("password", "passwd", "passphrase", "passcode", "contraseña", "contrasena")
_PASSWORD_WORDS = (*_PASSWORD_STEMS, "passwort")
_PASSWORD_SEGMENTS = ("pass", "pwd", "pw", "pin")
_SECRET_WORDS = (
    "secret",
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "accountkey",
    "credential",
    "credentials",
    "clientsecret",
    "connectionstring",
)
_SECRET_SEGMENTS = ("auth", "sig", "clave")
_QUERY_SUFFIXES = (
    "token",
    "secret",
    "password",
    "passwd",
    "signature",
    "apikey",
    "credential",
    "credentials",
    "session",
    "sessionid",
    "sessid",
)
_QUERY_SEGMENTS = (
    "key",
    "sig",
    "pwd",
    "pass",
    "code",
    "sid",
    "auth",
    "otp",
    "jwt",
    "ticket",
    "hash",
    "nonce",
)
_NAME = r"[a-z0-9_\-.\[\]]"


def _reversed(words, *, segment: bool = False) -> str:
    """Words as they read right to left; a whole segment is followed by a non-alphanumeric."""
    return "|".join(re.escape(w[::-1]) + ("(?![a-z0-9])" if segment else "") for w in words)


_KEY_REVERSED = (
    rf"[ \t]*[\"']?(?:(?P<password>{_reversed(_PASSWORD_WORDS)}|{_reversed(_PASSWORD_SEGMENTS, segment=True)})"
    rf"|(?P<secret>{_reversed(_SECRET_WORDS)}|yek[_\-]|{_reversed(_SECRET_SEGMENTS, segment=True)}))"
)
_EQUALS_REVERSED = re.compile(
    rf"=(?:(?P<query>(?:{_reversed(_QUERY_SUFFIXES)}){_NAME}{{0,60}}[?&;#]"
    rf"|(?:{_reversed(_QUERY_SEGMENTS)})(?:[_\-.\[\]]{_NAME}{{0,60}})?[?&;#])"
    r"|(?P<cookie>[a-z0-9_\-.]{0,40}?(?:sses|frsc|frsx)|dis(?![a-z0-9]))"
    rf"|{_KEY_REVERSED})"
)
_COLON_REVERSED = re.compile(rf":{_KEY_REVERSED}")
"""Assignments read right to left from their `=` or `:`: `password = `, `"api_key": `, `?token=`,
`sessionid=`. A scan that opens with a literal skips to the next `=` at memchr speed, and the key
before it is then a short match instead of a guess at every letter that could open a keyword."""
_VALUE = re.compile(r"[ \t]*(?:\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|([^\s\"'`,;<>\[\]{}()]+))")
"""A quoted value, or a bare one up to a blank or a delimiter; `&` is a password's, a query's `&` is
the query scan's."""
_QUERY_VALUE = re.compile(r"[^&\s#\"'<>\[\]]+")
_COOKIE_VALUE = re.compile(r"[^;\s&\"'<>\[\](){},]{6,}")

_PASSWORD_PHRASE = re.compile(
    r"(?:(?:password|passwd|passphrase|passcode|contraseña|contrasena)|(?<=my |mi |tu |su |el )(?:pass|pin)"
    r"|(?:(?<=your )|(?<=the ))(?:pass|pin)|(?<=mi |tu |su )clave(?:[ \t]+(?:de[ \t]+acceso|secreta|wifi))?"
    r"|clave[ \t]+(?:de[ \t]+acceso|secreta))"
    r"[ \t]+(?:(?:nueva|new|actual|current|temporal|temporary|antigua|old)[ \t]+)?(?:is|was|es|era|ser[áa]|ser[íi]a)"
    r"[ \t]+(?:[\"'«`]([^\"'»`\n]{1,100})[\"'»`]|(\S+))"
)
_PASSWORD_NEXT = re.compile(
    r"(?:password|passwd|passphrase|passcode|contraseña|contrasena)[ \t]+(?:[\"'«`]([^\"'»`\n]{1,100})[\"'»`]|(\S+))"
)
"""A password keyword right before a value: "con la contraseña Verano2024! no entra"."""
PROSE_WORDS = frozenset(
    """not no wrong incorrect invalid expired correct right too very the a an my your his her our their still also now
    being required optional empty blank missing case set stored saved reset changed hidden encrypted hashed same
    different weak strong long short secure safe in on at for of to and or but that this it what why how where when here
    there mine yours fine ok okay good bad new old field value type string str int bool none null true false yes
    incorrecta incorrecto inválida invalida inválido invalido caducada caducado correcta correcto muy demasiado la el lo
    los las un una mi tu su que qué de del en con para por y o pero igual misma mismo distinta diferente segura seguro
    débil debil fuerte larga corta nueva vieja antigua válida valida obligatoria obligatorio requerida vacía vacia
    errónea erronea mala buena otra esta esa este ese sí si used locked unlocked disabled enabled needed sent shown
    displayed ignored checked verified accepted rejected generated created asked prompted requested taken read written
    given cleared removed deleted updated compared entered typed sensitive usada usado bloqueada bloqueado necesaria
    guardada cifrada enviada pedida solicitada""".split()  # noqa: SIM905 - reads as prose
)
"""Words that follow "password:" or "my password is" in documentation and complaints, not
secrets."""
_PLACEHOLDER = re.compile(
    r"\*+|x{3,}|X{3,}|\.{2,}|…|<[^>]*>|\$\{[\w.]+\}|\$[A-Z_][A-Z0-9_]*|\$[a-z_][a-z0-9_.]*|\{\{.*\}\}|\{[\w.]*\}"
    # ${DB_PASS}, $DB_PASS, $db_pass: a variable; "$fQhYhCLb" is a password
    r"|%\(?\w*\)?[sd]|[#?_\-]+"
    r"|[A-Z][A-Z]*(?:_[A-Z]+)*"  # NAME, DB_PASSWORD: a template slot or an environment variable
    # self.password, os.environ, getpass(
    r"|[a-z_][a-z_]*(?:\.[a-z_][a-z0-9_]*)+\(?|[a-z_][a-z0-9_]*\("
    r"|[a-z]+(?:_[a-z]+)+"  # db_password: a variable
    r"|(?i:your|my)[\-_ ][a-z][\w\-]*|[a-z][\w\-]*[\-_](?i:here)"  # your-api-key, token_goes_here
    r"|\[[A-Z][A-Z_]*_[0-9a-f]{8}\]"  # a pseudonym
    # [opciones], [OPTIONS]: an optional argument in a usage line
    r"|\[[^\W\d_]+(?:[\- .|][^\W\d_]+)*\]"
)
_SYMBOL_OR_DIGIT = re.compile(r"[^A-Za-zÀ-ÿ]")
_INNER_CAPITALS = re.compile(r"[a-z][A-Z].*[A-Z]|[A-Z]{2}.*[a-z].*[A-Z]")
"""Two capitals inside a word, away from its start: random, not "JavaScript"."""


def _placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is not None or value.lower() in (
        "none",
        "null",
        "nil",
        "undefined",
        "redacted",
    )


_NAME_PART = r"(?:[a-z]+|[A-Z][a-z]+|[A-Z]+)\d*"
_CODE_NAME = re.compile(
    rf"_*{_NAME_PART}(?:_+(?:{_NAME_PART}|\d+))*(?:\._*{_NAME_PART}(?:_+(?:{_NAME_PART}|\d+))*)*"
)
"""A name in code, dotted or not ("_first_rev_token", "nn.Parameter"): after a weak keyword
("first_token = _first_rev_token(rev)"), a variable, not a value. Its parts are words (lower case,
capitalised or capitals, a number after them): "ll6tMMAJUs_d" and "AKIA..." stay secrets."""


_CONTRACTION = re.compile(r"[A-Za-z]+['’](?:t|s|re|ve|ll|d|m)")
""""couldn't", "it's": prose after "password", not a value."""


_TYPE_NAME = re.compile(r"(?:[A-Z][a-z]+\d?){2,}")
""""TextGenerationStreamOutputToken": a class's name is capitalised words run together."""
_SEGMENT = r"(?:[a-z0-9_.\-]+|[A-Z][a-z0-9_.\-]*)"
_PATH = re.compile(
    rf"(?:~|\.{{1,2}})?(?:/{_SEGMENT}){{2,}}/?|(?:~|\.{{1,2}})?/?{_SEGMENT}\.(?:pem|key|pfx|p12|json|txt|crt|cer|der|jks|env|ya?ml)"
)
""""/home/user/me/my_key.pfx", "service-account.json": where a key is kept, not the key. Its
segments are words: "/hTGHGNTR99FhRxQzzGndbzixH8K1s/jjg..." is a key in base64."""


def _code_name(value: str) -> bool:
    if _TYPE_NAME.fullmatch(value) or _PATH.fullmatch(value):
        return True
    return (
        _CODE_NAME.fullmatch(value) is not None
        and ("_" in value or "." in value)
        and any(c.islower() for c in value)
        and not re.search(r"\d{3}", value)
    )


_ASIDE_OPENERS = "-–—¡¿(«\"'“‘"


def _random_enough(value: str) -> tuple[str, str] | None:
    """A value after a weak keyword: a digit or symbol in it, capitals inside it ("lVRGJHYbVRu"), or
    sixteen characters; and no placeholder, no name in code."""
    if len(value) < 6 or _placeholder(value) or _code_name(value) or _CONTRACTION.fullmatch(value):
        return None
    # "frase contraseña -¡esto es...": the punctuation that opens an aside is not part of a value.
    word = value.lstrip(_ASIDE_OPENERS) or value
    random_looking = (
        _SYMBOL_OR_DIGIT.search(word) or _INNER_CAPITALS.search(word) or len(word) >= 16
    )
    return ("SECRET", value) if random_looking else None


def _password(value: str) -> tuple[str, str] | None:
    """A value after a password keyword: anything but a placeholder, a word of prose or the keyword
    itself (`password=password`: an argument passed on in code)."""
    value = value.rstrip(".,;:)?")
    if (
        len(value) < 3
        or _placeholder(value)
        or value.lower() in PROSE_WORDS
        or value.lower() in _PASSWORD_WORDS
    ):
        return None
    return "SECRET", value


def _in_field_list(text: str, key_start: int) -> bool:
    """Whether the key at `key_start` is a field of a colon-separated format
    ("nombre:contraseña:GID"), as man pages describe /etc/passwd and /etc/group: a colon before the
    key names no value after it."""
    return key_start > 1 and text[key_start - 1] == ":" and text[key_start - 2].isalnum()


def _value_span(text: str, m: re.Match[str], groups: tuple[int, ...]) -> tuple[int, int] | None:
    for group in groups:
        if m.group(group) is not None:
            start, end = m.span(group)
            end = start + len(text[start:end].rstrip(".,;:)?")) if group == groups[-1] else end
            return start, end
    return None


def _assignments(view: TextView) -> Iterator[Span]:
    text = view.text
    scans = [
        regex
        for separator, regex in (("=", _EQUALS_REVERSED), (":", _COLON_REVERSED))
        if separator in text
    ]
    if not scans:
        return
    reversed_lower = view.memo("reversed_lower", lambda v: v.lower[::-1])
    n = len(text)
    for regex in scans:
        for m in regex.finditer(reversed_lower):
            after = n - m.start()  # just past the separator, in `text`
            if m.group("query") if regex is _EQUALS_REVERSED else None:
                value = _QUERY_VALUE.match(text, after)
                if value and len(value.group()) >= 4 and not _placeholder(value.group()):
                    yield Span(
                        value.start(), value.end(), "URL_SECRET", value.group(), value.group()
                    )
                continue
            if m.group("cookie") if regex is _EQUALS_REVERSED else None:
                value = _COOKIE_VALUE.match(text, after)
                if value and _random_enough(value.group()):
                    yield Span(value.start(), value.end(), "SECRET", value.group(), value.group())
                continue
            if regex is _COLON_REVERSED and _in_field_list(text, n - m.end()):
                continue
            value = _VALUE.match(text, after)
            span = value and _value_span(text, value, (1, 2, 3))
            if not span:
                continue
            start, end = span
            if m.group("password") == "nip" and not any(c.isdigit() for c in text[start:end]):
                continue  # a PIN is digits; "Pin: release a=experimental" pins a package
            verdict = (
                _password(text[start:end])
                if m.group("password")
                else _random_enough(text[start:end])
            )
            if verdict is not None:
                yield Span(start, end, "SECRET", text[start:end], verdict[1])


def _sentences(view: TextView) -> Iterator[Span]:
    text, lower = view.text, view.lower
    for regex, confirm in ((_PASSWORD_PHRASE, _password), (_PASSWORD_NEXT, _random_enough)):
        for m in regex.finditer(lower):
            span = _value_span(text, m, (1, 2))
            if span is None:
                continue
            start, end = span
            verdict = confirm(text[start:end])
            if verdict is not None:
                yield Span(start, end, "SECRET", text[start:end], verdict[1])


_PEM_WORDS = frozenset(("-----begin", "private-lines:"))
_SENTENCE_WORDS = frozenset(
    head + word + tail
    for word in (*_PASSWORD_STEMS, "clave")
    for head in ("", '"', "'", "(", "¿", "¡")
    for tail in ("", ",", ":", ".")
)
"""A password sentence holds one of these as a word: "my password is", "con la contraseña X"."""
_SHORT_PASSWORD_SENTENCES = (
    re.compile(r"pass (?:is|es|was|era) "),
    re.compile(r"pin (?:is|es|was|era) "),
)
""""my pass is", "mi pin es": "pass" and "pin" alone are everywhere in code, so the sentence is
sought."""


def detect_secrets(view: TextView) -> list[Span]:
    """Every secret in `view`; each family behind a cheap test of the literal or word it cannot do
    without."""
    text, lower, words = view.text, view.lower, view.word_set
    found = list(_provider_tokens(view))
    if not _PEM_WORDS.isdisjoint(words) or "-----BEGIN" in text:
        found += _private_keys(text)
    if "authori" in lower or "cookie" in lower or "earer" in text or "asic" in text:
        found += _http_credentials(view)
    if "://" in text:
        found += _url_credentials(text)
    if "=" in text or ":" in text:
        found += _assignments(view)
    if not _SENTENCE_WORDS.isdisjoint(words) or (
        ("pass" in words or "pin" in words)
        and any(sentence.search(lower) for sentence in _SHORT_PASSWORD_SENTENCES)
    ):
        found += _sentences(view)
    return found
