#!/bin/sh
# Superset's start in docker-compose, the same steps `pathwatch stack up` takes: metadata
# schema, admin (password from .env, on stdin), roles, then gunicorn with the stack's worker settings.
# The TimescaleDB (as database "pathwatch", through the read-only role) and the dashboards come
# from the compose service `dashboards` (`pathwatch dashboards import`), as in `stack up`.
set -eu
superset db upgrade
# The admin's password goes on stdin (printf is the shell's own), never on a command line.
printf '%s\n' "$PATHWATCH_SUPERSET_PASSWORD" | python /app/pathwatch/set_admin.py "$PATHWATCH_SUPERSET_ADMIN"
superset init
exec gunicorn -w 2 -k gthread --threads 4 --timeout 120 -b 0.0.0.0:8088 "superset.app:create_app()"
