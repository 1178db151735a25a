"""`ragwatch ...`: one subcommand per step, plus the demo and the benchmarks (`pipelines.cli:app`)."""

from pipelines.cli.main import app

__all__ = ["app"]
