"""The dashboards on the test stack, for the modules that look at them (test_dashboards_stack.py,
test_untrusted_dashboards.py): the bundle's charts by uuid, the fixture ``site`` (Superset of the
session's stream, its chart ids), what a chart should show asked of the database directly, and a
Chromium session on Superset.

``expected_rows`` counts the rows a chart's query can see (its dataset's SQL, its own WHERE,
the filters the dashboard applied and the time window) with plain SQL, so that a chart that
comes back empty is only accepted when there really is nothing to show.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from pathwatch.dashboards.bundle import read_bundle

FILES = read_bundle()
DATASETS = {str(d["uuid"]): d for p, d in FILES.items() if p.startswith("datasets/")}
CHARTS = {str(d["uuid"]): d for p, d in FILES.items() if p.startswith("charts/")}
DASHBOARDS = {d["slug"]: d for p, d in FILES.items() if p.startswith("dashboards/")}


@pytest.fixture(scope="module")
def site(stream):
    """Superset on the stack that holds the session's stream: a client, its address and admin,
    the database's DSN and each bundle chart's id by uuid."""
    from pathwatch import stack
    from pathwatch.dashboards.client import Superset

    current = stack.status(stack.resolve(home=stream["home"], environ=stream["env"]))
    user, password = current.superset_credentials
    superset = Superset(current.superset_url, user, password)
    ids = {str(chart["uuid"]): chart["id"] for chart in _charts_with_uuid(superset)}
    return {"superset": superset, "url": current.superset_url, "user": user, "password": password,
            "chart_ids": ids, "database_url": current.database_url, "home": stream["home"]}


def _charts_with_uuid(superset):
    """Chart ids by uuid (the list endpoint does not show uuids; each chart's own record does)."""
    charts = []
    for chart in superset.charts():
        detail = superset.chart(chart["id"])
        charts.append({"id": chart["id"], "uuid": detail.get("uuid") or _uuid_from_export(superset, chart["id"])})
    return charts


def _uuid_from_export(superset, chart_id):
    import io
    import zipfile

    archive = superset.export_charts([chart_id])
    with zipfile.ZipFile(io.BytesIO(archive)) as handle:
        for name in handle.namelist():
            if "/charts/" in name:
                return str(yaml.safe_load(handle.read(name))["uuid"])
    return None


def chart_ids_on(site, slug: str) -> dict[int, str]:
    """Superset's id -> bundle uuid of each chart on a dashboard."""
    on_board = {item["meta"]["uuid"] for item in DASHBOARDS[slug]["position"].values()
                if isinstance(item, dict) and item.get("type") == "CHART"}
    return {site["chart_ids"][str(uuid)]: str(uuid) for uuid in on_board}

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def base_sql(dataset: dict[str, Any]) -> str:
    """The dataset's SQL without its Jinja site clause (the tests apply no site filter)."""
    return dataset["sql"].split("{%", 1)[0]


def expected_rows(database_url: str, dataset: dict[str, Any], where: str = "",
                  filters: list[dict[str, Any]] = (), window: tuple[float, float] | None = None) -> int:
    """Rows the chart's query could return, by SQL on the same views."""
    import psycopg
    from psycopg import sql

    clauses, args = [], []
    if where:
        clauses.append(sql.SQL("(" + where + ")"))
    for flt in filters:
        if flt["op"] == "IN":
            clauses.append(sql.SQL("{} = ANY(%s)").format(sql.Identifier(flt["col"])))
            args.append(list(flt["val"]))
        elif flt["op"] == "==":
            clauses.append(sql.SQL("{} = %s").format(sql.Identifier(flt["col"])))
            args.append(flt["val"])
        elif flt["op"] != "TEMPORAL_RANGE":
            raise AssertionError(f"filter op {flt['op']} not understood by the test")
    if window and dataset.get("main_dttm_col"):
        clauses.append(sql.SQL("{} >= %s AND {} < %s").format(sql.Identifier(dataset["main_dttm_col"]),
                                                               sql.Identifier(dataset["main_dttm_col"])))
        args += [datetime.fromtimestamp(window[0] / 1000, timezone.utc),
                 datetime.fromtimestamp(window[1] / 1000, timezone.utc)]
    query = sql.SQL("SELECT count(*) FROM ({}) d").format(sql.SQL(base_sql(dataset)))
    if clauses:
        query = query + sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses)
    with psycopg.connect(database_url) as connection:
        return connection.execute(query, args).fetchone()[0]


