"""Which metrics a run's gate decides on: one list for the gate, the releases it pins and the CLI."""

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
"""Metrics a run is gated on. The tool metrics are scored per tool item only (a question that expects no tool
has no tool score), so the gate pairs them over the tool items both runs scored."""
