# Superset for docker-compose: the official (lean) image plus the PostgreSQL driver, pinned as
# in stack/assets/superset/requirements.txt.
ARG SUPERSET_IMAGE=apache/superset:6.1.0
FROM ${SUPERSET_IMAGE}
USER root
RUN . /app/.venv/bin/activate && uv pip install --no-cache psycopg2-binary==2.9.13
COPY docker/superset-start.sh /app/pathwatch/superset-start.sh
COPY stack/assets/superset/superset_config.py /app/pathwatch/superset_config.py
COPY stack/assets/superset/set_admin.py /app/pathwatch/set_admin.py
USER superset
