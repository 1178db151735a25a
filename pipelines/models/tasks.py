"""What a model is asked to do, as typed tasks that every backend can run.

A task names its input and output models, renders chat messages for a real LLM, and has a
deterministic `offline` implementation. The OpenAI-compatible client sends the messages with
the output's JSON schema as `response_format`; the offline backend calls `offline` directly;
the simulator server receives the messages over HTTP, finds the task by the schema's name and
the inputs in the user messages, and answers with `offline` — so the real client is
tested end to end without a real model.

The conversation formats every backend must agree on live here too: the repair request sent
after an invalid reply, and the `select_tool` task that answers tool-calling chats offline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

from pipelines.records import ToolCall

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)

INPUT_FENCE = re.compile(r"<inputs>\s*(\{.*\})\s*</inputs>", re.S)
REPAIR_REQUEST = "Your previous reply is not valid for the required JSON schema."
SELECT_TOOL = "select_tool"


class LLMTask(Generic[In, Out]):
    """Subclass per task: set name, input_model, output_model, instructions; implement offline."""

    name: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    output_model: ClassVar[type[BaseModel]]
    instructions: ClassVar[str]
    temperature: ClassVar[float] = 0.0
    max_tokens: ClassVar[int | None] = None
    """Cap on the reply; None leaves the server's default (a runaway JSON reply then runs long)."""

    def messages(self, inputs: In) -> list[dict[str, str]]:
        payload = inputs.model_dump_json(indent=None)
        return [
            {"role": "system", "content": self.instructions.strip()},
            {"role": "user", "content": f"<inputs>\n{payload}\n</inputs>\nAnswer with JSON only, following the schema."},
        ]

    def json_schema(self) -> dict:
        return {"name": self.name, "strict": True, "schema": _schema_of(self.output_model)}

    def offline(self, inputs: In) -> Out:
        raise NotImplementedError

    def inputs_from_messages(self, messages: list[dict]) -> In:
        """Recover the inputs from the messages `messages()` rendered (the simulator's side of the
        contract). Override together with `messages` when a task renders its inputs differently."""
        for text in _user_texts(messages):
            match = INPUT_FENCE.search(text)
            if match:
                return self.input_model.model_validate(json.loads(match.group(1)))
        raise ValueError(f"no <inputs> block for task {self.name!r} in the user messages")


@lru_cache(maxsize=None)
def _schema_of(model: type[BaseModel]) -> dict:
    """pydantic rebuilds a schema on every call; a request needs it several times (body, cache key)."""
    return model.model_json_schema()


TASKS: dict[str, LLMTask] = {}


def register(task_class: type[LLMTask]) -> type[LLMTask]:
    """Class decorator: make a task discoverable by name (the simulator dispatches on it)."""
    TASKS[task_class.name] = task_class()
    return task_class


def inputs_from_messages(task: LLMTask, messages: list[dict]) -> BaseModel:
    """Recover a task's inputs from the messages it rendered (used by the simulator)."""
    return task.inputs_from_messages(messages)


def repair_messages(messages: list[dict], reply: str, error: str) -> list[dict]:
    """The conversation plus the invalid reply and why it is invalid, asking for corrected JSON."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": f"{REPAIR_REQUEST}\nError: {error}\nReply again with the corrected JSON only."},
    ]


def is_repair_request(messages: list[dict]) -> bool:
    last = next(_user_texts(messages), "")
    return last.startswith(REPAIR_REQUEST)


def select_tool_offline(messages: list[dict], tools: list[dict]) -> list[ToolCall]:
    """Answer a tool-calling chat with the registered `select_tool` task.

    Its contract: inputs `{"question": <last user message>, "tools": [<tool names>]}`, output
    `{"name", "arguments"}`. Raises NotImplementedError when no such task is registered.
    """
    task = TASKS.get(SELECT_TOOL)
    if task is None:
        raise NotImplementedError(f"no {SELECT_TOOL!r} task is registered, so tool calls cannot be answered offline")
    names = [tool["function"]["name"] for tool in tools]
    inputs = task.input_model.model_validate({"question": next(_user_texts(messages), ""), "tools": names})
    choice = task.offline(inputs)
    return [ToolCall(name=choice.name, arguments=choice.arguments)]


def _user_texts(messages: list[dict]) -> Iterator[str]:
    """Text of the user messages, last first (content may be a string or a list of parts)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            yield content if isinstance(content, str) else " ".join(p.get("text", "") for p in content or [])
