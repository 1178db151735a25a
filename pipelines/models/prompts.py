"""What a model is asked to do, as typed prompts that every backend can run, and the registry of
them.

A `Prompt` names its input and output models, renders chat messages for a real LLM, and has a
deterministic `offline` answer. The OpenAI-compatible client sends the messages with the output's
JSON schema as `response_format`; the offline backend calls `offline` directly; the simulator
receives the messages over HTTP, looks the prompt up by the schema's name in the `PromptRegistry`
it was given, recovers the inputs from the user messages and answers with `offline` — so the real
client is tested end to end without a real model.

The registry is filled explicitly (`pipelines.cli.prompt_catalog.all_prompts()` lists every prompt
ragwatch sends), never by the side effect of importing a module.

The repair request sent after an invalid reply is a conversation format every backend must agree
on, so it lives here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import ClassVar, Generic, TypeVar

from pydantic import BaseModel

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)

INPUT_FENCE = re.compile(r"<inputs>\s*(\{.*\})\s*</inputs>", re.S)
REPAIR_REQUEST = "Your previous reply is not valid for the required JSON schema."
SAMPLE_NOTE = "Independent sample {number} of this request."
"""A system message set before a prompt's messages when one of several samples is asked for on its
own (a server that ignores OpenAI's `n`, ragas asking N times): no cache then collapses the samples
into one, and an offline answer knows which sample to give (`sample_index`)."""
SAMPLE_NOTE_PATTERN = re.compile(r"^Independent sample (\d+) of this request\.$")


class Prompt(Generic[In, Out]):
    """Subclass per prompt: set name, input_model, output_model, instructions; implement offline."""

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
            {
                "role": "user",
                "content": f"<inputs>\n{payload}\n</inputs>\nAnswer with JSON only, following the schema.",
            },
        ]

    def json_schema(self) -> dict:
        return {"name": self.name, "strict": True, "schema": _schema_of(self.output_model)}

    def offline(self, inputs: In) -> Out:
        raise NotImplementedError

    def offline_sample(self, inputs: In, index: int) -> Out:
        """Sample `index` of several asked for at once (`LLM.run_samples`, OpenAI's `n`). A prompt
        whose samples should differ offline overrides this; by default every sample is the one
        answer."""
        return self.offline(inputs)

    def inputs_from_messages(self, messages: list[dict]) -> In:
        """Recover the inputs from the messages `messages()` rendered (the simulator's side of the
        contract). Override together with `messages` when a prompt renders its inputs
        differently."""
        for text in user_texts(messages):
            match = INPUT_FENCE.search(text)
            if match:
                return self.input_model.model_validate(json.loads(match.group(1)))
        raise ValueError(f"no <inputs> block for prompt {self.name!r} in the user messages")


@lru_cache(maxsize=None)
def _schema_of(model: type[BaseModel]) -> dict:
    """pydantic rebuilds a schema on every call; a request needs it several times (body, cache
    key)."""
    return model.model_json_schema()


class UnknownPrompt(LookupError):
    pass


class PromptRegistry:
    """Prompts by name, as a server answering ragwatch's requests needs them."""

    def __init__(self, prompts: Iterable[Prompt] = ()):
        self._prompts: dict[str, Prompt] = {}
        for prompt in prompts:
            self.add(prompt)

    def add(self, prompt: Prompt) -> None:
        known = self._prompts.get(prompt.name)
        if (
            known is not None
            and type(known) is not type(prompt)
            and known.output_model is not prompt.output_model
        ):
            raise ValueError(f"two different prompts are named {prompt.name!r}")
        self._prompts.setdefault(prompt.name, prompt)

    def get(self, name: str) -> Prompt:
        try:
            return self._prompts[name]
        except KeyError:
            raise UnknownPrompt(
                f"unknown prompt {name!r}; known: {', '.join(self.names) or 'none'}"
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self._prompts

    @property
    def names(self) -> list[str]:
        return sorted(self._prompts)


def sample_index(messages: list[dict]) -> int:
    """The 0-based sample a conversation asks for (its SAMPLE_NOTE), 0 when it names none."""
    for message in messages:
        if message.get("role") == "system" and (
            note := SAMPLE_NOTE_PATTERN.match(str(message.get("content") or ""))
        ):
            return int(note.group(1)) - 1
    return 0


def repair_messages(messages: list[dict], reply: str, error: str) -> list[dict]:
    """The conversation plus the invalid reply and why it is invalid, asking for corrected JSON."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": f"{REPAIR_REQUEST}\nError: {error}\nReply again with the corrected JSON only.",
        },
    ]


def is_repair_request(messages: list[dict]) -> bool:
    last = next(user_texts(messages), "")
    return last.startswith(REPAIR_REQUEST)


def user_texts(messages: list[dict]) -> Iterator[str]:
    """Text of the user messages, last first (content may be a string or a list of parts)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            yield (
                content
                if isinstance(content, str)
                else " ".join(p.get("text", "") for p in content or [])
            )
