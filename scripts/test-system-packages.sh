#!/usr/bin/env bash
# Install what the tests need from Debian's packages, when missing: the servers they start on loopback
# (Redis, PostgreSQL), the browser they drive (Chromium; Playwright cannot download one here) and the
# openssl command that makes the TLS upstream's certificate (tests/providers/test_transport.py).
# The tests start and stop their own instances (tests/servers.py); nothing here starts a service.
set -euo pipefail
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing+=(postgresql)
command -v chromium >/dev/null || missing+=(chromium)
command -v openssl >/dev/null || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The package starts its own instances as services; the tests need none of them.
$sudo service redis-server stop >/dev/null 2>&1 || true
$sudo service postgresql stop >/dev/null 2>&1 || true
