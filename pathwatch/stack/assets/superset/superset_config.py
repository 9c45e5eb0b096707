# Superset configuration for pathwatch, shared by `pathwatch stack up` and docker-compose.yml
# (SUPERSET_CONFIG_PATH points here). Secrets and paths come from the environment:
#   SUPERSET_SECRET_KEY     generated once by the stack (or from .env for docker compose)
#   SUPERSET_METADATA_URI   where Superset keeps its own metadata (SQLite is fine)
#   SUPERSET_HOME           Superset's data folder
import os

SECRET_KEY = os.environ["SUPERSET_SECRET_KEY"]
SQLALCHEMY_DATABASE_URI = os.environ["SUPERSET_METADATA_URI"]
DATA_DIR = os.environ["SUPERSET_HOME"]
# Plain http (127.0.0.1, or behind a proxy that terminates TLS): no HTTPS redirects.
TALISMAN_ENABLED = False
WTF_CSRF_ENABLED = True
# The dashboards' virtual datasets read the "Site (either end)" filter with Jinja
# (filter_values('site', remove_filter=True)) to match a path by either end's site.
# Dashboards draw every chart at once, not only those scrolled into view: a wall display shows
# them all, and the browser test waits for them all.
FEATURE_FLAGS = {"ENABLE_TEMPLATE_PROCESSING": True, "DASHBOARD_VIRTUALIZATION": False}
