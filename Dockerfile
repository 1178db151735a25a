# The ragwatch Airflow image: every Airflow service of docker-compose.yml runs it.
#
# Why the official Airflow image and not python:3.11-slim: it already carries what a
# CeleryExecutor deployment needs and what we would otherwise rebuild by hand and keep in step
# with Airflow (the entrypoint that migrates the DB and creates the admin user, the celery, fab
# and postgres providers, git for DVC, a non-root `airflow` user, dumb-init). We only add
# ragwatch on top, the way Airflow documents extending its image.
ARG AIRFLOW_VERSION=3.3.2
FROM apache/airflow:${AIRFLOW_VERSION}-python3.11

ARG AIRFLOW_VERSION
# constraints.txt pins torch's CPU build (`+cpu`), which lives on PyTorch's own index: the
# workers call vLLM over HTTP and never need CUDA wheels (several GB).
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV RAGAS_DO_NOT_TRACK=true \
    GX_ANALYTICS_ENABLED=false \
    DVC_NO_ANALYTICS=1 \
    RAGWATCH_HOME=/opt/ragwatch/home \
    RAGWATCH_WORKSPACE=/opt/ragwatch/workspace

USER root
# Named volumes mounted here inherit this ownership, so the airflow user can write to them.
RUN mkdir -p /opt/ragwatch/src /opt/ragwatch/home /opt/ragwatch/workspace \
 && chown -R airflow:0 /opt/ragwatch
USER airflow

WORKDIR /opt/ragwatch/src
COPY --chown=airflow:0 pyproject.toml README.md constraints.txt ./
COPY --chown=airflow:0 pipelines ./pipelines
# The harness, for `ragwatch demo seed` (deploy/README.md: the stand-in trace store filled with demo
# traffic); it adds no dependency of its own.
COPY --chown=airflow:0 harness ./harness
# The tested dependency set (constraints.txt) on top of the image's Airflow, which stays at
# exactly ${AIRFLOW_VERSION} (Airflow's advice: name it so pip never up- or downgrades it).
# ragwatch's dependencies include dvc-s3, the DVC remote driver for MinIO/S3. `pip check` fails the
# build if our pins break one of the image's providers, rather than letting a worker find out at run time.
RUN pip install --no-cache-dir --extra-index-url "${TORCH_INDEX_URL}" -c constraints.txt \
        "apache-airflow==${AIRFLOW_VERSION}" ".[airflow]" ./harness \
 && pip check \
 && git --version && dvc version >/dev/null

COPY --chown=airflow:0 dags /opt/airflow/dags
COPY --chown=airflow:0 plugins /opt/airflow/plugins
COPY --chown=airflow:0 deploy/airflow/init.sh /opt/ragwatch/airflow-init.sh
WORKDIR /opt/airflow
