"""The rules by the name each reports, and the second looks that clear a match."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from pipelines.privacy.residual.addresses import address_like
from pipelines.privacy.residual.normalize import MASK, NOT_MASK

_TOKENISH = r"(?=[^\s\"',;]{8})[^\s\"',;][a-z._~\-]*[0-9+/=A-Z#$%&*@^][^\s\"',;]*"
"""Eight characters or more with a digit, a symbol or an inner capital: "dXNlcjpw", not
"authentication"."""
WEBMAIL = r"(?:gmail|hotmail|outlook|yahoo|icloud|protonmail|proton|gmx|yandex|aol|live|msn|telefonica|movistar)"
_NOT_A_FORMAT_SLOT = (
    r"(?![«\"“'‘`(\[<]?(?:%[\d$]*[\-+ #0]*\d*(?:\.\d+)?[hlLqjzt]*[diouxXeEfFgGcsSp]|%\(\w+\)[sd]|\{[\w.:!]*\})"
    r"[»\"”'’`)\]>]?(?:[\s.,;:!?]|$)|%[a-z]+(?:-[a-z]+)+(?:\s|$))"
)
"""Not a printf or format slot, quoted or not ("contraseña «%s»", "password '{0}'"), nor a directive
("%no-ask-passphrase"): a template or a batch file names where a value goes or which option is set,
it holds none."""


class _Checked:
    """A rule whose matches are each looked at once more: `search` as `re.Pattern.search` has it,
    the first match `keep` accepts."""

    __slots__ = ("keep", "pattern")

    def __init__(self, pattern: re.Pattern[str], keep: Callable[[re.Match[str]], bool]):
        self.pattern, self.keep = pattern, keep

    def search(self, text: str) -> re.Match[str] | None:
        for m in self.pattern.finditer(text):
            if self.keep(m):
                return m
        return None


_DIGIT_OR_CAPITAL = re.compile(r"[0-9A-Z]")


def _random_after_prefix(m: re.Match[str]) -> bool:
    """A token's random part holds a digit or a capital; "hf_raise_for_status" is a function's
    name."""
    return _DIGIT_OR_CAPITAL.search(m.group(), 3) is not None or m.group().startswith("hooks.")


def _reaches_someone(m: re.Match[str]) -> bool:
    """An IP address that may be someone's: not a documentation range (RFC 5737: 192.0.2.0/24,
    198.51.100.0/24, 203.0.113.0/24; RFC 3849: 2001:db8::/32), loopback, unspecified, multicast,
    reserved (240.0.0.0/4: netmasks, the broadcast address) or an IPv4 network ("10.20.0.0/16"),
    however written."""
    address = m.group().lower()
    if "." in address and ":" not in address:
        first = int(address.split(".", 1)[0])
        if (
            first in (0, 127)
            or first >= 224
            or address.startswith(("192.0.2.", "198.51.100.", "203.0.113."))
        ):
            return False
        prefix = _PREFIX.match(m.string, m.end())
        return prefix is None or not _network_address(address, int(prefix.group(1)))
    groups = [group for group in address.split(":") if group]
    if len(groups) < 2 or sum(map(len, groups)) < 4:
        return False  # "a[::2]", "1::2": slicing in code
    # read as the stdlib reads it, so every spelling of one address is judged alike:
    # "0:0:0:0:0:0:0:1" is "::1"
    try:
        ip = ipaddress.IPv6Address(address)
    except (
        ValueError
    ):  # the shape allows what no address is ("1:::2"): judged by its first groups, as it reads
        return not address.startswith(("2001:db8:", "2001:0db8:", "ff"))
    return not (ip.is_loopback or ip.is_unspecified or ip.is_multicast or ip in _IPV6_DOCUMENTATION)


_IPV6_DOCUMENTATION = ipaddress.IPv6Network("2001:db8::/32")


_PREFIX = re.compile(r"/(\d{1,2})(?!\d)")


def _network_address(address: str, length: int) -> bool:
    """Whether `address`/`length` names a network ("10.20.0.0/16"): host bits zero, more than two
    hosts."""
    value = 0
    for octet in address.split("."):
        value = value * 256 + int(octet)
    return length <= 30 and value % (1 << (32 - length)) == 0


_CODE_VALUE = re.compile(
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+.*"  # creds.refresh_token, click.prompt("Password"
    r"|[A-Za-z_]\w*[(\[].*"  # Optional[Credential], get_token()
    r"|[A-Za-z]*_[\w]*\).*"  # unk_token) : an argument passed on
    # client_request_token
    r"|(?i:(?:[a-z]+_)*[a-z]*_?(?:token|key|secret|pass\w*|pwd|credentials?)(?:_?[a-z]+)*)"
    # <token>, ${api_key}, $API_KEY, {{ x }}
    r"|<[^>]*>.*|\$\{[A-Za-z_]\w*\}.*|\$[A-Z_][A-Z0-9_]*|\{\{.*|%\(\w+\)s.*"
    # your-api-key, YOUR_API_KEY
    r"|(?i:your|my)[\-_][\w\-]+|[\w\-]+[\-_](?i:here)|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
    r"|\*{3,}|x{3,}|X{3,}|•{3,}|\.{3,}"  # Password: ******** (a mask)
    r"|(?:[A-Z][a-z]+\d?){2,}"  # token: TextGenerationStreamOutputToken (a class)
    # a path, its segments words, not base64
    r"|(?:~|\.{1,2})?(?:/(?:[a-z0-9_.\-]+|[A-Z][a-z0-9_.\-]*)){2,}/?"
    # Credential=[^/]+/([^/]+)/.* : a regular expression, a negated class repeated
    r"|.*\[\^[^\]]*\][+*?{].*"
    r"|(?:~|\.{1,2})?/?(?:[a-z0-9_.\-]+|[A-Z][a-z0-9_.\-]*)\.(?:pem|key|pfx|p12|json|txt|crt|cer|der|jks|env|ya?ml)"
)
"""A value that is code, not a secret: a dotted name, a call or subscript, a variable passed on, a
template slot."""


def _random_value(value: str) -> bool:
    """A session id is random: a digit, capitals among lower case, or sixteen characters;
    "session=session," passes an argument on."""
    return bool(re.search(r"\d|[a-z][A-Z]|[A-Z][a-z]*[A-Z]", value)) or len(value.strip(",)")) >= 16


_CALL = re.compile(r"[A-Za-z_][\w.]*\([^()]*\)\)*,?")
"""A value that calls a constructor or function ("session=requests.Session())"): code builds the
object a keyword argument passes; a session id is a token, never a call."""


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


_OPENS_A_WORD = re.compile(rf"@(?!{WEBMAIL}\b)[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_SENTENCE_AFTER = re.compile(r"\.\s+[A-Z][a-z]\Z")


def _code_or_prose_at(m: re.Match[str]) -> bool:
    """An "@" after a blank that is no address's: one that opens a dotted name, a decorator
    ("decorated with @pytest.mark.langsmith", "the @hydra.main() function"), unless a webmail
    follows ("juan @gmail.com"); or one standing alone before a sentence's end ("an @ character.
    For example"). An address's "@" touches both parts ("juan@gmail.com"), or has a blank on both
    sides, and its top-level domain is written in one case."""
    at = m.string.find("@", m.start(), m.end())
    if at < 1 or not m.string[at - 1].isspace():
        return False
    return (
        _OPENS_A_WORD.match(m.string, at) is not None
        or _SENTENCE_AFTER.search(m.group()) is not None
    )


class _Search:
    """A rule searched by a function rather than by one regex: `search` as `re.Pattern.search` has
    it."""

    __slots__ = ("search",)

    def __init__(self, search: Callable[[str], re.Match[str] | None]):
        self.search = search


RULES: dict[str, re.Pattern[str] | _Checked | _Search] = {
    "at_sign_like": _Checked(
        re.compile(
            # A domain's labels are letters, digits and hyphens (RFC 1123): "foo@VER_1. If" is a
            # symbol's version.
            r"[\w.+\-'][ \t]{0,2}(?:@|%40|&#0*64;|&commat;|[(\[{<][ \t]*(?:at|arroba)[ \t]*[)\]}>])[ \t]{0,2}"
            r"[^\W_]+(?:-+[^\W_]+)*"
            r"\s*(?:\.|[(\[{<]\s*(?:dot|punto)\s*[)\]}>]|\s(?:dot|punto)\s)\s*[a-z]{2}"
            r"|\b[\w.+\-]+\s+(?:at|arroba)\s+[\w\-]+\s*(?:[(\[{<]\s*(?:dot|punto)\s*[)\]}>]|\s(?:dot|punto)\s)\s*[a-z]{2,}"
            rf"|\s(?:at|arroba)\s+{WEBMAIL}\s*\.",
            re.IGNORECASE,
        ),
        lambda m: not _code_or_prose_at(m),
    ),
    "key_like_prefix": _Checked(
        re.compile(
            r"(?<![\w\-])(?:sk-|sk_live_|sk_test_|rk_live_|pk_live_|whsec_|gh[pousr]_|github_pat_|gl(?:pat|dt|rt)-|xox[abposer]-"
            r"|xapp-|AKIA|ASIA|AIza|ya29\.|GOCSPX-|hf_|api_org_|npm_|pypi-AgE|SG\.|glsa_|sntry[su]_|hv[sb]\.|shp(?:at|ss)_"
            r"|do[opr]_v1_|ATATT|AGE-SECRET-KEY|xai-|gsk_|pplx-|r8_|dapi|eyJ)[\w\-.+/=]{8,}"
            rf"|(?<![\w\-])(?:SK|AC)[0-9a-f]{{32}}(?![\w])|Q~[\w.\-~]{{20,}}|hooks\.slack\.com/services/{NOT_MASK}\w"
        ),
        _random_after_prefix,
    ),
    "pem_marker": re.compile(
        r"-----(?:BEGIN|END) [A-Z0-9 ]*PRIVATE KEY|PuTTY-User-Key-File|Private-Lines:"
    ),
    "credential_assignment": _Checked(
        re.compile(
            # Not right after "word:": "nombre:contraseña:GID" lists the fields of a file format.
            r"(?<!\w:)(?:pass(?:word|wd|phrase|code)?|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|accountkey"
            rf"|client[_\-]?secret|credentials?|contraseña|contrasena)[\"']?[ \t]*[:=](?!=)[ \t]*[\"']?{NOT_MASK}"
            rf"(?P<value>(?=[^\s\"',;]*[0-9_+/=!#$%&*@^~]|[^\s\"',;]*(?-i:[a-z][A-Z])|[^\s\"',;]{{12}})[^\s\"',;{MASK}]{{4,}})",
            re.IGNORECASE,
        ),
        _secret_valued,
    ),
    "password_sentence": re.compile(
        r"\b(?:password|contraseña|contrasena|passphrase|my pass|mi clave|my pin|mi pin)\s+(?:is|es|was|era)\s+"
        rf"{NOT_MASK}(?!(?:not|no|wrong|incorrect|invalid|expired|incorrecta|incorrecto|inválida|caducada|muy|too|very|"
        r"the|la|el|a|an|una?|required|correct|correcta|weak|strong|débil|fuerte|demasiado|new|nueva|old|vieja|same|la"
        r"|misma|case|different|distinta|blank|empty|vacía|used|locked|unlocked|disabled|enabled|needed|set|stored|saved"
        r"|reset|changed|hidden|encrypted|hashed|sent|shown|checked|verified|accepted|rejected|generated|created|asked"
        r"|prompted|requested|optional|missing|entered|typed|given|taken|read|written|cleared|removed|deleted|updated"
        r"|usada|bloqueada|necesaria|guardada|cifrada|enviada|obligatoria|introducida|escrita)\b)\S{3,}",
        re.IGNORECASE,
    ),
    "password_next": re.compile(
        rf"\b(?:password|contraseña|contrasena|passphrase)\s+{NOT_MASK}{_NOT_A_FORMAT_SLOT}"
        # "-krbaguWzl" too
        r"(?:(?=[^\s\"',;]{4})[^\s\"',;]*(?:[\d#$%&*@^!]|(?-i:[a-z][A-Z]))|[^\W\d_]{16,})",
        re.IGNORECASE,
    ),
    "auth_header": re.compile(
        rf"\b[Bb]earer\s+{NOT_MASK}{_TOKENISH}"
        # Basic credentials are base64 (RFC 7617), whole four-character blocks with a digit, a
        # symbol or an inner capital: "basic LangChain" and "basic argument" are prose.
        rf"|\b[Bb]asic\s+{NOT_MASK}(?=[A-Za-z0-9+/=]*(?:[0-9+/=]|[a-z][A-Z]))(?:[A-Za-z0-9+/]{{4}}){{2,}}(?:[A-Za-z0-9+/]{{2}}==|[A-Za-z0-9+/]{{3}}=)?(?![\w+/=])"
        rf"|\b(?i:authori[sz]ation)[\"']?\s*[:=]\s*[\"']?(?:\w+\s+)?{NOT_MASK}{_TOKENISH}"
    ),
    "cookie_like": _Checked(
        re.compile(
            rf"\b(?:set-)?cookie[\"']?\s*:\s*[\"']?{NOT_MASK}[^\s\"';]+="
            rf"|(?:sessid|sessionid|session|sid|csrftoken|xsrf-token)=[\"']?{NOT_MASK}(?P<value>[^;\s&\"']{{8,}})",
            re.IGNORECASE,
        ),
        lambda m: (
            m.group("value") is None
            or (_random_value(m.group("value")) and not _CALL.fullmatch(m.group("value")))
        ),
    ),
    "url_credentials": re.compile(rf"://{NOT_MASK}[^\s/@:{MASK}]+:{NOT_MASK}[^\s/@{MASK}]+@"),
    "url_secret_param": re.compile(
        r"[?&#;][\w\-.]*(?:token|secret|signature|password|passwd|apikey|api_key|session|sessionid|key|sig|code|auth)"
        rf"=[\"']?{NOT_MASK}[^&\s#\"']{{6,}}",
        re.IGNORECASE,
    ),
    "ip_address_like": _Checked(
        re.compile(
            # Not a version with its revision ("(1.2.1.2-2)", "4.5.0.2~rc1"); "10.0.0.1-10.0.0.9" is
            # a range.
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
        # SSN, any punctuation between
        r"|(?<![\w\-.\\])\d{3}([ \t]?[\-._/·][ \t]?)\d{2}\2\d{4}(?![\w\-]|[.,/]\d)"
        r"|(?<![\w\-/.\\])\d{2}/\d{7,8}/\d{2}(?![\w\-/])"  # NSS
    ),
    "address_like": _Search(address_like),
    "name_after_cue": _Checked(
        re.compile(
            rf"\b(?:me llamo|mi nombre es|my name is|a nombre de|firmado por)\s+{NOT_MASK}"
            r"(?!(?:el|la|un|una|the|a|not|usted|ustedes|él|ella|ellos|ellas|nosotros|vosotros|mí|ti|sí|you|me|him|her|us|them)\b)"
            r"(?P<name>[^\W\d_]{2,})"
            r"|\b(?:saludos|un saludo|atentamente|cordialmente|regards|best regards|kind regards)\s*,?[ \t]*\n[ \t]*"
            rf"{NOT_MASK}(?!(?:el|la|the|equipo|team|support|soporte)\b)[A-ZÁÉÍÓÚÑ][a-záéíóúñ]+",
            re.IGNORECASE,
        ),
        _name_like,
    ),
}
"""Each rule by the name it reports; ordered so the reasons read from most to least specific."""
