"""Tool turns scored, and tool calls checked against the tool schemas."""

from __future__ import annotations

import asyncio

from pipelines.core.records import ToolCall
from pipelines.evaluation.metrics.tools import (
    ToolTurn,
    score_tool_turns,
    tool_call_problem,
    tool_call_validity,
    tool_selection_accuracy,
)
from tests.support.judged_items import RUN, assert_failed, by

# --- tools -----------------------------------------------------------------------------------


def test_tool_turn_scores() -> None:
    def turn(
        item_id, calls, expected_tool="vector_search", expected_args=None, error=None
    ) -> ToolTurn:
        return ToolTurn(
            item_id=item_id,
            stratum="tool",
            question="How does the recover endpoint work?",
            expected_tool=expected_tool,
            expected_args=expected_args or {"query": "recover", "top_k": 5},
            tool_calls=calls,
            error=error,
        )

    turns = [
        turn("exact", [ToolCall(name="vector_search", arguments={"query": "recover", "top_k": 5})]),
        turn(
            "half-args",
            [ToolCall(name="vector_search", arguments={"query": "recover", "top_k": 3})],
        ),
        turn("wrong-tool", [ToolCall(name="web_search", arguments={"query": "recover"})]),
        turn("no-call", []),
        turn("failed", [], error="tool call failed: HTTP 500 after 5 attempts"),
        turn("no-expectation", [ToolCall(name="web_search")], expected_tool=None),
    ]
    scores = asyncio.run(score_tool_turns(turns, **RUN))
    tsa, accuracy = by(scores, "tool_selection_accuracy"), by(scores, "tool_call_accuracy")
    assert [tsa[i].value for i in ("exact", "half-args", "wrong-tool", "no-call")] == [
        1.0,
        1.0,
        0.0,
        0.0,
    ]
    assert [accuracy[i].value for i in ("exact", "half-args", "wrong-tool", "no-call")] == [
        1.0,
        0.5,
        0.0,
        0.0,
    ]
    assert_failed(tsa["failed"], "HTTP 500") and assert_failed(accuracy["failed"], "HTTP 500")
    assert tsa["no-expectation"].status == accuracy["no-expectation"].status == "skipped"
    assert tool_selection_accuracy(turns) == 0.5


def test_tool_call_validity_against_the_tool_schemas() -> None:
    valid = ToolCall(name="vector_search", arguments={"query": "snapshots", "top_k": 5})
    assert tool_call_problem(valid) is None
    assert "unknown tool 'delete_everything'" in tool_call_problem(
        ToolCall(name="delete_everything")
    )
    assert "'query' is a required property" in tool_call_problem(
        ToolCall(name="sql_query", arguments={})
    )
    assert "at top_k" in tool_call_problem(
        ToolCall(name="vector_search", arguments={"query": "x", "top_k": "5"})
    )
    assert "at top_k" in tool_call_problem(
        ToolCall(name="vector_search", arguments={"query": "x", "top_k": 500})
    )
    extra = ToolCall(name="web_search", arguments={"query": "x", "lang": "es"})
    assert "Additional properties" in tool_call_problem(extra)

    mixed = tool_call_validity([valid, ToolCall(name="sql_query", arguments={"query": 1})])
    assert (mixed.value, mixed.status) == (
        0.5,
        "ok",
    ) and "sql_query: invalid arguments at query" in mixed.error
    assert (tool_call_validity([valid]).value, tool_call_validity([valid]).error) == (1.0, None)
    none = tool_call_validity([])
    assert (none.status, none.value) == ("skipped", None)
    score = none.score(
        item_id="trace-1",
        stratum="app/es",
        metric="tool_call_validity",
        **{**RUN, "suite": "online"},
    )
    assert score.status == "skipped" and score.error == "no tool calls in the trace"
