"""PII checks remembered per distinct retrieved context: same results as a fresh scan, pseudonyms
still per trace."""

import sys
from collections import Counter

from pipelines.core.records import Context, Trace
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.privacy.memo import REMEMBERED_MAX_CHARS
from pipelines.privacy.recognizers import context_pii, find_pii
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.traces.residual_fields import context_residual_reasons, residual_pii_by_field

CHUNK = (
    "Para cambiar la tarjeta, escribe a soporte.pagos@example.es o llama al 612 345 678. " * 6
).strip()
CLEAN = (
    "La réplica de Qdrant guarda sus copias durante treinta días en el almacenamiento compartido. "
    * 5
).strip()


def trace(trace_id: str) -> Trace:
    return Trace(
        trace_id=trace_id,
        ts="2026-11-20T10:00:00+00:00",
        question="¿Cómo cambio la tarjeta?",
        answer="Escribe a soporte.",
        contexts=[Context(chunk_id="c1", text=CHUNK), Context(chunk_id="c2", text=CLEAN)],
        app="pagos",
        language="es",
    )


def test_a_context_is_scanned_once_and_found_the_same():
    assert len(CHUNK) <= REMEMBERED_MAX_CHARS
    before = context_pii.cache_info()
    assert (
        list(context_pii(CHUNK)) == list(context_pii(CHUNK)) == find_pii(CHUNK)
        and len(find_pii(CHUNK)) == 12
    )
    assert context_pii.cache_info().hits >= before.hits + 1


def test_pseudonyms_stay_per_trace_when_the_context_is_remembered():
    anonymizer = Anonymizer(b"memo-test-key")
    one, counts_one = anonymizer.anonymize_trace(trace("tr-1"))
    two, counts_two = anonymizer.anonymize_trace(trace("tr-2"))
    assert counts_one == counts_two == Counter(EMAIL=6, PHONE=6)
    assert one.contexts[0].text != two.contexts[0].text  # same chunk, other trace: other pseudonyms
    assert "612 345 678" not in one.contexts[0].text + two.contexts[0].text
    assert one.contexts[1].text == two.contexts[1].text == CLEAN


def test_a_caller_cannot_change_what_later_callers_get():
    leaked = CHUNK.replace("612 345 678", "[PHONE_0a1b2c3d]")
    row = {
        "question": "q",
        "answer": "a",
        "contexts": [{"text": leaked}, {"text": CLEAN}],
        "tool_calls": [],
        "metadata": "{}",
    }
    found = residual_pii_by_field(row)
    assert found == {"contexts[0].text": ["at_sign_like"]}
    found["contexts[0].text"].append("tampered")
    assert residual_pii_by_field(row) == {"contexts[0].text": ["at_sign_like"]}
    assert (
        context_residual_reasons(leaked) == tuple(residual_pii_reasons(leaked)) == ("at_sign_like",)
    )


def test_a_remembered_context_is_not_kept():
    """The memo keeps a digest of the text, not the text: 16,384 remembered chunks would otherwise
    stay in every worker's memory (up to 64 MB per function)."""
    fresh = "".join(
        chr(ord("a") + int(digit)) for digit in str(id(object()))
    )  # a word no earlier test remembered
    text = f"Los nodos de Qdrant replican cada colección en tres zonas ({fresh}). " * 8
    held = sys.getrefcount(text)
    assert context_residual_reasons(text) == context_residual_reasons(text) == ()
    assert context_pii(text) == context_pii(text)
    assert sys.getrefcount(text) == held
    assert context_pii.cache_info().currsize >= 1
