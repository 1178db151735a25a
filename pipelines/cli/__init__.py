"""`ragwatch ...`: one subcommand per step (`pipelines.cli:app`), plus the groups other packages
register."""

from pipelines.cli.main import app

__all__ = ["app"]
