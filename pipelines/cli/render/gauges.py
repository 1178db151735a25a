"""The gauges a Pushgateway holds, read back and printed a line per group."""

from __future__ import annotations

from rich.markup import escape

from pipelines.cli.render.console import console


def print_gauges(settings, *, suite: str, app: str | None = None) -> None:
    """The score gauges (stratum all) that the Pushgateway holds for a group, read back from it."""
    from pipelines.evaluation.outputs.push import read_back

    wanted = {"job": settings.pushgateway_job, "suite": suite, **({"app": app} if app else {})}
    # Without an app, every group of the suite (online evals push one group per app).
    groups = [
        g
        for g in read_back(settings.pushgateway_url)
        if all(g["labels"].get(k) == v for k, v in wanted.items())
        and (app or "app" not in g["labels"] or suite == "online")
    ]
    if not groups:
        console.print(f"[red]the Pushgateway at {settings.pushgateway_url} holds no group {wanted}")
        return
    for group in groups:
        values = {
            name: s["value"]
            for name, samples in group["metrics"].items()
            for s in samples
            if s["labels"].get("stratum") in ("all", None)
        }
        shown = ", ".join(
            f"{name.removeprefix('rag_').removesuffix('_score')} {value:.3f}"
            for name, value in sorted(values.items())
            if name.endswith("_score") or name == "rag_eval_gate_passed"
        )
        console.print(
            f"read back from the Pushgateway {escape(str(group['labels']))}: {escape(shown)}"
        )
