-- Least-privilege roles for a shared XSP store on PostgreSQL (docs/deploy.md). Run as the owner of the database
-- after XSP created its tables (any `xsp` command run once as the owner creates or migrates them), and again after an
-- XSP upgrade that added tables:
--   psql "postgresql://xsp_owner@db.example/xsp" -v ON_ERROR_STOP=1 -f deploy/postgres-roles.sql
-- Then give people and machines logins in these groups, e.g.
--   CREATE ROLE gpu7 LOGIN PASSWORD '...' IN ROLE xsp_agent;
--   CREATE ROLE alice LOGIN PASSWORD '...' IN ROLE xsp_submitter;
--
-- xsp_reader     reads everything: `xsp list/show/compare/report/jobs/agents`, dashboards.
-- xsp_agent      reads; registers itself and heartbeats (agents); claims, renews and finishes jobs (jobs,
--                job_attempts); publishes results (INSERT into the evaluation tables). It cannot delete or edit any
--                stored evaluation, nor submit jobs.
-- xsp_submitter  reads; submits, cancels, retries and deletes jobs (`xsp submit`, `xsp jobs ...`, `xsp serve`'s
--                job routes). It cannot write evaluations or agents.
-- Only the owner migrates the schema, deletes evaluations and changes these grants.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'xsp_reader') THEN CREATE ROLE xsp_reader NOLOGIN; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'xsp_agent') THEN CREATE ROLE xsp_agent NOLOGIN; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'xsp_submitter') THEN CREATE ROLE xsp_submitter NOLOGIN; END IF;
END
$$;
GRANT CONNECT ON DATABASE :"DBNAME" TO xsp_reader, xsp_agent, xsp_submitter;
GRANT USAGE ON SCHEMA public TO xsp_reader, xsp_agent, xsp_submitter;
GRANT xsp_reader TO xsp_agent, xsp_submitter;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO xsp_reader;

GRANT INSERT ON evaluations, runs, predictions, level_overheads, machine_ceilings, ceilings TO xsp_agent;
GRANT INSERT, UPDATE ON agents, job_attempts TO xsp_agent;
GRANT UPDATE (state, agent_id, attempts, lease_expires_at, progress, evaluation_id, evaluation_status, error,
              error_field, started_at, finished_at) ON jobs TO xsp_agent;

GRANT INSERT, DELETE ON jobs TO xsp_submitter;
GRANT UPDATE (state, attempts, error, error_field, cancel_requested, evaluation_id, evaluation_status, started_at,
              finished_at, progress) ON jobs TO xsp_submitter;
