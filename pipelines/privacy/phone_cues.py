"""The words people write right before a phone number, in Spanish and English.

Two readers share them: the phone recognizer (`phones`), where a cue lets a number of any region, or
one split by any punctuation, pass for a phone; and the residual check (`residual.digit_runs`),
which reads a cued run of digit groups as a phone from its shape alone.
"""

from __future__ import annotations

PHONE_WORDS = (
    "tel",
    "telf",
    "telef",
    "teléf",
    "teléfono",
    "telefono",
    "tlf",
    "tfno",
    "móvil",
    "movil",
    "celular",
    "whatsapp",
    "whats app",
    "fax",
    "sms",
    "phone",
    "mobile",
    "cell",
    "call",
    "llama",
    "lláma",
    "llamar",
    "llámar",
    "llamame",
    "llámame",
    "llamanos",
    "llámanos",
)
"""Words that name a phone or a call, with or without their accents as people type them: the
number after them is one to dial."""

NUMBER_WORDS = (
    "número",
    "numero",
    "number",
    "contacto",
    "contacta",
    "contact",
    "ext",
    "ring",
    "text me",
)
"""Words that name a number or a way to reach someone, and as often come before a count ("number
1,234,567,890"). The recognizer reads them as cues, since the number after them must still have a
phone's length and groups; the residual check does not, for nothing there would tell the count."""
