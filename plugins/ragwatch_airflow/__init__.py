"""Airflow adapters for ragwatch: connections and pools in, plain `pipelines` calls out."""
