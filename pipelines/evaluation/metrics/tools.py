"""Agent tool metrics: tool selection accuracy, ragas ToolCallAccuracy, and tool-call validity.

- `tool_selection_accuracy` (TSA, offline): per turn that expects a tool, 1 when the agent's first
  tool call names the expected tool, else 0 (no call at all is a wrong choice); the aggregate is
  the mean over those turns. Below `TSA_THRESHOLD` (0.85) the tool descriptions need work.
- `tool_call_accuracy` (offline): ragas ToolCallAccuracy — the sequence of called tools must equal
  the expected one, and each expected argument must match exactly (as text; the score is the share
  of expected arguments that do, an extra argument is not scored); stricter than TSA (free-text SQL
  or search queries rarely match word for word). A score below 1 carries which call or argument
  differs, expected against got (`call_differences`), for the report's item detail.
- `tool_call_validity` (online, no ground truth): the share of a trace's tool calls that name a
  known tool with arguments valid against that tool's JSON schema.
None of them calls a judge model.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ConfigDict, Field

from pipelines.core.agent_tools import TOOLS
from pipelines.core.records import Score, Suite, ToolCall

# isort: off  (judge imports ragas_adapter, which sets RAGAS_DO_NOT_TRACK before the first ragas
# import)
from pipelines.evaluation.metrics.judge import Outcome, log_outcomes
from ragas.messages import AIMessage, HumanMessage
from ragas.messages import ToolCall as RagasToolCall
from ragas.metrics.collections import ToolCallAccuracy

# isort: on

TSA_THRESHOLD = 0.85
"""TSA below this means the tool descriptions need work (the operating thresholds,
statistics/diagnose.py)."""


class ToolTurn(BaseModel):
    """One agent turn of a golden tool triple: what was expected and what the agent called."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    stratum: str
    question: str
    expected_tool: str | None
    expected_args: dict[str, Any] | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """The agent's calls in order; empty when it answered in text."""
    error: str | None = None
    """Why the agent produced no turn at all (the system under test failed)."""


def chose_expected_tool(tool_calls: Sequence[ToolCall], expected_tool: str) -> bool:
    """The turn's choice is its first tool call."""
    return bool(tool_calls) and tool_calls[0].name == expected_tool


def tool_selection_accuracy(turns: Iterable[ToolTurn]) -> float | None:
    """Turns where the agent chose the expected tool / turns that expected a tool (None when none
    did). Failed turns are left out, as their failed scores are."""
    expecting = [t for t in turns if t.expected_tool and t.error is None]
    if not expecting:
        return None
    return sum(chose_expected_tool(t.tool_calls, t.expected_tool) for t in expecting) / len(
        expecting
    )


async def tool_call_accuracy(turn: ToolTurn) -> Outcome:
    """ragas ToolCallAccuracy of one turn against its expected call."""
    if turn.error is not None:
        return Outcome.failed(turn.error)
    if not turn.expected_tool or turn.expected_args is None:
        return Outcome.skipped(
            "no expected tool call: tool_call_accuracy needs an expected tool and arguments"
        )
    called = AIMessage(
        content="",
        tool_calls=[RagasToolCall(name=c.name, args=c.arguments) for c in turn.tool_calls],
    )
    expected = [RagasToolCall(name=turn.expected_tool, args=turn.expected_args)]
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # ragas warns on empty or extra calls; the score already says so
        result = await ToolCallAccuracy().ascore(
            user_input=[HumanMessage(content=turn.question), called], reference_tool_calls=expected
        )
    value = float(result.value)
    return Outcome(value, "ok", call_differences(turn) if value < 1 else None)


def call_differences(turn: ToolTurn) -> str | None:
    """What keeps a turn's calls from its expected call, as ToolCallAccuracy compares them: the
    sequence of tool names, then each expected argument as text (`query: expected 'x', got 'y'`);
    None when nothing does."""
    called = [c.name for c in turn.tool_calls]
    if called != [turn.expected_tool]:
        return f"called {', '.join(called) or 'no tool'}; expected {turn.expected_tool} alone"
    arguments = turn.tool_calls[0].arguments
    differences = [
        f"{name}: expected {_shown(value)}, got {_shown(arguments[name]) if name in arguments else 'nothing'}"
        for name, value in (turn.expected_args or {}).items()
        if name not in arguments or str(arguments[name]) != str(value)
    ]
    return "; ".join(differences) or None


def _shown(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def tool_selection(turn: ToolTurn) -> Outcome:
    if turn.error is not None:
        return Outcome.failed(turn.error)
    if not turn.expected_tool:
        return Outcome.skipped("the turn expects no tool call")
    return Outcome.ok(float(chose_expected_tool(turn.tool_calls, turn.expected_tool)))


async def score_tool_turns(
    turns: Sequence[ToolTurn], *, run_id: str, suite: Suite, dataset_version: str
) -> list[Score]:
    """`tool_selection_accuracy` and `tool_call_accuracy` Scores per turn, in input order."""
    accuracies = await asyncio.gather(*(tool_call_accuracy(t) for t in turns))
    labels = {"run_id": run_id, "suite": suite, "dataset_version": dataset_version}
    scores = []
    for turn, accuracy in zip(turns, accuracies):
        for metric, outcome in (
            ("tool_selection_accuracy", tool_selection(turn)),
            ("tool_call_accuracy", accuracy),
        ):
            scores.append(
                outcome.score(item_id=turn.item_id, stratum=turn.stratum, metric=metric, **labels)
            )
    log_outcomes(scores, "tools")
    return scores


def tool_call_problem(call: ToolCall, tools: Sequence[dict] = TOOLS) -> str | None:
    """Why a call is invalid (unknown tool, arguments against its schema), or None when it is
    valid."""
    specs = {tool["function"]["name"]: tool["function"] for tool in tools}
    spec = specs.get(call.name)
    if spec is None:
        return f"unknown tool {call.name!r} (known: {', '.join(sorted(specs))})"
    error = best_match(
        _validator(json.dumps(spec.get("parameters") or {}, sort_keys=True)).iter_errors(
            call.arguments
        )
    )
    if error is None:
        return None
    where = ".".join(map(str, error.absolute_path))
    return f"{call.name}: invalid arguments{f' at {where}' if where else ''}: {error.message}"


def tool_call_validity(tool_calls: Sequence[ToolCall], tools: Sequence[dict] = TOOLS) -> Outcome:
    """Valid calls / calls of one trace, with every problem as the reason; skipped with no calls."""
    if not tool_calls:
        return Outcome.skipped("no tool calls in the trace")
    problems = [p for p in (tool_call_problem(c, tools) for c in tool_calls) if p is not None]
    return Outcome(1 - len(problems) / len(tool_calls), "ok", "; ".join(problems) or None)


@lru_cache(maxsize=64)
def _validator(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)
