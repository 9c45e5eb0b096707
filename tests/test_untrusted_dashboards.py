"""Hostile host and hop names in the dashboards (issue 19, item 3).

Without a stack: the HTML the dashboards' tables render is built in SQL from host names and must
escape them. The anomaly and incident tables render their link columns as HTML
(``allow_render_html``). Each such column's expression is evaluated here on hostile paths (SQLite
has PostgreSQL's ``replace``, ``||`` and quoting) and the result parsed as a browser would: one
``<a>`` and nothing else, its text exactly the path, its link the Path explorer filtered on exactly
that path (the same filter as the tickets' link, :func:`pathwatch.tickets.body.path_explorer_url`).

On the stack (marker ``stack``): the session's stream (tests/stack/streamed.py) carries a path to
``HOSTILE_HOST`` whose traces name hostile hops (markup, SQL, 10 kB of Unicode). They are stored
verbatim; and headless Chromium opens every dashboard, and the Path explorer filtered on that path,
with a sentinel — no dialog opens, no script sets ``window.__pwned``, no element the markup would
make exists, the path shows as text, and nothing is pushed wider than the window.
"""

from __future__ import annotations

import sqlite3
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from pathwatch.dashboards.bundle import read_bundle
from pathwatch.tickets.body import path_explorer_url
from tests.stack.dashboards_check import DASHBOARDS, chart_ids_on
from tests.stack.dashboards_check import site  # noqa: F401  (the fixture)
from tests.stack.streamed import HOSTILE_HOPS, HOSTILE_HOST
from tests.untrusted import HOSTILE, MARKUP, SQLISH, unicode_10k

FILES = read_bundle()
DATASETS = {d["table_name"]: d for p, d in FILES.items() if p.startswith("datasets/")}
HTML_CHARTS = [d for p, d in FILES.items() if p.startswith("charts/") and d["params"].get("allow_render_html")]
PATHS = [f"ps1.a.example → {MARKUP}", f"{SQLISH} → b", 'a"onmouseover="x → b&c=1#f+g%20h!i', unicode_10k()[:300]]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], ""

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text += data


def _render(expression: str, **columns: str) -> str:
    names = ", ".join(f"? AS {name}" for name in columns)
    with sqlite3.connect(":memory:") as connection:
        return connection.execute(f"SELECT {expression} FROM (SELECT {names})", list(columns.values())).fetchone()[0]


def _html_columns() -> list[tuple[str, str]]:
    """(dataset, column) of every column an HTML-rendering table shows that builds markup."""
    found = []
    for chart in HTML_CHARTS:
        dataset = next(d for d in DATASETS.values() if str(d["uuid"]) == str(chart["dataset_uuid"]))
        for column in dataset["columns"]:
            if column["column_name"] in chart["params"].get("all_columns", []) and "<a" in (column.get("expression") or ""):
                found.append((dataset["table_name"], column["column_name"]))
    return sorted(set(found))


def test_the_html_tables_show_these_link_columns():
    assert _html_columns() == [("anomalies", "path_link"), ("anomalies", "ticket_link"),
                               ("incidents", "root_path_link"), ("incidents", "ticket_link")]


def _expression(table: str, column: str) -> str:
    return next(c["expression"] for c in DATASETS[table]["columns"] if c["column_name"] == column)


@pytest.mark.parametrize("path", PATHS, ids=["markup", "sql", "attribute-and-url", "unicode"])
@pytest.mark.parametrize("table,column,source", [("anomalies", "path_link", "path"), ("incidents", "root_path_link", "root_path")])
def test_a_path_link_is_one_link_whose_text_and_filter_are_the_path(table, column, source, path):
    html = _render(_expression(table, column), **{source: path})
    parsed = _Tags()
    parsed.feed(html)
    parsed.close()
    assert [tag for tag, _ in parsed.tags] == ["a"], html
    assert parsed.text == path
    href = parsed.tags[0][1]["href"]
    assert set(parsed.tags[0][1]) == {"href"}
    expected = path_explorer_url("http://s", *path.split(" → ", 1)) if " → " in path else None
    native = parse_qs(urlsplit(href).query)["native_filters"]   # decodes as URLSearchParams does (+ is a space)
    if expected:
        assert native == parse_qs(urlsplit(expected).query)["native_filters"]
    assert f"'{path.replace('!', '!!').replace(chr(39), '!' + chr(39))}'" in native[0]


@pytest.mark.parametrize("table", ["anomalies", "incidents"])
def test_a_ticket_link_escapes_its_reference_and_address(table):
    expression = _expression(table, "ticket_link")
    html = _render(expression, ticket=MARKUP, ticket_url='http://rt/x?a=1&b="><script>')
    parsed = _Tags()
    parsed.feed(html)
    assert [tag for tag, _ in parsed.tags] == ["a"] and parsed.text == MARKUP
    assert parsed.tags[0][1] == {"href": 'http://rt/x?a=1&b="><script>'}
    plain = _Tags()
    plain.feed(_render(expression, ticket=MARKUP, ticket_url=None))
    assert plain.tags == [] and plain.text == MARKUP


# --- through the pipeline into TimescaleDB and Superset (marker stack) ----------------------------

def _rows(stream, sql: str, args=()) -> list[tuple]:
    import psycopg

    with psycopg.connect(stream["settings"].database_url) as connection:
        return connection.execute(sql, args).fetchall()


def _source(stream) -> str:
    return orjson.loads(stream["hostile"][0])["source"]