class Browser:
    """Chromium through Playwright, logged in to Superset, recording every chart-data answer."""

    def __init__(self, url: str, user: str, password: str, shots: Path):
        from playwright.sync_api import sync_playwright

        self.url, self.shots = url.rstrip("/"), shots
        shots.mkdir(parents=True, exist_ok=True)
        self.answers: list[dict[str, Any]] = []
        self._browser = None
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            self.page = self._browser.new_page(viewport={"width": 1680, "height": 1050})
            self.page.route("**/*", self._only_superset)
            self.page.on("response", self._record)
            self._log_in(user, password)
        except BaseException:
            # A Playwright left started keeps its event loop running in this thread, and every later
            # sync_playwright() would fail with "Sync API inside the asyncio loop" instead of its own error.
            self.close()
            raise

    def _only_superset(self, route) -> None:
        """Let through Superset's own pages and data, nothing else: web fonts or tiles from the
        internet would stall the page. Superset's usage log (``/superset/log/``, which its pages
        post as a beacon) is dropped too: Chromium can leave a beacon pending with no end, and
        then the page never goes quiet (1 login in 3 on the test stack)."""
        url = route.request.url
        if (url.startswith(self.url) and not url.startswith(f"{self.url}/superset/log/")) or url.startswith("data:"):
            route.continue_()
        else:
            route.abort()

    def _log_in(self, user: str, password: str, attempts: int = 3) -> None:
        """Sign in through Superset's own login form.

        The form posts with the CSRF token that the page fetches after it draws; on a busy machine
        the form can be there before the token, and Superset answers a post without one by sending
        the browser back to ``/login/?next=…``. So: wait for the page to go quiet first, and try
        again (at most ``attempts`` times) when the post still lands on the login page.
        """
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        landed = []
        for attempt in range(1, attempts + 1):
            self.page.goto(f"{self.url}/login/")
            self.page.wait_for_load_state("networkidle")
            self.page.fill("input#username, input[name=username]", user)
            self.page.fill("input#password, input[name=password]", password)
            self.page.keyboard.press("Enter")
            try:
                self.page.wait_for_url(lambda u: "/login" not in u, timeout=60_000)
                return
            except PlaywrightTimeout:
                landed.append(f"attempt {attempt}: {self.page.url} ({self.screenshot(f'login-{attempt}')})")
        raise AssertionError(f"signing in to {self.url} as {user!r} stayed on the login page: " + "; ".join(landed))

    def _record(self, response) -> None:
        if "/api/v1/chart/data" not in response.url or response.request.method != "POST":
            return
        try:
            body = response.json()
        except Exception as error:  # noqa: BLE001 - an unreadable answer is itself the finding
            body = {"unreadable": repr(error)}
        self.answers.append({"request": response.request.post_data_json, "status": response.status, "body": body})

    def open_dashboard(self, slug: str, charts: int, timeout_s: float = 120) -> list[dict[str, Any]]:
        """Open a dashboard, wait for ``charts`` chart-data answers and for every chart to draw; returns the answers."""
        return self.open(f"/superset/dashboard/{slug}/", charts, timeout_s)

    def open(self, address: str, charts: int, timeout_s: float = 120) -> list[dict[str, Any]]:
        """Open a dashboard by its address within Superset (a link's href); as ``open_dashboard``."""
        import time

        self.answers = []
        self.page.goto(self.url + address if address.startswith("/") else address)
        deadline = time.monotonic() + timeout_s
        while len({_slice_id(a) for a in self.answers} - {None}) < charts and time.monotonic() < deadline:
            self.page.wait_for_timeout(500)
        self.page.wait_for_load_state("networkidle")
        self.page.evaluate("window.scrollTo(0, 0)")
        # Charts draw after their data arrives: wait until every holder is there and none still loads.
        self.page.wait_for_function(
            """n => {
                const holders = document.querySelectorAll("[data-test='dashboard-component-chart-holder']");
                const loading = document.querySelectorAll(
                    "[data-test='dashboard-component-chart-holder'] [data-test='loading-indicator'], "
                    + "[data-test='dashboard-component-chart-holder'] .loading");
                return holders.length >= n && loading.length === 0;
            }""", arg=charts, timeout=timeout_s * 1000)
        self.page.wait_for_timeout(2000)  # ECharts animates its first draw
        return list(self.answers)

    def screenshot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def links(self, href_part: str) -> list[tuple[str, str]]:
        """(href, text) of every link on the page whose href contains ``href_part``."""
        return [tuple(pair) for pair in self.page.eval_on_selector_all(
            f"a[href*='{href_part}']", "nodes => nodes.map(n => [n.getAttribute('href'), n.innerText.trim()])")]

    def chart_errors(self) -> list[str]:
        """Texts of error alerts shown inside chart holders."""
        return self.page.eval_on_selector_all(
            "[data-test='dashboard-component-chart-holder'] [role='alert'], "
            "[data-test='dashboard-component-chart-holder'] .alert-danger",
            "nodes => nodes.map(n => n.innerText.trim()).filter(Boolean)")

    def close(self) -> None:
        try:
            if self._browser is not None:
                self._browser.close()
        finally:
            self._playwright.stop()


def _slice_id(answer: dict[str, Any]) -> int | None:
    request = answer.get("request") or {}
    return (request.get("form_data") or {}).get("slice_id")


def slice_id(answer: dict[str, Any]) -> int | None:
    return _slice_id(answer)
