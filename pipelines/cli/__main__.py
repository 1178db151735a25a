"""`python -m pipelines.cli`: what the tests, the DAG-side scripts and the local stack run."""

from pipelines.cli import app

if __name__ == "__main__":  # importing the package's modules (a registry walk) must not run the CLI
    app()
