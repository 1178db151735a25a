"""`python -m pipelines.cli`: what the tests, the DAG-side scripts and the local stack run."""

from pipelines.cli import app

app()
