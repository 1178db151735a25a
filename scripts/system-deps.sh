#!/usr/bin/env bash
# Installs the Debian packages ragwatch's demo and tests run for real, when they are missing.
set -euo pipefail
missing=()
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
command -v prometheus-pushgateway >/dev/null || missing+=(prometheus-pushgateway)
command -v git >/dev/null || missing+=(git)
# promtool (checks and unit-tests the alert rules) ships in Debian's prometheus package.
command -v promtool >/dev/null || missing+=(prometheus)
# `make up EXECUTOR=celery` (and tests/integration/test_stack.py's session stack): the Celery broker.
command -v redis-server >/dev/null || missing+=(redis-server)
# tests/integration/test_compose.py validates docker-compose.yml with `docker-compose config`.
command -v docker-compose >/dev/null || missing+=(docker-compose)
# tests/integration/test_stack.py backfills from the Airflow UI in headless Chromium, driven by its Debian driver.
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# `ragwatch bench anonymize` measures clean-text rates on this machine's documentation: Spanish man pages.
[ -d /usr/share/man/es ] || missing+=(manpages-es)
command -v man >/dev/null || missing+=(man-db)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts a system cluster and service on install; ragwatch starts its own, on demand.
$sudo systemctl disable --now postgresql prometheus-pushgateway prometheus redis-server >/dev/null 2>&1 || true
# Without systemd, Debian's init scripts may have started what was just installed: stop only those.
for pkg in "${missing[@]}"; do $sudo service "$pkg" stop >/dev/null 2>&1 || true; done
