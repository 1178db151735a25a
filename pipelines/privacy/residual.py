"""An independent last line of defence: broad shape rules run over text the anonymizer already passed.

It shares no code with the detectors on purpose: a value the anonymizer misses is one its detectors
did not recognise, so checking with the same detectors would find nothing. These rules are broader
and dumber: any long run of digits, anything @-like, key-like prefixes, PEM markers, `password=`-like
assignments whose value is not a pseudonym. Over anonymized text each hit means a value probably
survived; the row it sits in belongs in quarantine with the rule's name as its reason, and the rest
of the day publishes.

Broad means false alarms: a 10-digit constant (`2147483647`) or a MAC address trips a rule although the anonymizer
rightly kept it. They cost a quarantined row, never a leak. Reasons name the rule, never the value: publishable.

    >>> residual_pii_reasons("Llámame al 612 345 678 o escribe a juan at gmail dot com")
    ['long_digit_run', 'at_sign_like']
    >>> residual_pii_reasons("Llámame al [PHONE_1a2b3c4d] o escribe a [EMAIL_0f9e8d7c]")
    []
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_PSEUDONYM = re.compile(r"\[[A-Z][A-Z_]*_[0-9a-f]{8}\]")
_MASK = "\ue000"
"""What a pseudonym becomes before the rules run: neither a word character nor a blank."""
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([nrt\"\\/]))")
_ESCAPED = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
_INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63"
_UNIFIED = {**dict.fromkeys(map(ord, _INVISIBLE)), **dict.fromkeys(map(ord, _DASHES), "-")}
_INVISIBLE_OR_DASH = re.compile(f"[{_INVISIBLE}{_DASHES}]")
_NOT_MASK = rf"(?!{_MASK})"

_GROUP_END = r"(?![\dA-Za-wyz]|x(?!\d))"
_DIGIT_RUN = re.compile(
    rf"(?<![\w+.\-/\\])(?:\+|\(\+?)?\d+{_GROUP_END}\)?(?:(?:(?!\. )[ .\-/()]{{1,2}}|_|[ \t][\-/_][ \t])\(?\d+(?![\d:]){_GROUP_END}\)?)*"
)
"""Digits and the single separators people type between them (an underscore too: "612_345_678", or a
dash, slash or underscore with a blank on either side: "4111 - 1111 - 1111 - 1111"); a
group before ":" is a time, not part, and one after a sentence's end (". ") a new number; a backslash
before them makes an escape ("\\x41"), letters
right after them a token ("3406877694691ddd", a hash), except an extension ("0555x266")."""
_TOKENISH = r"(?=[^\s\"',;]{8})[^\s\"',;][a-z._~\-]*[0-9+/=A-Z#$%&*@^][^\s\"',;]*"
"""Eight characters or more with a digit, a symbol or an inner capital: "dXNlcjpw", not "authentication"."""
_WEBMAIL = r"(?:gmail|hotmail|outlook|yahoo|icloud|protonmail|proton|gmx|yandex|aol|live|msn|telefonica|movistar)"
_NOT_A_FORMAT_SLOT = (
    r"(?![«\"“'‘`(\[<]?(?:%[\d$]*[\-+ #0]*\d*(?:\.\d+)?[hlLqjzt]*[diouxXeEfFgGcsSp]|%\(\w+\)[sd]|\{[\w.:!]*\})"
    r"[»\"”'’`)\]>]?(?:[\s.,;:!?]|$)|%[a-z]+(?:-[a-z]+)+(?:\s|$))"
)
"""Not a printf or format slot, quoted or not ("contraseña «%s»", "password '{0}'"), nor a directive
("%no-ask-passphrase"): a template or a batch file names where a value goes or which option is set, it holds none."""


class _Checked:
    """A rule whose matches are each looked at once more: `search` as `re.Pattern.search` has it, the
    first match `keep` accepts."""

    __slots__ = ("pattern", "keep")

    def __init__(self, pattern: re.Pattern[str], keep: Callable[[re.Match[str]], bool]):
        self.pattern, self.keep = pattern, keep

    def search(self, text: str) -> re.Match[str] | None:
        for m in self.pattern.finditer(text):
            if self.keep(m):
                return m
        return None


_DIGIT_OR_CAPITAL = re.compile(r"[0-9A-Z]")


def _random_after_prefix(m: re.Match[str]) -> bool:
    """A token's random part holds a digit or a capital; "hf_raise_for_status" is a function's name."""
    return _DIGIT_OR_CAPITAL.search(m.group(), 3) is not None or m.group().startswith("hooks.")


def _reaches_someone(m: re.Match[str]) -> bool:
    """An IP address that may be someone's: not a documentation range (RFC 5737: 192.0.2.0/24,
    198.51.100.0/24, 203.0.113.0/24; RFC 3849: 2001:db8::/32), loopback, unspecified, multicast,
    reserved (240.0.0.0/4: netmasks, the broadcast address) or an IPv4 network ("10.20.0.0/16")."""
    address = m.group().lower()
    if "." in address and ":" not in address:
        first = int(address.split(".", 1)[0])
        if first in (0, 127) or first >= 224 or address.startswith(("192.0.2.", "198.51.100.", "203.0.113.")):
            return False
        prefix = _PREFIX.match(m.string, m.end())
        return prefix is None or not _network_address(address, int(prefix.group(1)))
    groups = [group for group in address.split(":") if group]
    if len(groups) < 2 or sum(map(len, groups)) < 4:
        return False  # "a[::2]", "1::2": slicing in code
    return not (address == "::1" or address.startswith(("2001:db8:", "2001:0db8:", "ff")))

_PREFIX = re.compile(r"/(\d{1,2})(?!\d)")


def _network_address(address: str, length: int) -> bool:
    """Whether `address`/`length` names a network ("10.20.0.0/16"): host bits zero, more than two hosts."""
    value = 0
    for octet in address.split("."):
        value = value * 256 + int(octet)
    return length <= 30 and value % (1 << (32 - length)) == 0


_CODE_VALUE = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+.*"  # creds.refresh_token, click.prompt("Password"
    r"|[A-Za-z_]\w*[(\[].*"  # Optional[Credential], get_token()
    r"|[A-Za-z]*_[\w]*\).*"  # unk_token) : an argument passed on
    r"|(?i:[a-z]*_?(?:token|key|secret|pass\w*|pwd|credentials?)(?:_?[a-z]+)*)"  # bod_token, userPassword: a variable
    r"|<[^>]*>.*|\$\{[A-Za-z_]\w*\}.*|\$[A-Z_][A-Z0-9_]*|\{\{.*|%\(\w+\)s.*"  # <token>, ${api_key}, $API_KEY, {{ x }}
    r"|(?i:your|my)[\-_][\w\-]+|[\w\-]+[\-_](?i:here)|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # your-api-key, YOUR_API_KEY
    r"|\*{3,}|x{3,}|X{3,}|•{3,}|\.{3,}"  # Password: ******** (a mask)
    r"|(?:[A-Z][a-z]+\d?){2,}"  # token: TextGenerationStreamOutputToken (a class)
    r"|(?:~|\.{1,2})?(?:/(?:[a-z0-9_.\-]+|[A-Z][a-z0-9_.\-]*)){2,}/?"  # a path, its segments words, not base64
    r"|(?:~|\.{1,2})?/?(?:[a-z0-9_.\-]+|[A-Z][a-z0-9_.\-]*)\.(?:pem|key|pfx|p12|json|txt|crt|cer|der|jks|env|ya?ml)"
)
"""A value that is code, not a secret: a dotted name, a call or subscript, a variable passed on, a template slot."""


def _random_value(value: str) -> bool:
    """A session id is random: a digit, capitals among lower case, or sixteen characters;
    "session=session," passes an argument on."""
    return bool(re.search(r"\d|[a-z][A-Z]|[A-Z][a-z]*[A-Z]", value)) or len(value.strip(",)")) >= 16


def _secret_valued(m: re.Match[str]) -> bool:
    value = m.group("value")
    return not (_CODE_VALUE.fullmatch(value) or _CODE_VALUE.fullmatch(value.rstrip(")]}>")))


_EVERYDAY_WORDS: frozenset[str] | None = None


def _everyday_words() -> frozenset[str]:
    """English everyday words (Faker's lorem list, loaded on first use): "my name is method" in a
    docstring names a method."""
    global _EVERYDAY_WORDS
    if _EVERYDAY_WORDS is None:
        from faker.providers.lorem.en_US import Provider

        _EVERYDAY_WORDS = frozenset(word.lower() for word in Provider.word_list)
    return _EVERYDAY_WORDS


def _name_like(m: re.Match[str]) -> bool:
    """A word after a name cue that may be a name: capitalised, or not an everyday word."""
    word = m.group("name")
    return word is None or word[0].isupper() or word.lower() not in _everyday_words()


_ES_STREET_TYPES = (
    "calle", "c/", "avda", "avenida", "av.", "plaza", "pza", "paseo", "carrer", "passeig", "rambla", "ronda", "camino",
    "carretera", "travesía", "glorieta", "gran vía", "callejón", "pasaje", "pasadizo", "urbanización", "bulevar",
    "alameda", "costanilla", "cañada", "cra.", "ctra", "crta", "carr.", "urb", "camí", "cami", "cno", "trav", "travesia",
    "trva", "gta", "glta", "rbla", "rda", "pso", "po", "p.o", "pg", "polígono", "poligono", "pol", "callejon", "cjón",
    "cjon", "blvd", "plaça", "placa", "avinguda", "avgda",
)  # fmt: skip
"""In any case; each may take a dot ("Avda.", "Pza."). The text is NFKC-folded first: "Pº" reads "Po"."""
_ES_CAPITALISED_TYPES = (
    "Cuesta", "Carrera", "Diagonal", "Transversal", "Calzada", "Privada", "Circuito", "Retorno", "Prolongación", "Vial",
    "Acceso", "Ampliación", "Andador", "Cerrada", "Circunvalación", "Continuación", "Corredor", "Eje vial", "Periférico",
    "Peatonal", "Viaducto", "Via", "Vía", "Boulevard", "Blv.", "Diag.", "Psje.", "C.", "Cl.", "Cr.", "Dg.", "Tr.", "Urb.",
)  # fmt: skip
"""Types of street that are everyday words too ("clave privada RSA 2048"): only capitalised."""
_US_STATES = (
    "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR"
    "|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|AS|GU|MP|PR|VI|FM|MH|PW|AA|AE|AP"
)
_STATE_AND_POSTCODE = (
    rf"(?:(?:{_US_STATES})(?:[ \t]+|[ \t]*\n[ \t]*)\d{{5}}(?:-\d{{4}})?|(?:AB|BC|MB|NB|NL|NS|NT|NU|ON|PE|QC|SK|YT)[ \t]+[A-Z]\d[A-Z][ \t]?\d[A-Z]\d"
    r"|(?:NSW|VIC|QLD|WA|SA|TAS|ACT|NT),?[ \t]+\d{4}|[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2})(?!\w)"
)
"""A US state and ZIP, a Canadian province and postal code, an Australian state and postcode, a UK postcode."""
_EN_STREET_WORDS = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|Terrace|Parkway|Pkwy|Square"
    "|Highway|Hwy|Circle|Alley|Plaza|Trail|Crescent|Close|Grove|Bend|Bluff|Bayou|Canyon|Causeway|Creek|Expressway"
    "|Freeway|Heights|Hollow|Knoll|Manor|Meadows?|Orchard|Pike|Ridge|Skyway|Stravenue|Turnpike|Viaduct"
)
"""English street suffixes that name little else; before a state and postcode any capitalised word ends a street."""
_ES_NAME = (
    r"[A-ZÁÉÍÓÚÑ][\w'.\-]*(?:[ \t]+[\w'.\-]+){0,6}?,?[ \t]+"
    r"(?:(?:(?i:n[º°o]\.?|núm\.?|#|km\.?|parcela|solar|lote|manzana|nave)[ \t]*)?\d{1,4}\b|(?i:s/n)(?!\w))"
)
"""A street's name and its number, on one line: "nº 12" (NFKC reads "no 12"), a road's "km 7", a plot, "s/n"."""
_ES_STREET_AT = re.compile(
    rf"(?i:(?:{'|'.join(map(re.escape, _ES_STREET_TYPES))})\.?\s+(?:(?:de|del|la|las|los|d'|l')\s+)*"
    # The name is a word other than an article: "ronda los 5470 euros" is a sum ("is about"), not a street.
    rf"(?!(?:de|del|la|las|los|el)\b){_ES_NAME})"
)
"""A name in any case after these: "vivo en calle los olivos 5"."""
_C_LANGUAGE_BEFORE = ("written in|implemented in|coded in|programmed in|code in|extensions in|modules in|functions in"
                      "|library in|rewritten in|in plain|in pure|in ANSI")
_THE_C_LANGUAGE = "(?!(?:" + "|".join(rf"(?<=(?<![\w\-]){w}[ \t])" for w in _C_LANGUAGE_BEFORE.split("|")) + r")C\.)"
"""Not "C." where it ends a sentence on the language ("written in C. Python 3 calls it"); "to C. Roca 4" is a street."""
_ES_CAPITALISED_AT = re.compile(
    rf"{_THE_C_LANGUAGE}(?:{'|'.join(map(re.escape, _ES_CAPITALISED_TYPES))})\s+(?:(?i:de|del|la|las|los|d'|l')\s+)*"
    rf"(?!(?i:de|del|la|las|los|el)\b){_ES_NAME}"
)
_ES_NUMBERED_AT = re.compile(
    # A numbered street: "Avenida 185 A N° 33", "Calle 187 Bis # 4-32".
    rf"(?i:{'|'.join(map(re.escape, _ES_STREET_TYPES))}|{'|'.join(map(re.escape, _ES_CAPITALISED_TYPES))})\.?\s+\d{{1,4}}"
    r"(?:\s?[A-Za-z]|\s+(?i:bis))?\s*(?:#|(?i:n[º°o]\.?|no\.))\s*\d{1,4}"
)

_EN_STREET = re.compile(
    rf"\d(?<![\w.,/\-]\d)\d{{0,4}}[A-Za-z]?[ \t]+(?:(?:[A-Z][\w'.\-]*|\d{{1,4}}(?:st|nd|rd|th))[ \t]+){{1,3}}(?:{_EN_STREET_WORDS})\b"
)
"""A number, capitalised words or ordinals ("77 W 45th St"), a street suffix."""
_POSTCODE_HINT = re.compile(r"\d(?:\d{3}|[A-Z]\d|[A-Z]{2}(?![A-Za-z]))")
_POSTCODE_LINE = re.compile(rf"(?<![\w\-]){_STATE_AND_POSTCODE}")
_STREET_AND_CITY_BEFORE = re.compile(
    rf"(?:(?<![\w.,/\-])\d{{1,5}}[A-Za-z]?(?:/\d{{1,5}})?[ \t]+|\b(?:Flat|Studio|Apartment|Unit)[ \t]+\w+[ \t]*\n[ \t]*)"
    rf"(?:[A-Z][\w'.\-]*[ \t]+){{0,3}}[A-Z][\w'.\-]*"
    r"(?:,?[ \t]*(?:Apt|Apartment|Suite|Ste|Unit|Flat|Studio|#)\.?[ \t]*[\w\-]+)?"
    rf"(?:[ \t]*,[ \t]*\n?|[ \t]*\n)[ \t]*(?:[A-Z][\w.'\-]*[ \t]+){{0,3}}[A-Z][\w.'\-]*(?:,?[ \t]+|[ \t]*\n[ \t]*)\Z"
)
_MILITARY = re.compile(r"[ADF]PO[ \t]+A[AEP][ \t]+\d{5}\b")
"""US military mail: "FPO AE 09051" names a ship or a unit."""


def _spanish_address(text: str) -> re.Match[str] | None:
    """A type of street, a name and a number, or a numbered street: tried only where a type stands (found with
    `str.find`, faster than a regex alternation of forty words), in any case or, for the everyday words, capitalised."""
    lowered = text.lower()
    for haystack, words, at in ((lowered, _ES_STREET_TYPES, _ES_STREET_AT), (text, _ES_CAPITALISED_TYPES, _ES_CAPITALISED_AT)):
        for word in words:
            i = haystack.find(word)
            while i != -1:
                if not (i and haystack[i - 1].isalnum()):
                    m = at.match(text, i) or _ES_NUMBERED_AT.match(text, i)
                    if m:
                        return m
                i = haystack.find(word, i + len(word))
    return None


def _english_address(text: str) -> re.Match[str] | None:
    """A number, capitalised words and a street suffix; or any street, its city and a state and postcode
    after them; or US military mail."""
    m = _EN_STREET.search(text)
    if m:
        return m
    end = -1
    for hint in _POSTCODE_HINT.finditer(text):
        if hint.start() < end:
            continue
        line = _POSTCODE_LINE.search(text, max(0, hint.start() - 12), min(len(text), hint.end() + 12))
        if line is None:
            continue
        end = line.end()
        if _STREET_AND_CITY_BEFORE.search(text, max(0, line.start() - 160), line.start()):
            return line
    return _MILITARY.search(text) if "PO A" in text else None


class _Search:
    """A rule searched by a function rather than by one regex: `search` as `re.Pattern.search` has it."""

    __slots__ = ("search",)

    def __init__(self, search: Callable[[str], re.Match[str] | None]):
        self.search = search


RULES: dict[str, re.Pattern[str] | _Checked | _Search] = {
    "at_sign_like": re.compile(
        r"[\w.+\-'][ \t]{0,2}(?:@|%40|&#0*64;|&commat;|[(\[{<][ \t]*(?:at|arroba)[ \t]*[)\]}>])[ \t]{0,2}[\w\-]+"
        r"\s*(?:\.|[(\[{<]\s*(?:dot|punto)\s*[)\]}>]|\s(?:dot|punto)\s)\s*[a-z]{2}"
        r"|\b[\w.+\-]+\s+(?:at|arroba)\s+[\w\-]+\s*(?:[(\[{<]\s*(?:dot|punto)\s*[)\]}>]|\s(?:dot|punto)\s)\s*[a-z]{2,}"
        rf"|\s(?:at|arroba)\s+{_WEBMAIL}\s*\.",
        re.IGNORECASE,
    ),
    "key_like_prefix": _Checked(re.compile(
        r"(?<![\w\-])(?:sk-|sk_live_|sk_test_|rk_live_|pk_live_|whsec_|gh[pousr]_|github_pat_|gl(?:pat|dt|rt)-|xox[abposer]-"
        r"|xapp-|AKIA|ASIA|AIza|ya29\.|GOCSPX-|hf_|api_org_|npm_|pypi-AgE|SG\.|glsa_|sntry[su]_|hv[sb]\.|shp(?:at|ss)_"
        r"|do[opr]_v1_|ATATT|AGE-SECRET-KEY|xai-|gsk_|pplx-|r8_|dapi|eyJ)[\w\-.+/=]{8,}"
        rf"|(?<![\w\-])(?:SK|AC)[0-9a-f]{{32}}(?![\w])|Q~[\w.\-~]{{20,}}|hooks\.slack\.com/services/{_NOT_MASK}\w"
    ), _random_after_prefix),
    "pem_marker": re.compile(r"-----(?:BEGIN|END) [A-Z0-9 ]*PRIVATE KEY|PuTTY-User-Key-File|Private-Lines:"),
    "credential_assignment": _Checked(
        re.compile(
            # Not right after "word:": "nombre:contraseña:GID" lists the fields of a file format.
            r"(?<!\w:)(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|accountkey"
            rf"|client[_\-]?secret|credentials?|contraseña|contrasena)[\"']?[ \t]*[:=](?!=)[ \t]*[\"']?{_NOT_MASK}"
            rf"(?P<value>(?=[^\s\"',;]*[0-9_+/=!#$%&*@^~]|[^\s\"',;]*(?-i:[a-z][A-Z])|[^\s\"',;]{{12}})[^\s\"',;{_MASK}]{{4,}})",
            re.IGNORECASE,
        ),
        _secret_valued,
    ),
    "password_sentence": re.compile(
        r"\b(?:password|contraseña|contrasena|passphrase|my pass|mi clave|my pin|mi pin)\s+(?:is|es|was|era)\s+"
        rf"{_NOT_MASK}(?!(?:not|no|wrong|incorrect|invalid|expired|incorrecta|incorrecto|inválida|caducada|muy|too|very|"
        r"the|la|el|a|an|una?|required|correct|correcta|weak|strong|débil|fuerte|demasiado|new|nueva|old|vieja|same|la"
        r"|misma|case|different|distinta|blank|empty|vacía|used|locked|unlocked|disabled|enabled|needed|set|stored|saved"
        r"|reset|changed|hidden|encrypted|hashed|sent|shown|checked|verified|accepted|rejected|generated|created|asked"
        r"|prompted|requested|optional|missing|entered|typed|given|taken|read|written|cleared|removed|deleted|updated"
        r"|usada|bloqueada|necesaria|guardada|cifrada|enviada|obligatoria|introducida|escrita)\b)\S{3,}",
        re.IGNORECASE,
    ),
    "password_next": re.compile(
        rf"\b(?:password|contraseña|contrasena|passphrase)\s+{_NOT_MASK}{_NOT_A_FORMAT_SLOT}"
        r"(?:(?=[^\s\"',;]{4})[^\s\"',;]*(?:[\d#$%&*@^!]|(?-i:[a-z][A-Z]))|[^\W\d_]{16,})",  # "-krbaguWzl" too
        re.IGNORECASE,
    ),
    "auth_header": re.compile(
        rf"\b[Bb]earer\s+{_NOT_MASK}{_TOKENISH}"
        # Basic credentials are base64 (RFC 7617), whole four-character blocks with a digit, a symbol or an
        # inner capital: "basic LangChain" and "basic argument" are prose.
        rf"|\b[Bb]asic\s+{_NOT_MASK}(?=[A-Za-z0-9+/=]*(?:[0-9+/=]|[a-z][A-Z]))(?:[A-Za-z0-9+/]{{4}}){{2,}}(?:[A-Za-z0-9+/]{{2}}==|[A-Za-z0-9+/]{{3}}=)?(?![\w+/=])"
        rf"|\b(?i:authori[sz]ation)[\"']?\s*[:=]\s*[\"']?(?:\w+\s+)?{_NOT_MASK}{_TOKENISH}"
    ),
    "cookie_like": _Checked(
        re.compile(
            rf"\b(?:set-)?cookie[\"']?\s*:\s*[\"']?{_NOT_MASK}[^\s\"';]+="
            rf"|(?:sessid|sessionid|session|sid|csrftoken|xsrf-token)=[\"']?{_NOT_MASK}(?P<value>[^;\s&\"']{{8,}})",
            re.IGNORECASE,
        ),
        lambda m: m.group("value") is None or _random_value(m.group("value")),
    ),
    "url_credentials": re.compile(rf"://{_NOT_MASK}[^\s/@:{_MASK}]+:{_NOT_MASK}[^\s/@{_MASK}]+@"),
    "url_secret_param": re.compile(
        r"[?&#;][\w\-.]*(?:token|secret|signature|password|passwd|apikey|api_key|session|sessionid|key|sig|code|auth)"
        rf"=[\"']?{_NOT_MASK}[^&\s#\"']{{6,}}",
        re.IGNORECASE,
    ),
    "ip_address_like": _Checked(
        re.compile(
            # Not a version with its revision ("(1.2.1.2-2)", "4.5.0.2~rc1"); "10.0.0.1-10.0.0.9" is a range.
            r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\w]|\.\d|-\d(?!\d{0,2}\.\d)|[~+]\w)"
            r"|(?<![\w:])(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}(?![\w:])"
            r"|(?<![\w:])(?:[0-9a-f]{0,4}:)*[0-9a-f]{0,4}::(?:[0-9a-f]{1,4}:)*[0-9a-f]{1,4}(?![\w:])",
            re.IGNORECASE,
        ),
        _reaches_someone,
    ),
    "national_id_like": re.compile(
        # Not after "." (the decimals of "3.96217232 m") or a backslash (the escape "\\U00000394").
        r"(?<![\w\-.\\])(?:\d{8}|\d{2}([ .\-_])\d{3}\1\d{3})[\s\-._]?[A-Za-z](?![\w\-])"  # DNI
        r"|(?<![\w\-.\\])[XYZxyz][\s\-.]?\d{7}[\s\-.]?[A-Za-z](?![\w\-])"  # NIE
        r"|(?<![\w\-.\\])[A-HJNP-SUVW][\s\-.]?\d{7}[\s\-.]?[0-9A-J](?![\w\-])"  # CIF
        r"|(?<![\w\-.\\])\d{3}([ \t]?[\-._/·][ \t]?)\d{2}\2\d{4}(?![\w\-]|[.,/]\d)"  # SSN, any punctuation between
        r"|(?<![\w\-/.\\])\d{2}/\d{7,8}/\d{2}(?![\w\-/])"  # NSS
    ),
    "address_like": _Search(lambda text: _spanish_address(text) or _english_address(text)),
    "name_after_cue": _Checked(
        re.compile(
            rf"\b(?:me llamo|mi nombre es|my name is|a nombre de|firmado por)\s+{_NOT_MASK}"
            r"(?!(?:el|la|un|una|the|a|not|usted|ustedes|él|ella|ellos|ellas|nosotros|vosotros|mí|ti|sí|you|me|him|her|us|them)\b)"
            r"(?P<name>[^\W\d_]{2,})"
            r"|\b(?:saludos|un saludo|atentamente|cordialmente|regards|best regards|kind regards)\s*,?[ \t]*\n[ \t]*"
            rf"{_NOT_MASK}(?!(?:el|la|the|equipo|team|support|soporte)\b)[A-ZÁÉÍÓÚÑ][a-záéíóúñ]+",
            re.IGNORECASE,
        ),
        _name_like,
    ),
}
"""Each rule by the name it reports; ordered so the reasons read from most to least specific."""


def _normalized(text: str) -> str:
    """Look-alikes folded (NFKC: full-width "＠" to "@"), invisible characters dropped, dashes unified,
    `\\uXXXX` escapes decoded, pseudonyms masked."""
    if "\\" in text:
        text = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else _ESCAPED[m.group(2)], text)
    if not text.isascii():  # ASCII is its own NFKC form and holds no invisible character or odd dash
        text = unicodedata.normalize("NFKC", text)
        if _INVISIBLE_OR_DASH.search(text):  # translate() looks up every character: 40x the search
            text = text.translate(_UNIFIED)
    return _PSEUDONYM.sub(_MASK, text)


_DATE = re.compile(
    r"(?<![\d\-/._])(?:(?:19|20)\d\d([\-/._])(?:0?[1-9]|1[0-2])\1(?:0?[1-9]|[12]\d|3[01])"
    r"|(?:0?[1-9]|[12]\d|3[01])([\-/._])(?:0?[1-9]|1[0-2])\2(?:19|20)\d\d)(?!\d)"
)
"""A calendar date ("2026-11-29", "29/11/2026"): it ends a run of digits, as in "ticket 66212 (29/11/2026)";
never one inside a run ("+54-9-11-1979-8744" is a phone)."""
_DATE_MASK = "\ue001"
_CLOCK = re.compile(
    r"(?<![\d:.])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?"
    r"(?:[ \t]+(?:19|20)\d\d(?![\d:]))?(?:[ \t]*[+\-](?:0\d|1[0-4])(?:00|15|30|45)(?!\d))?(?![\d:])"
)
"""A time of day with the year and UTC offset that may follow it, as git, mail and syslog stamp
commits and messages ("Sat Apr 13 17:52:12 2013 -0700"): the seconds, year and offset are no number
of anyone's. An offset is at most 14 hours in quarters, so no phone passes for one."""
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>{}]+")
"""A DOI ("10.1145/210089.210111") names a paper."""
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
"""A UUID, whose hex groups may all be digits ("96982221-3754-4521-...")."""
_TRUNK_AFTER_CODE = re.compile(r"(\+\d{1,3})[ \t]?\(0\)[ \t]?")
_ISBN = re.compile(r"\bISBN(?:-1[03])?:?[ \t]*(?:[\d][ \-]?){9,12}[\dX]\b", re.IGNORECASE)
"""A book's number, as documentation cites it ("ISBN 0-13-951294-2")."""
_YEAR_IN_PARENTHESES = re.compile(r"(?<=[ \t])\((?:1[6-9]|20)\d\d\)(?![\d\-])")
"""A citation's year after its pages ("7, Part II, 179-188 (1936)"); no area code or prefix is a year in
parentheses after a blank."""


