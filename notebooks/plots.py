"""Figures for notebooks: a path's measurements with its anomaly windows, and backtest trade-offs.

Each function takes DataFrames (from :mod:`pathwatch.notebooks.data` or :mod:`pathwatch.notebooks.backtest`)
and returns a matplotlib Figure (pyplot, so the notebook shows it inline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# One colour per anomaly kind, stable across figures.
KIND_COLOURS = {
    "route_change": "tab:purple", "mtu_blackhole": "tab:brown", "rising_loss": "tab:red", "loss_step": "tab:orange",
    "throughput_drop": "tab:blue", "window_limited": "tab:cyan", "diurnal_saturation": "tab:olive",
    "latency_shift": "tab:pink", "unreachable": "black", "clock_error": "tab:gray", "no_data": "lightgray",
}


def anomaly_spans(table: pd.DataFrame, until=None) -> list[tuple]:
    """(start, end, kind) of each anomaly; an open one runs to ``until`` (or its detection).

    >>> import pandas as pd
    >>> t = pd.DataFrame({"start": [1, 5], "end_time": [3, None], "detected_at": [2, 6], "kind": ["a", "b"]})
    >>> anomaly_spans(t, until=9)
    [(1, 3.0, 'a'), (5, 9, 'b')]
    """
    import pandas as pd

    spans = []
    for row in table.itertuples(index=False):
        end = row.end_time if row.end_time is not None and not pd.isna(row.end_time) else (until or row.detected_at)
        spans.append((row.start, end, row.kind))
    return spans


def _shade(axes, spans, lo=None, hi=None) -> None:
    for start, end, kind in spans:
        if lo is not None:
            start, end = max(start, lo), min(end, hi)
            if end <= start:
                continue
        for ax in axes:
            ax.axvspan(start, end, color=KIND_COLOURS.get(kind, "tab:gray"), alpha=0.18, lw=0)


def plot_path(series: dict[str, pd.DataFrame], anomalies: pd.DataFrame, title: str = "",
              start=None, end=None, mark=None) -> Figure:
    """Throughput, one-way delay, loss and route (one step per new path_id) over time; anomaly windows shaded.

    ``mark``: a time to draw a vertical line at (e.g. the investigated anomaly's start).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(4, 1, figsize=(12, 9), sharex=True, height_ratios=[3, 2, 2, 1.3])
    tput, lat, trace = series["throughput"], series["latency"], series["trace"]
    ok = tput[tput["succeeded"]] if not tput.empty else tput
    failed = tput[~tput["succeeded"]] if not tput.empty else tput
    ax = axes[0]
    if not ok.empty:
        ax.plot(ok["time"], ok["throughput_mbps"], ".", ms=3, color="tab:blue", label="run")
    if not failed.empty:
        ax.plot(failed["time"], [0] * len(failed), "x", color="tab:red", label="failed run")
    ax.set_ylabel("throughput (Mbit/s)")
    ax = axes[1]
    if not lat.empty:
        ax.plot(lat["time"], lat["delay_median_ms"], "-", lw=0.8, color="tab:green", label="median")
        ax.plot(lat["time"], lat["delay_min_ms"], "-", lw=0.5, color="tab:gray", label="min")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_ylabel("one-way delay (ms)")
    ax = axes[2]
    if not lat.empty:
        ax.plot(lat["time"], lat["loss_pct"], "-", lw=0.8, color="tab:red")
        if (lat["loss_pct"].fillna(0) > 0).any():
            ax.set_yscale("symlog", linthresh=0.01)
    ax.set_ylabel("loss (%)")
    ax = axes[3]
    if not trace.empty:
        order = {pid: i for i, pid in enumerate(dict.fromkeys(trace["path_id"]))}
        ax.step(trace["time"], [order[p] for p in trace["path_id"]], where="post", color="tab:purple")
        if len(order) <= 8:
            ax.set_yticks(range(len(order)))
            ax.set_yticklabels([f"route {i + 1}" for i in range(len(order))], fontsize=7)
        else:
            from matplotlib.ticker import FuncFormatter, MaxNLocator

            ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"route {int(v) + 1}"))
            ax.tick_params(axis="y", labelsize=7)
    ax.set_ylabel("route")
    if start is not None and end is not None:
        axes[-1].set_xlim(start, end)
    until = end
    spans = anomaly_spans(anomalies, until=until)
    _shade(axes, spans, start, end)
    if mark is not None:
        for ax in axes:
            ax.axvline(mark, color="black", lw=1, ls="--")
    kinds = sorted({kind for _, _, kind in spans})
    if kinds:
        fig.legend(handles=[Patch(color=KIND_COLOURS.get(k, "tab:gray"), alpha=0.35, label=k) for k in kinds],
                   loc="upper right", fontsize=8, ncols=min(len(kinds), 4), title="anomaly windows", title_fontsize=8)
    fig.suptitle(title, x=0.02, ha="left", parse_math=False)   # host names are text: a "$" is not mathtext
    fig.autofmt_xdate()
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def plot_tradeoff(table: pd.DataFrame, parameter: str) -> Figure:
    """Backtest trade-off per kind against the swept value: recall and precision, median delay, false alarms.

    ``table``: :func:`pathwatch.notebooks.backtest.sweep`'s rows (``value``, ``kind``, ``precision``,
    ``recall``, ``delay_median_h``, ``false_alarms``); one line per kind on each panel.
    """
    import matplotlib.pyplot as plt

    fig, (scores, delays, alarms) = plt.subplots(1, 3, figsize=(14, 4))
    values = list(dict.fromkeys(table["value"]))
    x = range(len(values))
    for i, (kind, rows) in enumerate(table.groupby("kind", sort=False)):
        rows = rows.set_index("value").reindex(values)
        colour = f"C{i}"
        scores.plot(x, rows["recall"].astype(float), "o-", color=colour, label=f"{kind} recall")
        scores.plot(x, rows["precision"].astype(float), "s--", color=colour, alpha=0.6, label=f"{kind} precision")
        delays.plot(x, rows["delay_median_h"].astype(float), "o-", color=colour, label=kind)
        alarms.plot(x, rows["false_alarms"].astype(float), "o-", color=colour, label=kind)
    for ax, label in ((scores, "score"), (delays, "median detection delay (h)"), (alarms, "false alarms")):
        ax.set_xticks(list(x))
        ax.set_xticklabels([str(v) for v in values], rotation=30)
        ax.set_xlabel(parameter)
        ax.set_ylabel(label)
    scores.set_ylim(-0.05, 1.05)
    scores.legend(fontsize=7)
    delays.legend(fontsize=7)
    alarms.set_ylim(bottom=0)
    fig.suptitle(f"sweep of {parameter}: detection delay against recall, precision and false alarms")
    fig.tight_layout()
    return fig


def plot_confusion(truth: list[str], predicted: list[str], labels: list[str], title: str, ax=None):
    """A confusion matrix (counts) on ``ax`` (a new figure when None); returns the axes."""
    import matplotlib.pyplot as plt
    from sklearn.metrics import ConfusionMatrixDisplay

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.5))
    ConfusionMatrixDisplay.from_predictions(truth, predicted, labels=labels, ax=ax, colorbar=False,
                                            xticks_rotation=45)
    ax.set_title(title)
    return ax
