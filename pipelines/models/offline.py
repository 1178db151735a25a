"""The deterministic offline backend's own knowledge: its model name and how it picks a tool.

Every record the offline backend produces names `OFFLINE_MODEL`, so its output can never pass for a
real model's. Prompts carry their own offline answers (`Prompt.offline`); a tool-calling chat has no
prompt object, so the offline choice of a tool lives here, shared by `OfflineLLM` and the simulator.
"""

from __future__ import annotations

from pipelines.models.prompts import user_texts
from pipelines.records import ToolCall

OFFLINE_MODEL = "ragwatch-offline-deterministic"

COUNTING = ("how many", "count", "total", "average", "cuántos", "cuántas", "cuantos", "número de", "media de")
EXTERNAL = ("latest", "news", "today", "current price", "noticias", "últimas", "hoy", "precio actual")


def choose_tool(messages: list[dict], tools: list[dict]) -> list[ToolCall]:
    """Keyword rules over the last user message: counting questions query SQL, news goes to the web,
    everything else searches the documentation."""
    question = next(user_texts(messages), "")
    names = {tool["function"]["name"] for tool in tools}
    lowered = question.lower()
    if any(k in lowered for k in COUNTING) and "sql_query" in names:
        return [ToolCall(name="sql_query", arguments={"query": f"-- {question}\nSELECT count(*) FROM tickets"})]
    if any(k in lowered for k in EXTERNAL) and "web_search" in names:
        return [ToolCall(name="web_search", arguments={"query": question})]
    if "vector_search" in names:
        return [ToolCall(name="vector_search", arguments={"query": question, "top_k": 5})]
    return []
