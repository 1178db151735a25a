#!/usr/bin/env bash
# airflow-init (docker-compose.yml): runs to completion before any other Airflow service
# starts, on every `docker compose up`. Safe to rerun: every step converges, none appends.
#
# It migrates and creates the admin user itself instead of through the image entrypoint's
# _AIRFLOW_DB_MIGRATE / _AIRFLOW_WWW_USER_CREATE, which run `... || true`: a failed migration
# would go unnoticed, and a password changed in .env would never reach an existing user.
set -euo pipefail

# .env.example ships placeholders; refuse to start a stack whose secrets are still those,
# before anything (the admin password included) is written with them.
placeholders=$(env | awk -F= '/change-me/ {print $1}' | sort | tr '\n' ' ')
if [ -n "$placeholders" ]; then
  echo "placeholder secrets in .env (values containing 'change-me') reach: $placeholders" >&2
  echo "generate real ones with: deploy/make-env.sh > .env" >&2
  exit 1
fi

airflow db migrate

# .env is the source of truth for the admin account: create it once, then keep its password
# in step with AIRFLOW_ADMIN_PASSWORD.
admin=${AIRFLOW_ADMIN_USERNAME:?AIRFLOW_ADMIN_USERNAME is not set}
case "${AIRFLOW__CORE__AUTH_MANAGER:-}" in
  *FabAuthManager)  # docker-compose.yml: users live in the metadata DB
    if airflow users list -o json | python -c '
import json, sys
sys.exit(0 if sys.argv[1] in {u["username"] for u in json.load(sys.stdin)} else 1)' "$admin"; then
      airflow users reset-password --username "$admin" --password "${AIRFLOW_ADMIN_PASSWORD:?}" >/dev/null
    else
      airflow users create --username "$admin" --password "${AIRFLOW_ADMIN_PASSWORD:?}" --role Admin \
        --firstname ragwatch --lastname admin --email "${AIRFLOW_ADMIN_EMAIL:-admin@example.invalid}" >/dev/null
    fi
    ;;
  *SimpleAuthManager)  # `make up` (deploy/local_stack/): the simple auth manager's passwords file
    [[ "${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS:-}" == "$admin:admin" ]] \
      || { echo "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS must be $admin:admin" >&2; exit 1; }
    passwords=${AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE:?set the simple auth manager passwords file}
    : "${AIRFLOW_ADMIN_PASSWORD:?}"  # read from the environment, never from the command line
    (umask 077 && python -c 'import json, os
print(json.dumps({os.environ["AIRFLOW_ADMIN_USERNAME"]: os.environ["AIRFLOW_ADMIN_PASSWORD"]}))' >"$passwords.tmp")
    mv "$passwords.tmp" "$passwords"
    ;;
  *)
    echo "unsupported AIRFLOW__CORE__AUTH_MANAGER: ${AIRFLOW__CORE__AUTH_MANAGER:-(unset)}" >&2
    exit 1
    ;;
esac

# DVC fails at once when another DVC process holds the repository lock: one slot.
airflow pools set ragwatch_dvc 1 "DVC holds a repository lock: one DVC task at a time"
# Model calls in flight against the vLLM servers; size it to their batch capacity.
airflow pools set ragwatch_llm "${RAGWATCH_LLM_POOL_SLOTS:-4}" "Model calls: batches in flight against the vLLM servers"
airflow pools list
