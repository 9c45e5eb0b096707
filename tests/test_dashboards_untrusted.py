"""Hostile host and hop names through the real pipeline into TimescaleDB and Superset (issue 19, item 3).

The shared stream (tests/stack/streamed.py) carries a path to ``HOSTILE_HOST`` whose traces
name hostile hops (markup, SQL, 10 kB of Unicode). Here: they are stored verbatim; and headless
Chromium opens every dashboard, and the Path explorer filtered on that path, with a sentinel —
no dialog opens, no script sets ``window.__pwned``, no element the markup would make exists, the
path shows as text, and nothing is pushed wider than the window.

Named to run right after tests/test_dashboards_stack.py: tests/test_stack_integration.py takes
the stack down and up again (the shared stream's data does not survive it).
"""

from __future__ import annotations

import orjson
import pytest

from tests.stack.streamed import HOSTILE_HOPS, HOSTILE_HOST
from tests.test_dashboards_stack import DASHBOARDS, _chart_ids_on, site  # noqa: F401  (the fixture)
from tests.untrusted import HOSTILE

pytestmark = pytest.mark.stack


def _rows(stream, sql: str, args=()) -> list[tuple]:
    import psycopg

    with psycopg.connect(stream["settings"].database_url) as connection:
        return connection.execute(sql, args).fetchall()


def _source(stream) -> str:
    return orjson.loads(stream["hostile"][0])["source"]


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


@pytest.mark.parametrize("slug", sorted(DASHBOARDS))
def test_no_dashboard_runs_or_is_bent_by_hostile_names(site, watched, slug):  # noqa: F811
    watched.page.add_init_script("window.__pwned = undefined")
    watched.dialogs.clear()
    watched.errors.clear()
    watched.open_dashboard(slug, len(_chart_ids_on(site, slug)))
    shot = watched.screenshot(slug)
    _no_script_ran(watched, slug, shot)
    _not_wider_than_the_window(watched, slug, shot)
    assert watched.chart_errors() == [], f"{slug}: error shown ({shot})"


def test_the_path_explorer_on_the_hostile_path_shows_it_as_text(site, watched, stream):  # noqa: F811
    from pathwatch.tickets.body import path_explorer_url

    source = _source(stream)
    path = f"{source} → {HOSTILE_HOST}"
    watched.dialogs.clear()
    watched.errors.clear()
    explorer = _chart_ids_on(site, "path-explorer")
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
