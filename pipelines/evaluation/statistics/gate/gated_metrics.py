"""Which metrics a run's gate decides on: one list for the gate, the releases it pins and the
CLI."""

GATED_METRICS = [
    "recall@5",
    "mrr",
    "faithfulness",
    "answer_relevancy",
    "context_precision_ranked",
    "context_recall",
    "answer_correctness",
    "tool_selection_accuracy",
    "tool_call_accuracy",
]
"""Metrics a run is gated on. The tool metrics are scored per tool item only (a question that
expects no tool has no tool score), so the gate pairs them over the tool items both runs scored."""

TOOL_METRICS = ("tool_selection_accuracy", "tool_call_accuracy")
FULL_EVAL_METRICS = [m for m in GATED_METRICS if m not in TOOL_METRICS]
"""The gated metrics every full offline eval scores (the tool metrics only where the golden set has
tool items): a run that lacks one of them is a partial release (`ragwatch eval pin --partial`)."""
