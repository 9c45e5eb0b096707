#!/bin/sh
# Superset's start in docker-compose, the same steps `pathwatch stack up` takes: metadata
# schema, admin (password from .env), roles, the TimescaleDB as database "pathwatch" (through
# the read-only role), then gunicorn with the stack's worker settings.
set -eu
superset db upgrade
superset fab create-admin --username "$PATHWATCH_SUPERSET_ADMIN" --firstname pathwatch --lastname admin \
  --email "$PATHWATCH_SUPERSET_ADMIN@localhost" --password "$PATHWATCH_SUPERSET_PASSWORD" || true
superset fab reset-password --username "$PATHWATCH_SUPERSET_ADMIN" --password "$PATHWATCH_SUPERSET_PASSWORD"
superset init
superset set-database-uri --database_name pathwatch \
  --uri "postgresql+psycopg2://${PATHWATCH_DATABASE_READONLY_USER:-pathwatch_ro}:${PATHWATCH_DB_READONLY_PASSWORD}@timescaledb:5432/pathwatch"
exec gunicorn -w 2 -k gthread --threads 4 --timeout 120 -b 0.0.0.0:8088 "superset.app:create_app()"