def _long_digit_run(text: str) -> bool:
    """Nine or more digits in one run, as phones, cards, IBANs and ids are written.

    Not one: a dotted version ("124.0.6367.91") or decimal ("3.141592653"), a row of a table
    ("8 10 1000 9 9 11"): a one-digit group breaks a run, unless it follows a country code ("+33 6 ..."),
    a date ("#66212 (29/11/2026)") or a UUID, two blanks in a row, a ")" that closes nothing ("(see 16) 3232235521"),
    a "+0" no country code starts with, and digits in a row of a length no identifier has. Nor digits no
    one has: a placeholder ("123-456-789", "987654321", "600 000 000"), a binary number ("11100010
    10001001"), a book's ISBN or a paper's DOI, a number its word names ("project 32555940559", "pedido
    612345678"), a path's segments ("20126/41483022/"), a calendar's or table's row ("11 12 13 14 15 16
    17"), two numbers side by side ("1024-65535", "294880 8192").
    After a phone cue, digits split by any punctuation count too ("llámame al 612,345,678").
    """
    if "/" in text or "-" in text or "." in text or "_" in text:
        text = _DATE.sub(_DATE_MASK, text)
        if "-" in text:
            text = _UUID.sub(_DATE_MASK, text)
        if "10." in text:
            text = _DOI.sub(_DATE_MASK, text)
    if ":" in text:
        text = _CLOCK.sub(_DATE_MASK, text)
    if "(0)" in text:
        text = _TRUNK_AFTER_CODE.sub(r"\1 ", text)  # "+49 (0)15590 685921": the trunk is not dialled
    if "isbn" in text or "ISBN" in text:
        text = _ISBN.sub(_DATE_MASK, text)
    if "(" in text:
        text = _YEAR_IN_PARENTHESES.sub(_DATE_MASK, text)
    ssn_cued = _SSN_CUE.search(text) is not None
    for m in _DIGIT_RUN.finditer(text):
        if text.startswith("/", m.end()):
            continue  # "20126/41483022/SI-Brochure-9.pdf": the segments of a path, not a number
        for run in _balanced_parts(m.group()):
            if (
                _is_long_digit_run(run, ssn_cued)
                and not _REFERENCE_BEFORE.search(text, max(0, m.start() - 32), m.start())
                and not _MEASURE_BEFORE.search(text, max(0, m.start() - 32), m.start())
                and not _among_hex_groups(text, m.start(), m.end())
                and not _in_a_literal_collection(text, m.start(), m.end())
            ):
                return True
    if _ODD_BETWEEN_DIGITS.search(text) is None:
        return False
    numbers = _CUED_PUNCTUATED.findall(text) + [n for n in _SELF_EVIDENT_PUNCTUATED.findall(text) if not _THOUSANDS.search(n)]
    return any(
        sum(c.isdigit() for c in number) >= 9 and not _nobody_s("".join(c for c in number if c.isdigit()))
        for number in numbers
    )


