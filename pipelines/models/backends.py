"""Which backend a role gets: the offline one or the OpenAI-compatible client, as the settings say.

Apart from `llm.py` so that the base module never imports a backend built on it.
"""

from __future__ import annotations

import logging
from typing import Literal

from pipelines.core.settings import Settings
from pipelines.models.cache import open_llm_cache
from pipelines.models.llm import LLM, OfflineLLM

log = logging.getLogger(__name__)
SELF_PREFERENCE = (
    "self-preference bias: the judge favours its own generations; use a different judge model"
)


def build_llm(settings: Settings, role: Literal["generator", "judge"]) -> LLM:
    """The configured backend for a role. The offline backend gets no cache: its code can change
    under the same model name, and a cached offline answer would then be stale."""
    if role not in ("generator", "judge"):
        raise ValueError(f"unknown model role {role!r}; expected 'generator' or 'judge'")
    if settings.llm_backend == "offline":
        llm = OfflineLLM()
        llm.role = role
        return llm
    from pipelines.models.openai_compatible import (
        OpenAICompatibleLLM,
    )  # the HTTP client's modules only when used

    llm = OpenAICompatibleLLM(getattr(settings, role), open_llm_cache(settings))
    llm.role = role
    return llm


def check_models_differ(settings: Settings, logger: logging.Logger = log) -> bool:
    """Warn when the judge is the generator's model; False then. The offline backend's judgements
    are lexical rules, not a model grading its own text, so it is not flagged."""
    if settings.llm_backend == "offline":
        return True
    generator, judge = settings.generator.model, settings.judge.model
    if generator.strip().lower() != judge.strip().lower():
        return True
    logger.warning("generator and judge are the same model (%s): %s", generator, SELF_PREFERENCE)
    return False