@pytest.mark.stack
def test_hostile_host_and_hop_names_are_stored_verbatim(stream):
    traces = _rows(stream, "SELECT count(*) FROM trace WHERE source = %s AND destination = %s",
                   (_source(stream), HOSTILE_HOST))[0][0]
    assert traces == len(stream["hostile"]) + 1           # and the tail that moved the watermark
    names = {row[0] for row in _rows(stream, "SELECT hostname FROM trace_hops WHERE hostname = ANY(%s)",
                                     (list(HOSTILE) + list(HOSTILE_HOPS),))}
    assert names == set(HOSTILE) | set(HOSTILE_HOPS)
    owners = {row[0] for row in _rows(stream, "SELECT as_owner FROM trace_hops WHERE as_owner = ANY(%s)", (list(HOSTILE),))}
    assert owners == set(HOSTILE)
    addresses = {row[0] for row in _rows(stream, "SELECT ip FROM trace_hops WHERE ip = ANY(%s)", (list(HOSTILE_HOPS),))}
    assert addresses == set(HOSTILE_HOPS)                 # tracepath without -n: the name is the address
    assert _rows(stream, "SELECT to_regclass('anomalies') IS NOT NULL")[0][0]   # the SQL-ish names dropped nothing
    letters = _rows(stream, "SELECT count(*) FROM dead_letters WHERE strpos(input, %s) > 0", (HOSTILE_HOST,))[0][0]
    assert letters == 0


@pytest.fixture(scope="module")
def watched(site):  # noqa: F811
    """A browser on Superset that records dialogs and page errors (a dialog is dismissed)."""
    from tests.stack.dashboards_check import Browser

    shots = site["home"] / "logs" / "screenshots" / "untrusted"
    session = Browser(site["url"], site["user"], site["password"], shots)
    session.dialogs, session.errors = [], []
    session.page.on("dialog", lambda dialog: (session.dialogs.append(dialog.message), dialog.dismiss()))
    session.page.on("pageerror", lambda error: session.errors.append(str(error)))
    yield session
    session.close()


def _layout(page) -> dict:
    return page.evaluate("""() => {
        const holders = [...document.querySelectorAll("[data-test='dashboard-component-chart-holder']")];
        return {width: window.innerWidth, scroll: document.documentElement.scrollWidth,
                rights: holders.map(h => h.getBoundingClientRect().right),
                heights: holders.map(h => h.getBoundingClientRect().height)};
    }""")


def _no_script_ran(browser, where: str, shot) -> None:
    page = browser.page
    assert browser.dialogs == [], f"{where}: a dialog opened: {browser.dialogs} ({shot})"
    assert page.evaluate("window.__pwned") is None, f"{where}: the hostile markup ran ({shot})"
    made_by_data = page.evaluate("""() => [...document.querySelectorAll("svg[onload], img[onerror], a[onmouseover]")]
        .map(n => n.outerHTML)""")
    assert made_by_data == [], f"{where}: markup from the data became elements: {made_by_data} ({shot})"
    pwned = [e for e in browser.errors if "pwned" in e or "alert" in e]
    assert pwned == [], f"{where}: {pwned} ({shot})"


def _not_wider_than_the_window(browser, where: str, shot) -> None:
    layout = _layout(browser.page)
    assert layout["scroll"] <= layout["width"] + 2, f"{where}: the page is wider than the window: {layout} ({shot})"
    assert all(right <= layout["width"] + 2 for right in layout["rights"]), f"{where}: a chart sticks out: {layout} ({shot})"
    assert all(height < 5000 for height in layout["heights"]), f"{where}: a chart grew very tall: {layout} ({shot})"


@pytest.mark.stack
@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_no_dashboard_runs_or_is_bent_by_hostile_names(site, watched, slug):  # noqa: F811
    watched.page.add_init_script("window.__pwned = undefined")
    watched.dialogs.clear()
    watched.errors.clear()
    watched.open_dashboard(slug, len(chart_ids_on(site, slug)))
    shot = watched.screenshot(slug)
    _no_script_ran(watched, slug, shot)
    _not_wider_than_the_window(watched, slug, shot)
    assert watched.chart_errors() == [], f"{slug}: error shown ({shot})"


@pytest.mark.stack
def test_the_path_explorer_on_the_hostile_path_shows_it_as_text(site, watched, stream):  # noqa: F811
    source = _source(stream)
    path = f"{source} → {HOSTILE_HOST}"
    watched.dialogs.clear()
    watched.errors.clear()
    explorer = chart_ids_on(site, "path-explorer")
    answers = watched.open(path_explorer_url(site["url"], source, HOSTILE_HOST), len(explorer))
    shot = watched.screenshot("path-explorer-hostile")
    _no_script_ran(watched, "path explorer", shot)
    _not_wider_than_the_window(watched, "path explorer", shot)
    assert watched.chart_errors() == [], f"path explorer: error shown ({shot})"
    filtered = [a for a in answers if {"col": "path", "op": "IN", "val": [path]}
                in ((a.get("request") or {}).get("queries") or [{}])[0].get("filters", [])]
    assert filtered, f"no chart was filtered on {path!r} ({shot})"
    rows = sum((a["body"].get("result") or [{}])[0].get("rowcount", 0) for a in filtered if a["status"] == 200)
    assert rows > 0, f"the charts filtered on {path!r} found nothing ({shot})"
    shown = watched.page.evaluate("document.body.innerText")
    assert HOSTILE_HOST in shown, f"the hostile path is not shown as text ({shot})"
