"""An independent last line of defence: broad shape rules run over text the anonymizer already
passed.

It shares no code with the detectors on purpose: a value the anonymizer misses is one its detectors
did not recognise, so checking with the same detectors would find nothing. Only the words that cue a
phone are one list (`pipelines.privacy.phone_cues`), which the rules read as the starts of words, a
wider net than the recognizer's. These rules are broader and dumber: any long run of digits,
anything @-like, key-like prefixes, PEM markers, `password=`-like assignments whose value is not a
pseudonym. Over anonymized text each hit means a value probably survived; the row it sits in belongs
in quarantine with the rule's name as its reason, and the rest of the day publishes. Check digits
(Luhn, ISBN-13, mod 97-10) and the IBAN registry's lengths come from python-stdnum: they only tell a
number from a constant, and where a detector uses one it is behind a shape of its own.

One module per concern: `normalize` (what the rules read), `digit_runs`, `iban_like`, `addresses`,
`rules` (the rest, by the name each reports) and `screens` (their cheap necessary conditions).

Broad means false alarms: a 10-digit constant (`2147483647`) or a MAC address trips a rule although
the anonymizer rightly kept it. They cost a quarantined row, never a leak. Reasons name the rule,
never the value: publishable.

    >>> residual_pii_reasons("Llámame al 612 345 678 o escribe a juan at gmail dot com")
    ['long_digit_run', 'at_sign_like']
    >>> residual_pii_reasons("Llámame al [PHONE_1a2b3c4d] o escribe a [EMAIL_0f9e8d7c]")
    []
"""

from __future__ import annotations

from pipelines.privacy.residual.digit_runs import (
    ODD_BETWEEN_DIGITS,
    PHONE_CUES,
    long_digit_run,
)
from pipelines.privacy.residual.iban_like import iban_like
from pipelines.privacy.residual.normalize import normalized
from pipelines.privacy.residual.rules import RULES
from pipelines.privacy.residual.screens import NINE_DIGITS_APART, SCREENS, ScreenedText


def residual_pii_reasons(text: str) -> list[str]:
    """The names of the rules `text` trips, in rule order; empty when it looks clean.

    Meant for text the anonymizer already passed: `[TYPE_xxxxxxxx]` pseudonyms never trip a rule.
    """
    if not text:
        return []
    screened = ScreenedText(normalized(text))
    text = screened.text
    # Nine digits for a long run, eight for an IBAN: the least each rule counts.
    long_run = (
        screened.digits >= 9
        and (
            NINE_DIGITS_APART.search(text) is not None
            or (
                (screened.has(*PHONE_CUES) or "+" in text or "00" in text or "·" in text)
                and ODD_BETWEEN_DIGITS.search(text) is not None
            )
        )
        and long_digit_run(text)
    )
    reasons = ["long_digit_run"] if long_run else []
    reasons += [
        name for name, rule in RULES.items() if SCREENS[name](screened) and rule.search(text)
    ]
    return reasons + (["iban_like"] if screened.digits >= 8 and iban_like(text) else [])