_PHONE_CUE_WORDS = ("tel", "tlf", "tfno", "móvil", "movil", "celular", "phone", "mobile", "cell", "call", "llám", "llam",
                    "whatsapp", "fax", "sms")  # fmt: skip
_CUED_PUNCTUATED = re.compile(
    rf"\b(?i:{'|'.join(_PHONE_CUE_WORDS)})\w*[^\d\n]{{0,24}}(\+?\(?\d{{1,5}}\)?(?:[ \t]?[^\w\s][ \t]?\(?\d{{1,5}}\)?){{1,7}})"
)
"""After a phone cue, digit groups split by any punctuation ("llámame al 612,345,678")."""
_SELF_EVIDENT_PUNCTUATED = re.compile(
    r"(?<![\w+])(?:(?:\+|\(\+|00)\d{1,7}\)?(?:(?:[ \t]?[^\w\s:][ \t]?|[ \t])\(?\d{1,5}\)?){2,7}"
    r"|\d{1,5}(?:·\d{1,5}){2,6}(?![\d·]))"
)
"""Without a cue, digit groups split by any punctuation after a country code ("+34|612|345|678"), or by
middle dots ("612·345·678"); not by colons, which split a MAC address ("00:50:56:12:34:56") or a time."""
_THOUSANDS = re.compile(r"\d[,'][ \t]?\d")
"""A count's thousands separators ("+12,345,678 lines"), not a phone's."""
_ODD_BETWEEN_DIGITS = re.compile(r"\d[ \t]?[^\w\s.\-/()][ \t]?\d")
"""Punctuation the plain runs do not read between two digits: without one, those runs found it all."""


