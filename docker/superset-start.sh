#!/bin/sh
# Superset's start in docker-compose, the same steps `pathwatch stack up` takes: metadata
# schema, admin (password from .env), roles, then gunicorn with the stack's worker settings.
# The TimescaleDB (as database "pathwatch", through the read-only role) and the dashboards come
# from the compose service `dashboards` (`pathwatch dashboards import`), as in `stack up`.
set -eu
superset db upgrade
superset fab create-admin --username "$PATHWATCH_SUPERSET_ADMIN" --firstname pathwatch --lastname admin \
  --email "$PATHWATCH_SUPERSET_ADMIN@localhost" --password "$PATHWATCH_SUPERSET_PASSWORD" || true
superset fab reset-password --username "$PATHWATCH_SUPERSET_ADMIN" --password "$PATHWATCH_SUPERSET_PASSWORD"
superset init
exec gunicorn -w 2 -k gthread --threads 4 --timeout 120 -b 0.0.0.0:8088 "superset.app:create_app()"
