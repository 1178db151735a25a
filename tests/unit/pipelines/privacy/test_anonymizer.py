"""Keyed pseudonyms: consistent inside a trace, unlinkable across traces and keys, stable on
reruns."""

import json
from collections import Counter
from datetime import UTC, datetime

from pipelines.core.records import Context, ToolCall, Trace
from pipelines.privacy.anonymizer import Anonymizer, clip_outside_pseudonyms
from pipelines.privacy.recognizers import PSEUDONYM, find_pii

KEY = b"test-key"


def make_trace(trace_id: str = "tr-1") -> Trace:
    ticket = "Ticket #48213: Lucía Fernández, tel. +34 612 34 56 78, DNI 12345678Z."
    return Trace(
        trace_id=trace_id,
        ts=datetime(2026, 11, 29, 10, tzinfo=UTC),
        question="Hola, soy Lucía Fernández (Lucia.Fernandez@Gmail.com, 612 345 678). ¿Cómo va la sentencia with?",
        answer="Hola Lucía Fernández, te escribo a lucia.fernandez@gmail.com: with llama a __exit__().",
        contexts=[
            Context(
                chunk_id="pydoc/with#0-1a2b3c4d",
                text="The with statement calls __exit__().",
                score=0.91,
            ),
            Context(chunk_id="tickets/48213#0", text=ticket, score=0.55),
        ],
        tool_calls=[
            ToolCall(
                name="sql_query",
                arguments={"query": "SELECT id FROM t WHERE email = 'lucia.fernandez@gmail.com'"},
            ),
            ToolCall(
                name="vector_search",
                arguments={
                    "query": "with statement",
                    "top_k": 5,
                    "filters": [{"owner": "Lucía Fernández"}, {"ip": "83.45.112.9"}],
                },
            ),
        ],
        model="qwen2.5-7b-instruct",
        app="support-bot",
        language="es",
        user_feedback=1,
        latency_ms=812,
        metadata={
            "client_ip": "83.45.112.9",
            "session_id": "sess-0011",
            "user_email": "LUCIA.FERNANDEZ@gmail.com",
        },
    )


def pseudonyms(text: str) -> list[str]:
    return PSEUDONYM.findall(text)


def test_the_same_value_gets_the_same_pseudonym_across_every_field():
    anonymized, _ = Anonymizer(KEY).anonymize_trace(make_trace())
    email = pseudonyms(anonymized.tool_calls[0].arguments["query"])[0]
    assert email.startswith("[EMAIL_")
    assert (
        email in anonymized.question
        and email in anonymized.answer
        and anonymized.metadata["user_email"] == email
    )
    person = pseudonyms(anonymized.answer)[0]
    assert (
        person.startswith("[PERSON_")
        and person in anonymized.question
        and person in anonymized.contexts[1].text
    )
    assert anonymized.tool_calls[1].arguments["filters"][0]["owner"] == person
    phone = [p for p in pseudonyms(anonymized.question) if p.startswith("[PHONE_")]
    assert phone and phone[0] in anonymized.contexts[1].text  # "612 345 678" and "+34 612 34 56 78"
    assert (
        anonymized.metadata["client_ip"] == anonymized.tool_calls[1].arguments["filters"][1]["ip"]
    )


def test_everything_planted_is_gone_and_the_rest_is_untouched():
    original = make_trace()
    anonymized, counts = Anonymizer(KEY).anonymize_trace(original)
    dumped = anonymized.model_dump_json()
    for value in (
        "Lucía",
        "Fernández",
        "ucia.fernandez@gmail.com",
        "612 345 678",
        "+34 612 34 56 78",
        "12345678Z",
        "83.45.112.9",
    ):
        assert value.lower() not in dumped.lower()
    assert [c.chunk_id for c in anonymized.contexts] == [c.chunk_id for c in original.contexts]
    assert anonymized.contexts[0] == original.contexts[0]
    unchanged = ("trace_id", "ts", "model", "app", "language", "user_feedback", "latency_ms")
    assert all(getattr(anonymized, f) == getattr(original, f) for f in unchanged)
    assert (
        anonymized.tool_calls[1].arguments["top_k"] == 5
        and anonymized.metadata["session_id"] == "sess-0011"
    )
    assert set(anonymized.metadata) == set(original.metadata)
    assert original.question.startswith("Hola, soy Lucía")  # the input is not mutated
    assert counts == Counter({"PERSON": 4, "EMAIL": 4, "PHONE": 2, "DNI": 1, "IP_ADDRESS": 2})


def test_pseudonyms_differ_across_traces_and_keys():
    def email_pseudonym(anonymizer: Anonymizer, trace_id: str) -> str:
        return pseudonyms(
            anonymizer.anonymize_trace(make_trace(trace_id))[0].metadata["user_email"]
        )[0]

    a = email_pseudonym(Anonymizer(KEY), "tr-1")
    assert a == email_pseudonym(Anonymizer(KEY), "tr-1")
    assert a != email_pseudonym(Anonymizer(KEY), "tr-2")
    assert a != email_pseudonym(Anonymizer(b"another-key"), "tr-1")