_HEX_GROUP_BEFORE = re.compile(r"(?<![\w])(?=[0-9A-Fa-f]{0,3}[A-Fa-f])[0-9A-Fa-f]{4} \Z")
_HEX_GROUP_AFTER = re.compile(r" (?=[0-9A-Fa-f]{0,3}[A-Fa-f])[0-9A-Fa-f]{4}(?!\w)")


def _among_hex_groups(text: str, start: int, end: int) -> bool:
    """Digits between groups of four hex characters ("68C8 0230 4919 0278 6BEE"): part of a key's
    fingerprint, not a number."""
    return bool(_HEX_GROUP_BEFORE.search(text, max(0, start - 5), start) or _HEX_GROUP_AFTER.match(text, end))


_COLLECTION_BEFORE = re.compile(r"[(\[{,][ \t]*\Z")
_COLLECTION_AFTER = re.compile(r"[ \t]*[,)\]}]")
_COMMA_BEFORE = re.compile(r",[ \t]*\Z")
_COMMA_AFTER = re.compile(r"[ \t]*,")


def _in_a_literal_collection(text: str, start: int, end: int) -> bool:
    """A number between brackets and commas with a comma on one side: a member of a tuple or list in
    code ("(26214400, 32768000000)"); "(612345678)" or "al 612345678, gracias" is not."""
    before = _COLLECTION_BEFORE.search(text, max(0, start - 3), start)
    after = _COLLECTION_AFTER.match(text, end)
    return bool(before and after) and bool(
        _COMMA_BEFORE.search(text, max(0, start - 3), start) or _COMMA_AFTER.match(text, end)
    )


