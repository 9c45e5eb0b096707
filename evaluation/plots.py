"""One PNG per labelled case and per false alarm, and an index, for a person to look at.

Each figure shows the path's series that matter for the kind (throughput for throughput
kinds; delay min/median and loss for latency kinds; hop count, path-id changes and
unreached traces for route kinds) over the case's window with two days before and one after,
the label window shaded, and a strip below with the label, pathwatch's anomalies and the
WLCG baseline's alarms on that path (a triangle marks each detection time). Drawing uses
matplotlib's Agg canvas directly, never pyplot, so no global backend state is touched.

>>> case_name(3, "route_change", ("ps-a.example", "ps b"))
'003-route_change-ps-a.example-ps_b'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pathwatch.contract.timefmt import from_epoch
from pathwatch.evaluation.matching import Label, Matching
from pathwatch.evaluation.metrics import DAY, detection_delays, human_duration
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.baseline_wlcg import PathSeries, time_window

PathKey = tuple[str | None, str | None]

# The panels drawn for each kind, most telling first.
PANELS: dict[str, tuple[str, ...]] = {
    "route_change": ("trace", "latency"),
    "diurnal_saturation": ("throughput", "latency"),
    "rising_loss": ("latency", "throughput"),
    "mtu_blackhole": ("throughput", "trace"),
    "window_limited": ("throughput",),
    "throughput_drop": ("throughput",),
    "latency_shift": ("latency",),
    "loss_step": ("latency",),
    "clock_error": ("latency",),
    "unreachable": ("trace", "latency"),
    "no_data": ("throughput", "latency", "trace"),
}
COLOURS = {"label": "0.55", "pathwatch": "tab:blue", "WLCG": "tab:orange"}
BEFORE_S, AFTER_S = 2 * DAY, DAY
MAX_CHANGE_LINES = 40


@dataclass(frozen=True)
class Case:
    """One figure to draw: a labelled case or a false alarm."""

    name: str
    kind: str
    path: PathKey
    start: float
    end: float
    title: str
    verdicts: dict[str, str]      # system -> "detected after 12 min", "missed", "false alarm", ...
    label: Label | None = None
    highlight: frozenset[str] = frozenset()   # ids of the anomalies the case is about (drawn solid)


def case_name(number: int, kind: str, path: PathKey) -> str:
    """A file-name-safe stem for a case."""
    hosts = "-".join(re.sub(r"[^A-Za-z0-9.-]+", "_", host or "any") for host in path)
    return f"{number:03d}-{kind}-{hosts}"


def _verdict(delay: float | None) -> str:
    return "missed" if delay is None else f"detected after {human_duration(delay)}"


def cases(
    labels: Sequence[Label],
    systems: dict[str, tuple[Sequence[Anomaly], Matching]],
    *,
    end_of_data: float,
) -> list[Case]:
    """A case per label (with each system's verdict), then one per false alarm of each system."""
    delays = {system: detection_delays(labels, found, matching) for system, (found, matching) in systems.items()}
    out: list[Case] = []
    for i, label in enumerate(labels):
        verdicts = {system: _verdict(delays[system][i]) for system in systems}
        path = (label.source, label.destination)
        end = end_of_data if label.end is None else label.end
        hits = frozenset(found[j].id for found, matching in systems.values() for j in matching.hits[i])
        out.append(Case(case_name(len(out) + 1, label.kind, path), label.kind, path, label.start, end,
                        f"{label.kind} {path[0]} → {path[1]}: "
                        + ", ".join(f"{system} {verdict}" for system, verdict in verdicts.items()),
                        verdicts, label, hits))
    for system, (found, matching) in systems.items():
        for j, anomaly in enumerate(found):
            if matching.status(j) != "false":
                continue
            path = (anomaly.source, anomaly.destination)
            end = end_of_data if anomaly.end is None else anomaly.end
            rule = anomaly.evidence.get("wlcg_alarm")
            what = f"{anomaly.kind}" + (f" ('{rule}')" if rule else "")
            out.append(Case(f"false-{system}-" + case_name(len(out) + 1, anomaly.kind, path), anomaly.kind, path,
                            anomaly.start, max(end, anomaly.start),
                            f"false alarm by {system}: {what} {path[0]} → {path[1]}, detected "
                            f"{_minute(anomaly.detected_at)}", {system: "false alarm"}, None, frozenset((anomaly.id,))))
    return out


def _minute(t: float) -> str:
    """``2024-05-01 14:05`` (UTC): times as a person reads them in titles and the index."""
    return from_epoch(round(t / 60) * 60)[:16].replace("T", " ")


def _days(t: np.ndarray | float) -> np.ndarray | float:
    """Unix seconds as matplotlib date numbers (days since its 1970 epoch)."""
    return np.asarray(t) / DAY if isinstance(t, np.ndarray) else t / DAY


def _panel(ax, which: str, s: PathSeries | None, lo: float, hi: float) -> None:
    empty = True
    if s is not None and which == "throughput":
        w = time_window(s.throughput_t, lo, hi)
        if w.stop > w.start:
            ax.plot(_days(s.throughput_t[w]), s.throughput_bps[w] / 1e6, ".", ms=3, color="tab:green")
            ax.set_ylabel("throughput Mb/s")
            empty = False
    elif s is not None and which == "latency":
        w = time_window(s.latency_t, lo, hi)
        if w.stop > w.start:
            t = _days(s.latency_t[w])
            ax.plot(t, s.delay_min[w], "-", lw=0.8, color="tab:purple", label="delay min")
            ax.plot(t, s.delay_median[w], "-", lw=0.8, color="tab:cyan", label="delay median")
            ax.set_ylabel("delay ms")
            ax.legend(loc="upper left", fontsize=7)
            loss = ax.twinx()
            loss.plot(t, 100 * s.loss[w], ".", ms=2, color="tab:red")
            loss.set_ylabel("loss %", color="tab:red")
            empty = False
    elif s is not None and which == "trace":
        w = time_window(s.trace_t, lo, hi)
        if w.stop > w.start:
            t = _days(s.trace_t[w])
            ax.plot(t, s.hop_count[w], ".", ms=3, color="tab:brown")
            ids = s.path_ids[w]
            changes = [t[k] for k in range(1, len(ids)) if ids[k] != ids[k - 1]]
            if changes:
                # a flapping path would hide everything under its lines: then only count them
                ax.vlines(changes if len(changes) <= MAX_CHANGE_LINES else [], 0, 1, transform=ax.get_xaxis_transform(),
                          colors="tab:red", alpha=0.6, lw=0.8, linestyles="dashed",
                          label=f"path id changes: {len(changes)}")
                ax.legend(loc="upper left", fontsize=7)
            if not np.isnan(s.pmtu[w]).all():
                pmtu = ax.twinx()
                pmtu.step(t, s.pmtu[w], where="post", color="tab:olive", lw=1)
                pmtu.set_ylabel("pmtu bytes", color="tab:olive")
            unreached = s.reached[w] == 0
            ax.plot(t[unreached], s.hop_count[w][unreached], "x", color="tab:red", ms=4)
            ax.set_ylabel("hops")
            empty = False
    if empty:
        ax.text(0.5, 0.5, f"no {which} data in this window", ha="center", va="center", transform=ax.transAxes)


def _strip(ax, case: Case, systems: dict[str, Sequence[Anomaly]], lo: float, hi: float, end_of_data: float) -> None:
    rows = [("label", [(case.label.start, case.end, None, case.kind, None)] if case.label else [])]
    for system, found in systems.items():
        rows.append((system, [(a.start, end_of_data if a.end is None else a.end, a.detected_at, a.kind, a.id)
                              for a in found if (a.source, a.destination) == case.path]))
    for y, (name, spans) in enumerate(reversed(rows)):
        colour = COLOURS.get(name, "tab:gray")
        for start, end, detected, kind, ident in spans:
            if end < lo or start > hi:
                continue
            ax.broken_barh([(_days(start), max(_days(end) - _days(start), 1e-3))], (y - 0.35, 0.7),
                           color=colour, alpha=0.9 if name == "label" or ident in case.highlight else 0.3)
            ax.text(_days(max(start, lo)), y, f" {kind}", va="center", fontsize=6)
            if detected is not None and lo <= detected <= hi:
                ax.plot(_days(detected), y + 0.45, "v", color="black", ms=4)
    ax.set_yticks(range(len(rows)), [name for name, _ in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)


def draw(case: Case, series: PathSeries | None, systems: dict[str, Sequence[Anomaly]], out: Path, *,
         data_start: float, end_of_data: float) -> Path:
    """Draw one case to ``out`` (a PNG) and return it."""
    import matplotlib.dates as mdates
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    lo, hi = max(case.start - BEFORE_S, data_start), min(case.end + AFTER_S, end_of_data)
    hi = max(hi, lo + 3600)
    panels = PANELS.get(case.kind, ("throughput", "latency", "trace"))
    fig = Figure(figsize=(11, 2.3 * len(panels) + 1.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels) + 1, 1, sharex=True, height_ratios=[3] * len(panels) + [1.4])
    for ax, which in zip(axes, panels):
        _panel(ax, which, series, lo, hi)
        shade = COLOURS["label"] if case.label is not None else COLOURS.get(next(iter(case.verdicts)), "tab:gray")
        ax.axvspan(_days(case.start), _days(case.end), color=shade, alpha=0.2 if case.label else 0.12, lw=0)
    _strip(axes[-1], case, systems, lo, hi, end_of_data)
    axes[-1].set_xlim(_days(lo), _days(hi))
    locator = mdates.AutoDateLocator()
    axes[-1].xaxis.set_major_locator(locator)
    axes[-1].xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    fig.suptitle(case.title, fontsize=10)
    fig.savefig(out, dpi=90)
    return out


def write_index(cases_drawn: Sequence[Case], directory: Path) -> Path:
    """A markdown index of the drawn cases (labelled cases first, then false alarms)."""
    lines = ["# pathwatch evaluation: cases", ""]
    labelled = [c for c in cases_drawn if c.label is not None]
    false = [c for c in cases_drawn if c.label is None]
    if labelled:
        systems = list(labelled[0].verdicts)
        lines += ["## Labelled cases", "", "| kind | path | window | " + " | ".join(systems) + " | plot |",
                  "|---|---|---|" + "---|" * len(systems) + "---|"]
        for c in labelled:
            window = f"{_minute(c.start)} – {_minute(c.end)}"
            lines.append(f"| {c.kind} | {c.path[0]} → {c.path[1]} | {window} | "
                         + " | ".join(c.verdicts[s] for s in systems) + f" | [{c.name}.png]({c.name}.png) |")
        lines.append("")
    if false:
        lines += ["## False alarms", "", "| by | kind | path | start | plot |", "|---|---|---|---|---|"]
        for c in false:
            lines.append(f"| {next(iter(c.verdicts))} | {c.kind} | {c.path[0]} → {c.path[1]} | {_minute(c.start)} "
                         f"| [{c.name}.png]({c.name}.png) |")
        lines.append("")
    index = directory / "index.md"
    index.write_text("\n".join(lines))
    return index


def draw_all(
    to_draw: Sequence[Case],
    series: dict[PathKey, PathSeries],
    systems: dict[str, Sequence[Anomaly]],
    directory: Path,
    *,
    data_start: float,
    end_of_data: float,
    advance: Callable[[], None] | None = None,
) -> Path:
    """Draw every case into ``directory`` and write its index; returns the index path."""
    directory.mkdir(parents=True, exist_ok=True)
    for case in to_draw:
        draw(case, series.get(case.path), systems, directory / f"{case.name}.png",
             data_start=data_start, end_of_data=end_of_data)
        if advance is not None:
            advance()
    return write_index(to_draw, directory)
