"""The agent tools golden tool-selection triples are written for and evaluation checks calls
against, as OpenAI tool specs, with the requests the offline golden generator writes for each and
the arguments their right call takes.

The offline backend is both the golden generator and the reference agent of the demo: the generator
writes a request about a term from `TOOL_REQUESTS` and expects `tool_arguments(tool, term)`; the
agent reads the term back (`requested_term`) and calls with the same arguments. Both read this one
table, so a golden triple and the agent's call can only differ where the agent is made to err
(`OfflineFaults.wrong_arguments`, `wrong_tool`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

TOOLS: list[dict] = [
    {
        "type": "function",
        "function": {
            "name": "vector_search",
            "description": "Search the product documentation and knowledge base for passages relevant to a question.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to look for, in the user's language.",
                    },
                    "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "sql_query",
            "description": "Run a read-only SQL query on the analytics database (tables: tickets, orders, users_daily).",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "One SELECT statement."}},
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "web_search",
            "description": "Search the public web for recent or external information not in the documentation.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_NAMES = [t["function"]["name"] for t in TOOLS]

TOOL_REQUESTS: dict[str, dict[str, str]] = {
    "vector_search": {
        "en": "Search the docs: how does {term} work?",
        "es": "Busca en la documentación cómo funciona {term}.",
    },
    "sql_query": {
        "en": "How many tickets mentioning {term} were opened last week?",
        "es": "¿Cuántos tickets que mencionan {term} se abrieron la semana pasada?",
    },
    "web_search": {
        "en": "What is the latest public news about {term}?",
        "es": "¿Cuáles son las últimas noticias públicas sobre {term}?",
    },
}
"""A request for each tool about a term, per language: the offline golden generator's tool
questions."""


def tool_arguments(tool: str, term: str) -> dict[str, Any] | None:
    """The arguments of the right call of `tool` for a request of `TOOL_REQUESTS` about `term` (None
    for a tool it has no request for): a search for the term, a count of last week's tickets that
    mention it, its news."""
    arguments = {
        "vector_search": {"query": term},
        "sql_query": {
            "query": f"SELECT count(*) FROM tickets WHERE body ILIKE '%{term}%' "
            "AND opened_at >= now() - interval '7 days'"
        },
        "web_search": {"query": f"{term} news"},
    }
    return arguments.get(tool)


def requested_term(question: str) -> str | None:
    """The term of a request written from `TOOL_REQUESTS`, None for any other text."""
    for pattern in _request_patterns():
        if match := pattern.fullmatch(question.strip()):
            return match.group("term")
    return None


@cache
def _request_patterns() -> list[re.Pattern[str]]:
    return [
        re.compile(re.escape(template).replace(re.escape("{term}"), "(?P<term>.+)"))
        for by_language in TOOL_REQUESTS.values()
        for template in by_language.values()
    ]