_SSN_CUE = re.compile(r"(?i:ssn|social security|seguridad social)")
_REFERENCE_BEFORE = re.compile(
    r"\b(?i:project|proyecto|order|pedido|ticket|build|job|issue|invoice|factura|instance|cluster|commit|pipeline"
    r"|workflow|run)(?:[ \t]+(?i:number|id|no\.?|n[º°]|número|numero))?[ \t]*[:#=]?[ \t]*[\"'`]?\Z"
)
"""A word that names what the number is: "project 32555940559", "pedido #612345678" are references."""
_MEASURE_BEFORE = re.compile(
    r"(?<![\w.])[\"']?(?:[A-Za-z]+_|[a-z]+(?=[A-Z]))*(?i:total|used|free|available|avail|size|bytes|count|length"
    r"|sent|recv|rss|vms|shared|buffers|cached|capacity|limit|offset|blocks|memory)(?:_[A-Za-z]+)*[\"']?[ \t]*"
    r"(?:=|(?<=[\"']):)[ \t]*[\"']?\Z"
)
"""A keyword argument or a JSON key that names a quantity, as a repr or a report prints sizes and counters ("svmem(
total=10367352832", "read_bytes=18626220032", "maxRss": "36624662528"): bytes and counts, not anyone's number."""


def _balanced_parts(run: str) -> list[str]:
    """`run` split at two blanks in a row and at a ")" with no "(" before it in its part."""
    parts = []
    for part in run.split("  "):
        while ")" in part and ("(" not in part or part.index(")") < part.index("(")):
            head, _, part = part.partition(")")
            parts.append(head)
        parts.append(part)
    return [part.strip(" .-/") for part in parts]