def test_pseudonyms_are_typed_keyed_hashes():
    anonymizer = Anonymizer(KEY)
    token = anonymizer.pseudonym("tr-1", "EMAIL", "ana@empresa.es")
    assert PSEUDONYM.fullmatch(token) and token.startswith("[EMAIL_")
    assert token != anonymizer.pseudonym("tr-1", "PERSON", "ana@empresa.es")
    assert "ana" not in token


def test_anonymize_value_walks_nested_json_and_keeps_keys():
    counts: Counter = Counter()
    value = {
        "user": {"email": "ana@empresa.es", "phones": ["612 345 678", 612345678]},
        "ok": True,
        "note": None,
    }
    out = Anonymizer(KEY).anonymize_value(value, "tr-9", counts)
    assert set(out) == {"user", "ok", "note"} and set(out["user"]) == {"email", "phones"}
    assert out["user"]["email"].startswith("[EMAIL_") and out["user"]["phones"][0].startswith(
        "[PHONE_"
    )
    assert out["user"]["phones"][1] == 612345678 and out["ok"] is True and out["note"] is None
    assert counts == Counter({"EMAIL": 1, "PHONE": 1})


def test_anonymizing_twice_changes_nothing_more():
    anonymizer = Anonymizer(KEY)
    once, counts = anonymizer.anonymize_trace(make_trace())
    twice, again = anonymizer.anonymize_trace(once)
    assert sum(counts.values()) > 0
    assert again == Counter() and twice == once
    for text in (once.question, once.answer, *(c.text for c in once.contexts)):
        assert find_pii(text) == []


def test_spanish_text_without_pii_passes_through_verbatim():
    text = "¿Qué garantiza la sentencia «with» si salta una excepción? Uso Python 3.11.7 desde el 29/11/2026."
    counts: Counter = Counter()
    assert Anonymizer(KEY).anonymize_text(text, "tr-1", counts) == text and not counts


def test_pii_in_metadata_keys_is_replaced_and_values_stay_under_their_new_key():
    counts: Counter = Counter()
    value = {"juan.perez@gmail.com": {"visits": 3}, "+34 612 345 678": True, "plan": "pro"}
    out = Anonymizer(KEY).anonymize_value(value, "tr-1", counts)
    keys = list(out)
    assert keys[0].startswith("[EMAIL_") and keys[1].startswith("[PHONE_") and keys[2] == "plan"
    assert out[keys[0]] == {"visits": 3} and out[keys[1]] is True and out["plan"] == "pro"
    assert counts == Counter({"EMAIL": 1, "PHONE": 1})


def test_two_keys_that_are_one_value_spelled_twice_are_both_kept():
    out = Anonymizer(KEY).anonymize_value(
        {"Juan@Gmail.com": 1, "juan@gmail.com": 2}, "tr-1", Counter()
    )
    assert sorted(out.values()) == [1, 2] and len({key.rstrip("#") for key in out}) == 1


def test_a_key_that_names_a_secret_vouches_for_its_value():
    counts: Counter = Counter()
    value = {
        "password": "sunshine",  # nothing a detector would see on its own
        "headers": {"Authorization": "Token abc", "X-Api-Key": "plainwords", "Cookie": "a=b"},
        "full_name": "xiomara quintero",
        "phone": "555-0199 ext 12",  # too short for a phone, under a key that says it is one
        "session_id": "sess-0011",  # the app's conversation key: kept
        "name": "vector_search",  # a bare "name" promises nothing
        "secret": "[SECRET_0a1b2c3d]",  # already a pseudonym: kept
    }
    out = Anonymizer(KEY).anonymize_value(value, "tr-1", counts)
    assert out["password"].startswith("[SECRET_")
    assert all(v.startswith("[SECRET_") for v in out["headers"].values())
    assert out["full_name"].startswith("[PERSON_") and out["phone"].startswith("[PHONE_INVALID_")
    assert (
        out["session_id"] == "sess-0011"
        and out["name"] == "vector_search"
        and out["secret"] == "[SECRET_0a1b2c3d]"
    )
    assert counts == Counter({"SECRET": 4, "PERSON": 1, "PHONE_INVALID": 1})


def test_one_value_gets_one_pseudonym_however_it_is_written():
    anonymizer = Anonymizer(KEY)
    forms = [
        "juan@gmail.com",
        "juan at gmail dot com",
        "juan＠gmail．com",
        "JUAN@GMAIL.COM",
        "juan\\u0040gmail.com",
    ]
    tokens = {anonymizer.anonymize_text(form, "tr-1", Counter()) for form in forms}
    assert len(tokens) == 1 and tokens.pop().startswith("[EMAIL_")


def test_lone_surrogates_from_json_do_not_crash_the_anonymizer():
    text = json.loads('"soy Jos\\u00e9 P\\u00e9rez \\ud800 612 345 678"')
    out = Anonymizer(KEY).anonymize_text(text, "tr-1", Counter())
    assert "612 345 678" not in out and "\ud800" in out


def test_clipping_never_cuts_a_pseudonym():
    text = "x" * 10 + "[EMAIL_0a1b2c3d]" + "y" * 10
    assert clip_outside_pseudonyms(text, 15) == "x" * 10
    assert clip_outside_pseudonyms(text, 26) == "x" * 10 + "[EMAIL_0a1b2c3d]"
    assert clip_outside_pseudonyms(text, 100) == text
