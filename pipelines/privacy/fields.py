"""What a field's name says about its value: `{"password": "sunshine"}` is a secret whatever it
reads.

Tool arguments and metadata are JSON objects, and their keys often name what they hold. A value
under `password`, `api_key`, `Authorization` or `Cookie` is replaced whole, even when it looks like
nothing; one under `phone`, `full_name` or `shipping_address` is replaced whole when detection finds
nothing in it (a mistyped number, a name typed in lower case), typed `PHONE_INVALID`, `PERSON`,
`ADDRESS`.

A bare `name` (a file, a table, a tool) and `session_id` (the app's conversation key, which
analytics needs) promise nothing; `session_token` or `session_cookie` do.
"""

from __future__ import annotations

import re

from pipelines.privacy.spans import invalid

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-zà-ÿñ]+|\d+")
_SECRET_WORDS = frozenset(
    """password passwd pwd pw pass passphrase passcode pin secret secrets token tokens credential credentials
    authorization cookie cookies contraseña contrasena clave signature sig apikey privatekey secretkey accesskey
    accountkey auth jwt otp""".split()  # noqa: SIM905 - reads as prose
)
_KEY_OWNERS = frozenset(
    "api access secret private account client signing encryption master license subscription auth shared".split()
)
_PERSON_OWNERS = frozenset(
    """full first last given family middle customer client contact user person sender recipient holder card owner
    patient employee author""".split()  # noqa: SIM905
)
_NAME_WORDS = frozenset(
    "name names nombre nombres apellido apellidos surname fullname firstname lastname username".split()
)
_TYPED_WORDS = {
    **dict.fromkeys(("email", "emails", "mail", "correo"), "EMAIL"),
    **dict.fromkeys(
        (
            "phone",
            "phones",
            "telephone",
            "tel",
            "telefono",
            "teléfono",
            "mobile",
            "movil",
            "móvil",
            "cell",
            "cellphone",
            "fax",
            "whatsapp",
        ),
        "PHONE",
    ),
    **dict.fromkeys(
        ("address", "addresses", "direccion", "dirección", "domicilio", "street"), "ADDRESS"
    ),
    **dict.fromkeys(("ip", "ipv4", "ipv6"), "IP_ADDRESS"),
    "dni": "DNI",
    "nif": "DNI",
    "nie": "NIE",
    "cif": "CIF",
    "ssn": "SSN",
    "nss": "NSS",
    "iban": "IBAN",
}


def words(name: str) -> list[str]:
    """`userEmail`, `user_email`, `X-User-Email` all read ["user", "email"]."""
    return [w.lower() for w in _WORD.findall(name)]


def field_entity(name: str) -> str | None:
    """The type a field's name promises its value holds, or None when it promises nothing."""
    parts = words(name)
    if not parts:
        return None
    last, previous = parts[-1], parts[-2] if len(parts) > 1 else ""
    if last in _SECRET_WORDS or (last == "key" and previous in _KEY_OWNERS):
        return "SECRET"
    if last in ("address", "addr") and previous in (
        "ip",
        "remote",
        "client",
        "mac",
        "host",
        "server",
    ):
        return "IP_ADDRESS" if previous != "mac" else None
    if last in ("address", "addresses") and previous in ("email", "mail", "e"):
        return "EMAIL"
    if last == "number" and previous in (
        "phone",
        "mobile",
        "telephone",
        "card",
        "account",
        "ssn",
        "passport",
    ):
        return {"card": "CREDIT_CARD", "account": "IBAN", "ssn": "SSN", "passport": "SECRET"}.get(
            previous, "PHONE"
        )
    if last in _NAME_WORDS and (last != "name" and last != "names" or previous in _PERSON_OWNERS):
        return "PERSON"
    if (
        last in ("card", "pan")
        and previous in ("credit", "debit", "")
        or name.lower() in ("cc", "cc_number")
    ):
        return "CREDIT_CARD"
    return _TYPED_WORDS.get(last)


def whole_value_type(entity: str, value: str) -> str | None:
    """The type to give `value`, replaced whole, under a field typed `entity`; None to leave it as
    is.

    A secret is a secret whatever it reads; other types must at least look like data of that kind.
    """
    stripped = value.strip()
    if not stripped or stripped.lower() in (
        "none",
        "null",
        "n/a",
        "-",
        "unknown",
        "desconocido",
        "true",
        "false",
    ):
        return None
    digits = sum(c.isdigit() for c in stripped)
    if entity == "SECRET":
        return entity
    if entity == "PERSON":
        return (
            entity if re.fullmatch(r"[^\W\d_]+(?:['’\-. ]+[^\W\d_]+){0,5}\.?", stripped) else None
        )
    if entity in ("PHONE", "CREDIT_CARD", "IBAN", "SSN", "NSS"):
        return invalid(entity) if digits >= 6 else None
    if entity in ("DNI", "NIE", "CIF"):
        return invalid(entity) if digits >= 5 else None
    if entity == "ADDRESS":
        return entity if digits or " " in stripped else None
    return entity if digits or "@" in stripped else None  # EMAIL, IP_ADDRESS