_ASCENDING, _DESCENDING = "0123456789" * 2, "9876543210" * 2
_TRUNK = re.compile(r"\(0\)")
_DOTTED_QUAD = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:/\d{1,3})?")


def _isbn13(digits: str) -> bool:
    """A book's number as barcodes print it: 978 or 979 (the "Bookland" prefixes, no country's calling
    code) and the EAN-13 check digit ("9789024538270")."""
    if len(digits) != 13 or not digits.startswith(("978", "979")):
        return False
    return sum(int(c) * (3 if i % 2 else 1) for i, c in enumerate(digits)) % 10 == 0


def _nobody_s(digits: str) -> bool:
    """Digits no one is reached or paid at: up or down the keypad, one digit repeated, a few digits
    then zeros (a round number) or zeros then a few digits (a padded one), only zeros and ones (binary),
    a power of two, a book's ISBN-13."""
    return (
        digits in _ASCENDING
        or digits in _DESCENDING
        or len(digits.strip("0")) <= 3
        or digits.endswith("00000")  # "32768000000": a round figure; no phone ends in five zeros
        or _power_of_two(int(digits))  # "1125899906842624" is 2**50, "9007199254740991" 2**53 - 1
        or not digits.strip("01")
        or len(set(digits)) == 1
        or _isbn13(digits)
    )


def _power_of_two(n: int) -> bool:
    return n > 0 and (n & (n - 1) == 0 or n & (n + 1) == 0)


def _is_long_digit_run(run: str, ssn_cued: bool = False) -> bool:
    if sum(c.isdigit() for c in run) < 9 or run.startswith(("+0", "(+0")):
        return False
    if _nobody_s("".join(c for c in run if c.isdigit())) or _DOTTED_QUAD.fullmatch(run):
        return False  # a dotted quad is an IPv4 address: "ip_address_like" judges it
    if run.strip("()").isdigit():
        return _identifier_length(run.strip("()"), ssn_cued)
    if run.startswith(("+", "(+")) and "(0)" in run:
        run = _TRUNK.sub(" ", run)  # "+33 (0) 6 12 05 14 82": the trunk prefix, not a group of the number
    groups = re.findall(r"[+(]*\d+", run)
    if sum(len(group) >= 5 for group in groups) >= 3:
        return False  # "294880 81920 11592 388392": a row of sizes; no phone or card has three such groups
    if not run.lstrip("(").startswith("+") and set(re.sub(r"[\d()+]", "", run)) == {"."}:
        return _dotted_identifier([len(group.lstrip("(")) for group in groups], "".join(c for c in run if c.isdigit()))
    if _table_row(groups) or _side_by_side(run, groups):
        return False
    digits = 0
    for i, group in enumerate(groups):
        country_code_before = i and groups[i - 1].startswith(("+", "(+", "00"))
        if group.isdigit() and len(group) == 1 and i and not country_code_before:
            digits = 0  # a table of small numbers, not one number
            continue
        if group.isdigit() and len(group) >= 9 and not country_code_before:  # one number beside others ("2507191691 1")
            if _identifier_length(group, ssn_cued) and not _nobody_s(group):
                return True
            digits = 0
            continue
        digits += sum(c.isdigit() for c in group)
        if digits >= 9:
            return True
    return False


def _side_by_side(run: str, groups: list[str]) -> bool:
    """Two numbers, not one: a range ("1024-65535", "689-694") or a long one beside another ("294880
    8192"). A phone in two groups opens with its trunk 0 or a short prefix: "01632 960958", "0612-345678"."""
    if len(groups) != 2 or not all(group.isdigit() for group in groups) or groups[0].startswith("0"):
        return False
    first, second = groups
    return ("-" in run and int(first) < int(second)) or len(first) >= 5


