"""The user's question against the prompts the common RAG templates build around it."""

from __future__ import annotations


import pytest

from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.core.user_question import (
    NO_RULE,
    QUESTION_IS_PROMPT,
    QuestionRule,
    choose_question,
    prompt_evidence,
)

QUESTION = "How do I restore a snapshot?"
CHUNK = "Snapshots are written to the snapshots folder. A snapshot can be restored with the recover API."
# The templates as their libraries ship them, filled with one chunk and the question.
TEMPLATES = {
    # LangChain hub's rlm/rag-prompt
    "langchain": (
        "You are an assistant for question-answering tasks. Use the following pieces of retrieved context to "
        "answer the question. If you don't know the answer, just say that you don't know. Use three sentences "
        "maximum and keep the answer concise.\nQuestion: {question} \nContext: {context} \nAnswer:"
    ),
    # LlamaIndex's DEFAULT_TEXT_QA_PROMPT_TMPL
    "llamaindex": (
        "Context information is below.\n---------------------\n{context}\n---------------------\nGiven the context "
        "information and not prior knowledge, answer the query.\nQuery: {question}\nAnswer: "
    ),
    # Haystack's PromptBuilder example
    "haystack": (
        "Given the following information, answer the question.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"
    ),
    "spanish": "Responde usando solo el contexto.\n\nContexto:\n{context}\n\nPregunta: {question}\nRespuesta:",
    "xml": "<context>\n{context}\n</context>\n<question>{question}</question>",
}
CLEAN = [
    QUESTION,
    "¿En qué puerto escucha el servidor?",
    "Context: I run Airflow 3 on Kubernetes. How do I set the executor?",
    "What does the `context:` key in kubectl's config do?",
    "¿Qué significa «Contexto:» en la configuración del cliente?",
    "Given the following information: port 8080 is taken, which port should the console use?",
    "Wie stelle ich einen Snapshot wieder her?",
]


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_the_common_templates_are_prompts_without_their_documents_text(template):
    # Ids-only retrieval spans (the GenAI convention) give no document text: the template alone must
    # tell.
    prompt = TEMPLATES[template].format(context=f"[1] {CHUNK}", question=QUESTION)
    assert prompt_evidence(prompt) is not None


def test_our_own_json_prompt_is_a_prompt():
    inputs = RagInput(
        question=QUESTION, language="en", contexts=[Context(chunk_id="ops#1", text=CHUNK)]
    )
    user = next(m["content"] for m in RagAnswerPrompt().messages(inputs) if m["role"] == "user")
    assert prompt_evidence(user) == "a block of retrieved contexts"


def test_a_retrieved_documents_text_marks_a_prompt_whatever_its_template():
    prompt = f"Please help.\n{CHUNK}\nThanks! {QUESTION}"
    assert prompt_evidence(prompt) is None  # no template marker
    assert prompt_evidence(prompt, [CHUNK]) == "a retrieved document's text"
    assert (
        prompt_evidence(" ".join(prompt.upper().split()), [CHUNK]) is not None
    )  # case and spacing folded
    assert (
        prompt_evidence(QUESTION, ["snapshot"]) is None
    )  # a short document may be the user's own words


@pytest.mark.parametrize("question", CLEAN)
def test_users_questions_are_not_prompts(question):
    assert prompt_evidence(question, [CHUNK]) is None


def test_the_first_candidate_that_is_not_a_prompt_is_the_question():
    prompt = TEMPLATES["haystack"].format(context=CHUNK, question=QUESTION)
    chosen = choose_question(
        [("retrieval", None), ("root", ""), ("user", prompt), ("later", QUESTION)], [], NO_RULE
    )
    assert chosen.question == QUESTION and chosen.rejection is None


def test_only_prompts_quarantine_the_trace_saying_what_to_set():
    prompt = TEMPLATES["llamaindex"].format(context=CHUNK, question=QUESTION)
    chosen = choose_question([("the last user message", prompt)], [CHUNK], NO_RULE)
    assert chosen.question is None
    reason, field, detail = chosen.rejection
    assert (reason, field) == (QUESTION_IS_PROMPT, "question")
    assert "the last user message" in detail and "gen_ai.retrieval.query.text" in detail
    assert "RAGWATCH_QUESTION_PATTERN" in detail
    assert choose_question([("root", None)], [], NO_RULE) == choose_question(
        [], [], NO_RULE
    )  # nothing: no question


def test_a_teams_pattern_extracts_the_question_from_its_template():
    rule = QuestionRule.of(None, r"Pregunta:\s*(?P<question>.+?)\s*Respuesta:")
    prompt = TEMPLATES["spanish"].format(context=CHUNK, question="¿Cómo restauro una instantánea?")
    assert (
        choose_question([("user", prompt)], [CHUNK], rule).question
        == "¿Cómo restauro una instantánea?"
    )
    # A pattern that extracts the prompt itself is still refused.
    greedy = QuestionRule.of(None, r"(?s)(.+)")
    assert choose_question([("user", prompt)], [CHUNK], greedy).rejection[0] == QUESTION_IS_PROMPT


def test_settings_refuse_a_pattern_without_a_group():
    from pydantic import ValidationError

    from pipelines.core.settings import Settings

    with pytest.raises(ValidationError, match="needs a group"):
        Settings(question_pattern=r"Question: .+")
    with pytest.raises(ValidationError, match="not a regular expression"):
        Settings(question_pattern=r"(unclosed")
    rule = Settings(question_pattern=r"Q: (.+)", question_attribute="app.question").question_rule
    assert rule.attribute == "app.question" and rule.extract("Q: why?") == "why?"
