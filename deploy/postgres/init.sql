-- Creates the stack's three databases and their roles on the first start of the postgres
-- container (docker-entrypoint-initdb.d runs it once, on an empty data volume, with psql).
--
--   airflow           Airflow metadata and the Celery result backend   owner: airflow
--   ragwatch_results  eval runs and scores                              owner: ragwatch
--   traces            stand-in for the production trace store: one table `traces`
--                     ragwatch_reader  SELECT on `traces` only, read-only sessions, timeout
--                     traces_writer    what the production app would hold: writes traces
--
-- Passwords come from the container's environment (docker-compose.yml passes them from .env)
-- through psql's \getenv, so no secret is written in this file. psql 15+ is needed.

\set ON_ERROR_STOP on

\getenv airflow_password AIRFLOW_DB_PASSWORD
\getenv results_password RESULTS_DB_PASSWORD
\getenv reader_password TRACES_READER_PASSWORD
\getenv writer_password TRACES_WRITER_PASSWORD

-- An unset variable would otherwise become the literal text of the password.
\if :{?airflow_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'AIRFLOW_DB_PASSWORD is not set in the postgres container'; END $$;
\endif
\if :{?results_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'RESULTS_DB_PASSWORD is not set in the postgres container'; END $$;
\endif
\if :{?reader_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'TRACES_READER_PASSWORD is not set in the postgres container'; END $$;
\endif
\if :{?writer_password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'TRACES_WRITER_PASSWORD is not set in the postgres container'; END $$;
\endif

CREATE ROLE airflow LOGIN PASSWORD :'airflow_password';
CREATE ROLE ragwatch LOGIN PASSWORD :'results_password';
CREATE ROLE traces_writer LOGIN PASSWORD :'writer_password';
-- The eval pipeline only ever reads traces: every session of this role is read-only and
-- bounded, whatever the client asks (ragwatch also sets both itself).
CREATE ROLE ragwatch_reader LOGIN PASSWORD :'reader_password' CONNECTION LIMIT 20;
ALTER ROLE ragwatch_reader SET default_transaction_read_only = on;
ALTER ROLE ragwatch_reader SET statement_timeout = '60s';
ALTER ROLE ragwatch_reader SET idle_in_transaction_session_timeout = '5min';

CREATE DATABASE airflow OWNER airflow;
CREATE DATABASE ragwatch_results OWNER ragwatch;
CREATE DATABASE traces OWNER postgres;

-- Each role reaches its own database only.
REVOKE ALL ON DATABASE airflow, ragwatch_results, traces FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE airflow TO airflow;
GRANT CONNECT, TEMPORARY ON DATABASE ragwatch_results TO ragwatch;
GRANT CONNECT ON DATABASE traces TO ragwatch_reader, traces_writer;

\connect traces

REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO ragwatch_reader, traces_writer;

-- The Trace contract's default table (DESIGN.md § Data contracts; pipelines/stores/traces.py):
-- JSON fields are JSON text, so one malformed value quarantines one row, not a batch.
CREATE TABLE public.traces (
    trace_id      varchar(128) PRIMARY KEY,
    ts            timestamptz,
    question      text,
    answer        text,
    contexts      text,
    tool_calls    text,
    model         varchar(200),
    app           varchar(200),
    language      varchar(16),
    user_feedback smallint,
    latency_ms    integer,
    metadata      text
);
CREATE INDEX ix_traces_ts ON public.traces (ts);

-- The allow-list, on the database side: one table, SELECT only.
GRANT SELECT ON public.traces TO ragwatch_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.traces TO traces_writer;
