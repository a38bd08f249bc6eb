#!/usr/bin/env bash
# Start the local Redis and PostgreSQL the tests talk to, if they are not already up.
# Uses the same commands the machine image uses; does nothing to servers already running.
set -u
if command -v redis-cli >/dev/null 2>&1; then
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    echo "services: starting Redis on 127.0.0.1:6379"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || echo "services: could not start Redis"
    for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
  fi
fi
if command -v pg_isready >/dev/null 2>&1; then
  if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
    echo "services: starting PostgreSQL on 127.0.0.1:5432"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start \
      || echo "services: could not start PostgreSQL"
    for _ in $(seq 1 100); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 0.1; done
  fi
fi
# The browser tests drive Debian's Chromium; install it when we are root and it is missing.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "services: installing chromium for the browser tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "services: could not install chromium"
fi
# Hosted bots run in bubblewrap's sandbox (arena/sandbox); install it when we are root and it is missing.
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "services: installing bubblewrap for the hosted-bot sandbox"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) \
    || echo "services: could not install bubblewrap"
fi
exit 0