def _table_row(groups: list[str]) -> bool:
    """Small numbers in a row, as calendars and tables print them ("11 12 13 14 15 16 17", "26 -60 -34 11
    -100"): six groups or more of at most three digits and no country code, or four or more counting up by one."""
    if groups[0].startswith(("+", "(+")) or not all(group.isdigit() for group in groups):
        return False
    values = [int(group) for group in groups]
    counting = len(values) >= 4 and all(b - a == 1 for a, b in zip(values, values[1:]))
    return counting or (len(groups) >= 6 and max(map(len, groups)) <= 3)


def _dotted_identifier(groups: list[int], digits: str) -> bool:
    """Digit groups split by dots only, as versions ("124.0.6367.91", "100.100.112"), decimals and
    dotted quads are written: an identifier only in the shapes phones and cards take with dots, a
    Spanish number ("612.345.678", "91.123.45.67"), one with a trunk 0 ("06.12.34.56.78",
    "020.7946.0958") or dialled abroad ("0034.612.345.678"), a North American one ("415.555.2671"), a card ("4111.1111.1111.1111")."""
    n = len(digits)
    if digits.startswith("00") and groups[0] >= 3 and 11 <= n <= 15:
        return True  # "0034.616604876": dialled abroad, whatever the grouping ("0.0197076236097" is a decimal)
    if len(groups) < 3:
        return False  # a decimal number
    return (
        (n == 9 and digits[0] in "6789" and min(groups) >= 2)
        or (10 <= n <= 12 and digits[0] == "0" and min(groups) >= 2)
        or (n == 10 and groups == [3, 3, 4])
        or (13 <= n <= 19 and len(groups) >= 3 and all(g == 4 for g in groups[:-1]))
    )


def _identifier_length(digits: str, ssn_cued: bool = False) -> bool:
    """Digits in a row as identifiers are written, told from the constants, ids and timestamps of code:
    9 starting as a Spanish phone does (6-9; "299792458" is the speed of light), or any 9 in a text that
    speaks of social security (an SSN written without its dashes); 10 or 13 only when no
    epoch timestamp or 32-bit constant starts that way ("1732875600", "1732875600123", "2147483647");
    11-12 (a number with its country code, an NSS); 16 (a card); 14-15 and 17-19 when they pass the
    card checksum (Luhn) or dial out of a country ("00...")."""
    n = len(digits)
    if n == 9 and ssn_cued:
        return True
    if 14 <= n <= 19:
        return digits.startswith("00") or _luhn(digits) or n == 16
    return (n == 9 and digits[0] in "6789") or 11 <= n <= 12 or (n == 10 and digits[0] in "06789") or (n == 13 and digits[0] != "1")


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


_IBAN_LENGTHS = dict(
    (entry[:2], int(entry[2:]))
    for entry in """AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 DO28
    EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HN28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20
    LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25
    QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20
    YE30""".split()  # noqa: SIM905 - reads as a table
)
"""The countries of the SWIFT IBAN registry and the length of their IBANs."""


def _iban_like(text: str) -> bool:
    """A country of the IBAN registry, two digits, then as many letters and digits as that country's
    IBAN has, in any grouping, at least eight of them digits: the IBAN ends there (at a separator or
    the end of the text) or passes its mod-97 check. A GPG fingerprint ("DA39 A3EE 5E6B ...") has the
    shape, seldom a country, length and check, and never text around it like an IBAN's; in lower case
    the groups must stand apart, or a hex id ("de56a8f0...") would pass for one."""
    for m in _IBAN_START.finditer(text):
        length = _IBAN_LENGTHS.get(m.group(1).upper())
        if length is None or _UUID.match(text, m.start()):
            continue
        chars, i, separated = [], m.start(), False
        while i < len(text) and len(chars) < length:
            c = text[i]
            if c.isascii() and c.isalnum():
                chars.append(c)
            elif c in " -_" and chars and i + 1 < len(text) and text[i + 1].isascii() and text[i + 1].isalnum():
                separated = True
            else:
                break
            i += 1
        iban = "".join(chars).upper()
        if len(iban) < length or sum(c.isdigit() for c in iban) < 8 or (m.group(1).islower() and not separated):
            continue
        if (i == len(text) or not text[i].isalnum() or _mod97(iban)) and not (
            _GROUP_OF_FOUR_BEFORE.search(text, max(0, m.start() - 5), m.start()) or _GROUP_OF_FOUR_AFTER.match(text, i)
        ):
            return True
    return False


_GROUP_OF_FOUR_BEFORE = re.compile(r"(?<!\w)[0-9A-Fa-f]{4} \Z")
_GROUP_OF_FOUR_AFTER = re.compile(r" [0-9A-Fa-f]{4}(?!\w)")
"""An IBAN is a run of groups of its own; one with a group of four hex right before or after it is part
of a fingerprint."""


_IBAN_START = re.compile(r"(?<![\w\-])([A-Z]{2}|[a-z]{2})\d{2}(?=[ \-_]?[A-Za-z0-9])")
"""Not inside a dashed token: "fd4618de-ad91-0f51-..." is a UUID."""


