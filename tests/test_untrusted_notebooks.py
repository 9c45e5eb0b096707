"""The notebooks show hostile host and hop names as text (issue 19, item 3): DataFrames render
escaped HTML, and a plot titled with a path draws whatever the names hold."""

from __future__ import annotations

import pandas as pd
import pytest

from pathwatch import notebooks as helpers
from tests.untrusted import HOSTILE, MARKUP, SQLISH, unicode_10k

MATH = "ps1.$\\evilcmd{x}$.example"   # mathtext matplotlib cannot parse


def test_the_hop_table_renders_hostile_names_as_escaped_text():
    rows = pd.DataFrame({"path_id": ["a", "a", "b"], "ttl": [1, 2, 1], "ip": [MARKUP, SQLISH, unicode_10k()]})
    table = helpers.hop_table(rows)
    html = table._repr_html_()                       # what Jupyter's display() shows
    assert "<img" not in html and "&lt;img src=x onerror=" in html
    assert "'); drop table anomalies; --" in html or "&#x27;); drop table" in html
    assert table.loc[1, "a"] == MARKUP and table.loc[1, "b"] == unicode_10k()


@pytest.mark.parametrize("value", HOSTILE)
def test_anomaly_rows_render_as_escaped_text(value):
    frame = pd.DataFrame({"source": [value], "summary": [f"route change at {value}"]})
    html = frame._repr_html_()
    assert "<img" not in html and "<script" not in html


def test_a_path_plot_titled_with_hostile_names_draws():
    import matplotlib

    matplotlib.use("Agg")
    empty = pd.DataFrame()
    title = f"{MATH} → {MARKUP} {unicode_10k()[:80]}"
    fig = helpers.plot_path({"throughput": empty, "latency": empty, "trace": empty},
                        pd.DataFrame(columns=["kind", "start", "end_time", "detected_at", "severity"]), title=title)
    fig.canvas.draw()
    assert fig.texts[0].get_text() == title
