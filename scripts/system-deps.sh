#!/usr/bin/env bash
# Installs the Debian packages ragwatch's demo and tests run for real, when they are missing.
set -euo pipefail
missing=()
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
command -v prometheus-pushgateway >/dev/null || missing+=(prometheus-pushgateway)
command -v git >/dev/null || missing+=(git)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts a system cluster and service on install; ragwatch starts its own, on demand.
$sudo systemctl disable --now postgresql prometheus-pushgateway >/dev/null 2>&1 || true
