# Superset configuration for pathwatch, shared by `pathwatch stack up` and docker-compose.yml
# (SUPERSET_CONFIG_PATH points here). Secrets and paths come from the environment:
#   SUPERSET_SECRET_KEY     generated once by the stack (or from .env for docker compose)
#   SUPERSET_METADATA_URI   where Superset keeps its own metadata (SQLite is fine)
#   SUPERSET_HOME           Superset's data folder
#   SUPERSET_BEHIND_TLS_PROXY  "1" when a reverse proxy terminates TLS in front of it (the stack's
#                           setting superset_behind_tls_proxy; see SECURITY.md)
import os

SECRET_KEY = os.environ["SUPERSET_SECRET_KEY"]
SQLALCHEMY_DATABASE_URI = os.environ["SUPERSET_METADATA_URI"]
DATA_DIR = os.environ["SUPERSET_HOME"]
# Plain http (127.0.0.1, or behind a proxy that terminates TLS): no HTTPS redirects.
TALISMAN_ENABLED = False
WTF_CSRF_ENABLED = True
# Behind a TLS-terminating proxy: take the scheme and client address from its X-Forwarded-*
# headers (only then: directly reachable, a client could forge them) and send the session
# cookie over HTTPS only.
BEHIND_TLS_PROXY = os.environ.get("SUPERSET_BEHIND_TLS_PROXY", "0") == "1"
ENABLE_PROXY_FIX = BEHIND_TLS_PROXY
SESSION_COOKIE_SECURE = BEHIND_TLS_PROXY
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
PREFERRED_URL_SCHEME = "https" if BEHIND_TLS_PROXY else "http"
# The dashboards' virtual datasets read the "Site (either end)" filter with Jinja
# (filter_values('site', remove_filter=True)) to match a path by either end's site.
# Dashboards draw every chart at once, not only those scrolled into view: a wall display shows
# them all, and the browser test waits for them all.
FEATURE_FLAGS = {"ENABLE_TEMPLATE_PROCESSING": True, "DASHBOARD_VIRTUALIZATION": False}
