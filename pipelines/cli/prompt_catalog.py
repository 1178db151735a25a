"""Every prompt ragwatch sends to a model, listed explicitly in one registry.

The simulator answers a request by looking its prompt up here; listing the prompts by hand (not
collecting whatever modules happened to be imported) means `ragwatch simulate-llm`, started on
its own, answers golden generation, the reference RAG and every ragas judge request alike. A
new prompt is added to this list, and `tests/test_prompts.py` fails until it is.
"""

from __future__ import annotations

from pipelines.evaluation.metrics.correctness import AnswerCorrectnessPrompt
from pipelines.evaluation.metrics.judge_prompts import judge_prompts
from pipelines.evaluation.runs.rag_prompt import RagAnswerPrompt
from pipelines.golden.prompts import (
    AdversarialQuestion,
    AnswerFromContexts,
    ChunkQuestions,
    ClosedBookAnswer,
    GroundingJudge,
    MultiHopQuestion,
    ToolQuestion,
)
from pipelines.models.prompts import PromptRegistry


def all_prompts() -> PromptRegistry:
    # ragas is imported only here, when a registry is built: it is slow to import.
    from pipelines.models.ragas_adapter import ragas_prompts

    golden = [
        ChunkQuestions(),
        MultiHopQuestion(),
        AdversarialQuestion(),
        AnswerFromContexts(),
        ToolQuestion(),
        ClosedBookAnswer(),
        GroundingJudge(),
    ]
    return PromptRegistry(
        [*golden, RagAnswerPrompt(), AnswerCorrectnessPrompt(), *judge_prompts(), *ragas_prompts()]
    )