def _mod97(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


# -- screens: what a text must hold for a rule to have a chance -------------------------------------
# Most text trips no rule, and a rule's regex tries every position of it: scanning 5-10 KB traces was most of the
# sampling step. Each screen below is a necessary condition of its rule, read off the pattern (a character every match
# holds, a digit count, a keyword every alternative starts with), and cheap: substring tests run in C at memory speed.
# A screen may pass text its rule then clears; it must never fail text its rule would flag, so a rule's pattern and
# its screen change together. tests/test_residual.py checks both agree on drawn and hand-made text.

_DIGIT = re.compile(r"\d")
_NINE_DIGITS_APART = re.compile(r"\d(?:[ .\-/()_]{0,4}\d){8}")
"""Nine digits, at most the four characters a run allows between two groups (")", two separators,
"(") apart: every long run holds this, and the date masking and run splitting cost 5x this search."""
_CASE_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
"""The characters other than an ASCII letter's own two cases that re.IGNORECASE matches it with ("İ",
"ı" for "i", "ſ" for "s"): folded before lower(), a keyword the rules match is in the lowered text."""
_CASE_FOLDED = re.compile("[" + "".join(map(chr, _CASE_FOLDS)) + "]")
_AT_WORD = re.compile(r"[\s(\[{<][ \t]*(?:at|arroba)[\s)\]}>]", re.IGNORECASE)
_BRACKETED_AT = re.compile(r"[(\[{<][ \t]*(?:at|arroba)[ \t]*[)\]}>]", re.IGNORECASE)
_AT_WEBMAIL = re.compile(rf"\s(?:at|arroba)\s+{_WEBMAIL}", re.IGNORECASE)
_IPV4_DIGITS = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")
_IPV6_COLON = re.compile(r"[0-9a-f]:[0-9a-f]", re.IGNORECASE)
_IPV6_ELIDED = re.compile(r"::[0-9a-f]", re.IGNORECASE)
"""Not "::=" as grammars write it."""
_WEBMAILS = tuple(_WEBMAIL.removeprefix("(?:").removesuffix(")").split("|"))
_ASSIGNED_KEYWORD = re.compile(r"(?:pass|word|wd|phrase|code|secret|token|key|credentials?|contrase[ñn]a)[\"']?\s*[:=]")
"""How every keyword of the credential rule ends, then its ":" or "=", over lowered text."""
_ID_DIGITS = re.compile(r"\d(?:\d{6}|[ .\-_]\d{3}[ .\-_]\d|\d\d[ \t]?[\-._/·][ \t]?\d\d[ \t]?[\-._/·])")
"""Seven digits in a row, or the digits of "12.345.678", "12 345 678" or "536-90-4399" (any punctuation
between an SSN's groups): what each national id holds."""
_DIGIT_BLANK = re.compile(r"\d[A-Za-z]?\s", re.IGNORECASE)
_KEY_PREFIXES = (
    "sk-", "sk_live_", "sk_test_", "rk_live_", "pk_live_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "glpat-", "gldt-", "glrt-", "xox", "xapp-", "AKIA", "ASIA", "AIza", "ya29.", "GOCSPX-", "hf_",
    "api_org_", "npm_", "pypi-", "SG.", "glsa_", "sntry", "hvs.", "hvb.", "shpat_", "shpss_", "_v1_", "ATATT",
    "AGE-SECRET-KEY", "xai-", "gsk_", "pplx-", "r8_", "dapi", "eyJ", "SK", "AC", "Q~", "hooks.slack.com/services/",
)  # fmt: skip
"""A literal every alternative of the key rule holds (case-sensitive, as the rule is)."""


class _Text:
    """A normalized text and the cheap facts about it the screens read."""

    __slots__ = ("text", "digits", "_lowered")

    def __init__(self, text: str):
        self.text = text
        self.digits = len(_DIGIT.findall(text))
        self._lowered: str | None = None

    @property
    def lowered(self) -> str:
        if self._lowered is None:
            text = self.text
            if not text.isascii() and _CASE_FOLDED.search(text):
                text = text.translate(_CASE_FOLDS)  # a lookup per character: only where one is there
            self._lowered = text.lower()
        return self._lowered

    def has(self, *keywords: str) -> bool:
        """Whether `text` holds one of `keywords` (lower case) as re.IGNORECASE matches them."""
        lowered = self.lowered
        for keyword in keywords:  # a loop, not any(): the screens run on every field of every row
            if keyword in lowered:
                return True
        return False

    def holds(self, literals: tuple[str, ...]) -> bool:
        """Whether `text` holds one of `literals` as they are written."""
        for literal in literals:
            if literal in self.text:
                return True
        return False

    def matches(self, pattern: re.Pattern[str]) -> bool:
        """Whether the lowered text holds `pattern` (lower case, no flags): re.IGNORECASE over the text."""
        return pattern.search(self.lowered) is not None


_ES_TYPE_SCREEN = _ES_STREET_TYPES
_ES_CAPITALISED_SCREEN = _ES_CAPITALISED_TYPES
SCREENS: dict[str, Callable[[_Text], bool]] = {
    # "@", "%40", "&#64;", "&commat;"; else " at " with "(at)", a spelled-out dot or a webmail after it.
    "at_sign_like": lambda t: "@" in t.text or "%40" in t.text or "&" in t.text or bool(
        (t.has("dot", "punto") or _BRACKETED_AT.search(t.text) or (t.has(*_WEBMAILS) and _AT_WEBMAIL.search(t.text)))
        and _AT_WORD.search(t.text)
    ),
    "key_like_prefix": lambda t: t.holds(_KEY_PREFIXES),
    "pem_marker": lambda t: "-----" in t.text or "PuTTY" in t.text or "Private-Lines:" in t.text,
    "credential_assignment": lambda t: ("=" in t.text or ":" in t.text) and t.matches(_ASSIGNED_KEYWORD),
    "password_sentence": lambda t: t.has("pass", "contrase", "mi clave", "my pin", "mi pin"),
    "password_next": lambda t: t.has("pass", "contrase"),
    "auth_header": lambda t: "earer" in t.text or "asic" in t.text or t.has("authori"),
    "cookie_like": lambda t: "=" in t.text
    and t.has("cookie", "sid=", "sessionid=", "session=", "csrftoken=", "xsrf-token="),
    "url_credentials": lambda t: "://" in t.text,
    "url_secret_param": lambda t: "=" in t.text,
    "ip_address_like": lambda t: (t.digits >= 4 and bool(_IPV4_DIGITS.search(t.text))) or ("::" in t.text and bool(_IPV6_ELIDED.search(t.text)))
    or (t.text.count(":") >= 7 and bool(_IPV6_COLON.search(t.text))),
    "national_id_like": lambda t: t.digits >= 7 and bool(_ID_DIGITS.search(t.text)),
    "address_like": lambda t: (t.digits >= 1 or "s/n" in t.lowered) and (  # a number, or "sin número"
        bool(_DIGIT_BLANK.search(t.text))
        or t.has(*_ES_TYPE_SCREEN)
        or t.holds(_ES_CAPITALISED_SCREEN)
        or "PO A" in t.text
    ),
    "name_after_cue": lambda t: t.has("me llamo", "mi nombre es", "my name is", "a nombre de", "firmado por")
    or ("\n" in t.text and t.has("saludo", "atentamente", "cordialmente", "regards")),
}
"""Per rule, a necessary condition of a match (see above)."""


def residual_pii_reasons(text: str) -> list[str]:
    """The names of the rules `text` trips, in rule order; empty when it looks clean.

    Meant for text the anonymizer already passed: `[TYPE_xxxxxxxx]` pseudonyms never trip a rule.
    """
    if not text:
        return []
    screened = _Text(_normalized(text))
    text = screened.text
    # Nine digits for a long run, eight for an IBAN: the least each rule counts.
    long_run = (
        screened.digits >= 9
        and (
            _NINE_DIGITS_APART.search(text) is not None
            or (
                (screened.has(*_PHONE_CUE_WORDS) or "+" in text or "00" in text or "·" in text)
                and _ODD_BETWEEN_DIGITS.search(text) is not None
            )
        )
        and _long_digit_run(text)
    )
    reasons = ["long_digit_run"] if long_run else []
    reasons += [name for name, rule in RULES.items() if SCREENS[name](screened) and rule.search(text)]
    return reasons + (["iban_like"] if screened.digits >= 8 and _iban_like(text) else [])
