"""The HTML the dashboards' tables render is built in SQL from host names: it must escape them.

The anomaly and incident tables render their link columns as HTML (``allow_render_html``). Each
such column's expression is evaluated here on hostile paths (SQLite has PostgreSQL's
``replace``, ``||`` and quoting) and the result parsed as a browser would: one ``<a>`` and
nothing else, its text exactly the path, its link the Path explorer filtered on exactly that
path (the same filter as the tickets' link, :func:`pathwatch.tickets.body.path_explorer_url`).
"""

from __future__ import annotations

import sqlite3
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

import pytest

from pathwatch.dashboards.bundle import read_bundle
from pathwatch.tickets.body import path_explorer_url
from tests.untrusted import MARKUP, SQLISH, unicode_10k

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
