"""Draw a series of the real-series bench for labelling by eye: the samples, a rolling median
(the plotting aid), lost samples as ticks along the bottom, and, with ``--labels``, the labels
already written (red: lasting, orange: not lasting, shaded: a daily window).

    python bench/real_series/render.py pm_hk_kz --out /tmp/plots            # whole series
    python bench/real_series/render.py pm_hk_kz --from 8.5 --to 9.0 --out /tmp/plots   # days since start
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
LABELS = HERE / "labels.json"


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(t, rtt_ms) of one series; a lost sample reads as NaN."""
    with gzip.open(DATA / f"{name}.csv.gz", "rt") as f:
        rows = [(float(r["t"]), float(r["rtt_ms"]) if r["rtt_ms"] else math.nan) for r in csv.DictReader(f)]
    a = np.array(rows, dtype=float).reshape(-1, 2)
    return a[:, 0], a[:, 1]


def rolling_median(t: np.ndarray, x: np.ndarray, window_s: float) -> np.ndarray:
    """Centred rolling median over ``window_s`` seconds, lost samples left out."""
    out = np.full(len(x), math.nan)
    lo = hi = 0
    for i, ti in enumerate(t):
        while t[lo] < ti - window_s / 2:
            lo += 1
        while hi < len(t) and t[hi] <= ti + window_s / 2:
            hi += 1
        w = x[lo:hi]
        w = w[~np.isnan(w)]
        if len(w):
            out[i] = np.median(w)
    return out


def main() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("series", nargs="+")
    ap.add_argument("--out", type=Path, default=Path("/tmp/real_series_plots"))
    ap.add_argument("--from", dest="start", type=float, default=None, help="days since the first sample")
    ap.add_argument("--to", dest="end", type=float, default=None, help="days since the first sample")
    ap.add_argument("--days-per-row", type=float, default=3.5)
    ap.add_argument("--median-h", type=float, default=1.0, help="rolling-median window, hours")
    ap.add_argument("--labels", action="store_true", help="draw labels.json's labels")
    ap.add_argument("--ylim", type=float, nargs=2, default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    labels = json.loads(LABELS.read_text())["series"] if args.labels and LABELS.exists() else {}

    for name in args.series:
        t, x = load(name)
        t0 = t[0]
        days = (t - t0) / 86400.0
        start = args.start if args.start is not None else 0.0
        end = args.end if args.end is not None else float(days[-1]) + 1e-9
        keep = (days >= start) & (days <= end)
        td, xd = days[keep], x[keep]
        med = rolling_median(t[keep], xd, args.median_h * 3600.0)
        rows = max(1, math.ceil((end - start) / args.days_per_row - 1e-6))
        fig, axes = plt.subplots(rows, 1, figsize=(22, 3.2 * rows), squeeze=False)
        if args.ylim:
            ylo, yhi = args.ylim
        else:
            ok = xd[~np.isnan(xd)]
            ylo, yhi = (np.percentile(ok, 0.5), np.percentile(ok, 99.5)) if len(ok) else (0, 1)
            pad = max(2.0, 0.15 * (yhi - ylo))
            ylo, yhi = ylo - pad, yhi + pad
        for r in range(rows):
            ax = axes[r][0]
            a, b = start + r * args.days_per_row, min(end, start + (r + 1) * args.days_per_row)
            m = (td >= a) & (td <= b)
            ax.plot(td[m], xd[m], ".", ms=2.0, color="tab:blue")
            ax.plot(td[m], med[m], "-", lw=1.0, color="black")
            lost = td[m][np.isnan(xd[m])]
            ax.plot(lost, np.full(len(lost), ylo + 0.02 * (yhi - ylo)), "|", color="grey", ms=6)
            for lab in labels.get(name, {}).get("labels", []):
                if lab.get("daily"):
                    continue
                d = (lab["t"] - t0) / 86400.0
                if a <= d <= b:
                    ax.axvline(d, color="red" if lab.get("lasting") else "orange", lw=1.2)
            for lab in labels.get(name, {}).get("labels", []):
                if not lab.get("daily"):
                    continue
                first = math.floor(a) - 1
                for k in range(first, math.ceil(b) + 1):
                    # daily window in UTC hours: find the day boundary in "days since start" units
                    day0 = (math.floor((t0 + k * 86400.0) / 86400.0) * 86400.0 - t0) / 86400.0
                    s = day0 + lab["start_hour"] / 24.0
                    ax.axvspan(s, s + lab["width_h"] / 24.0, color="yellow", alpha=0.25)
            ax.set_xlim(a, b if b > a else a + args.days_per_row)
            ax.set_ylim(ylo, yhi)
            ax.set_xticks(np.arange(math.floor(a * 24) / 24, b + 1e-9, 0.25 if b - a > 1 else 1 / 24))
            ax.tick_params(axis="x", labelsize=7, rotation=90)
            ax.grid(alpha=0.3)
            ax.set_ylabel("ms")
        axes[0][0].set_title(f"{name}: days since {np.datetime64(int(t0), 's')} UTC, "
                             f"rolling median {args.median_h:g} h")
        fig.tight_layout()
        suffix = "" if args.start is None and args.end is None else f"_{start:g}-{end:g}"
        fig.savefig(args.out / f"{name}{suffix}.png", dpi=60)
        plt.close(fig)


if __name__ == "__main__":
    main()
