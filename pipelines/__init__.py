"""ragwatch: honest, scheduled evaluation of RAG assistants (the Airflow-free library).

The stages, in the order data flows through them:

    corpus/      index the documents the assistant answers from
    traces/      sample a day of production traces, anonymize, validate and version it
    golden/      write golden questions from the corpus and the sampled traces, release them
    evaluation/  judge the assistant on a golden set (offline) and on a day's traces (online)
    stores/      where the stages keep their data: trace store, results DB, index, partitions

What they build on: core/ (settings, the data workspace, records, files, text), models/ (the LLM and
embedding clients, the offline backend) and privacy/ (PII detection and anonymization). cli/ runs
each stage by hand.
"""

__version__ = "0.1.0"
