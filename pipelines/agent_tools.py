"""The agent tools golden tool-selection triples are written for and evaluation checks calls against, as OpenAI tool specs."""

from __future__ import annotations

TOOLS: list[dict] = [
    {
        "type": "function",
        "function": {
            "name": "vector_search",
            "description": "Search the product documentation and knowledge base for passages relevant to a question.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in the user's language."},
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
