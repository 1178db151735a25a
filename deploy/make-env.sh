#!/usr/bin/env bash
# Prints .env.example with every `change-me` placeholder replaced by a fresh random secret:
#   deploy/make-env.sh > .env && chmod 600 .env
# Secrets are hex (URL-safe: several of them end up inside connection URLs); the Fernet key is
# the urlsafe-base64 32-byte key Airflow requires. Everything else is copied as it is.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python3 - "$root/.env.example" <<'PY'
import base64, re, secrets, sys

for line in open(sys.argv[1], encoding="utf-8"):
    match = re.match(r"^([A-Z0-9_]+)=change-me\S*$", line.rstrip("\n"))
    if match:
        key = match.group(1)
        if key == "AIRFLOW_FERNET_KEY":
            value = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
        else:
            value = secrets.token_hex(24)
        line = f"{key}={value}\n"
    sys.stdout.write(line)
PY
