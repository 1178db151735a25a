"""The corpus stage: read documents, split them into chunks with stable ids, index them, tell
Airflow.

Indexing itself lives in `pipelines.stores.corpus`; the `Chunk` contract in
`pipelines.core.records`.
"""
