"""ragwatch: honest, scheduled evaluation of RAG assistants (the Airflow-free library)."""

__version__ = "0.1.0"
