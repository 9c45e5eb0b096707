"""Real RTT series, hand-labelled: the latency-shift detector against PELT and a plain baseline.

The series and their labels are in ``bench/real_series/`` (what they are, where they come from and
how they were labelled: its README.md). Each series is run, in the same pass, through

- **pathwatch**: one :class:`pathwatch.models.monitor.PathMonitor` per series fed one latency
  record per sample (``delay_min_ms`` the sample; a lost sample is a record with every packet
  lost), ``advance`` to the last sample at the end; each ``latency_shift`` counts at its
  ``start``, and once more at its ``end`` when it closed because the delay came back to its
  baseline (the detector telling that change; a shift closed because the new delay became the
  normal after days is not one); ``diurnal_saturation`` alarms count by their busy window
  (evidence ``start_hour``, ``width_h``). ``DetectorConfig()`` defaults, nothing tuned;
- **pelt**: ruptures' PELT, Gaussian mean-and-variance cost (``model="normal"``), penalty
  ``2·ln(n)`` (BIC-like; not multiplied by the variance: that scaling is for the ``l2`` cost, in
  ms², while the ``normal`` cost, n·ln σ², carries no unit), ``min_size=5`` samples,
  ``jump=3``, over the received samples; each breakpoint is a detection at the first sample of
  the new segment;
- **baseline**: causal; the median of the last 3 samples against the median of the current
  segment (its last ``SEGMENT_CAP`` samples at most), a change once they differ by
  max(5 ms, 10 % of the segment's median) for ``hold`` samples in a row (the one setting,
  chosen on the tune half by F1), dated at the first sample beyond among the 3 that first put
  the median beyond; the new segment starts from the samples beyond.

Scoring (:func:`score_series`): a label is a lasting significant change; a detection matches
the nearest still-unmatched label within ±1 h (each label at most once). Recall is labels
matched over labels; the other detections are unmatched, per series-day. A ``diurnal_saturation``
alarm covers the edges of its busy window on each UTC day it is open: a label within 1 h of such
an edge counts as found, a detection there is not unmatched.

    .venv/bin/python bench/real_series_bench.py            # ~1 min; writes bench/results/real_series.json
"""

from __future__ import annotations

import argparse
import bisect
import csv
import gzip
import json
import math
import sys
import time
import warnings
from collections import deque
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.provenance import code_state  # noqa: E402  (the repository on the path first)
from pathwatch.contract.timefmt import from_epoch  # noqa: E402
SET = ROOT / "bench" / "real_series"
DATA = SET / "data"
LABELS = SET / "labels.json"
OUT = ROOT / "bench" / "results" / "real_series.json"

DAY = 86400.0
TOL_S = 3600.0                     # a detection matches a label within this
ABS_MS, REL = 5.0, 0.10            # the definition's significance: max(5 ms, 10 %)
PELT_MIN_SIZE, PELT_JUMP = 5, 3
SEGMENT_CAP = 720                  # baseline: the current segment's median over its last samples
HOLD_GRID = (1, 2, 3, 4, 6, 8, 12, 15)
METHODS = ("pathwatch", "pelt", "baseline")


# ---------------------------------------------------------------- data

def load_series(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(t, rtt_ms) of one series in time order; a lost sample reads as NaN."""
    with gzip.open(DATA / f"{name}.csv.gz", "rt") as f:
        rows = [(float(r["t"]), float(r["rtt_ms"]) if r["rtt_ms"] else math.nan) for r in csv.DictReader(f)]
    a = np.array(rows, dtype=float).reshape(-1, 2)
    order = np.argsort(a[:, 0], kind="stable")
    return a[order, 0], a[order, 1]


def scored(label: dict) -> bool:
    """Whether a label is a lasting significant change (what recall counts)."""
    return not label.get("daily") and bool(label.get("lasting")) and bool(label.get("significant", True))


# ---------------------------------------------------------------- scoring

def daily_edges(start_hour: float, width_h: float, first: float, last: float) -> list[float]:
    """The edges (rise and fall) of a daily window, on every UTC day from ``first``'s to ``last``'s."""
    edges = []
    for day in range(math.floor(first / DAY), math.floor(last / DAY) + 1):
        rise = day * DAY + (start_hour % 24) * 3600.0
        edges += [rise, rise + width_h * 3600.0]
    return edges


def _near(t: float, points: list[float], tol: float) -> bool:
    return any(abs(t - p) <= tol for p in points)


def score_series(labels: list[dict], detections: list[float], diurnal: list[dict] = (), *,
                 span: tuple[float, float], tol_s: float = TOL_S) -> dict:
    """Score one series' detections against its labels.

    ``labels``: labels.json entries (change labels with ``t``; daily-pattern entries with
    ``daily``, ``start_hour``, ``width_h`` and optionally ``from``/``to``). Only lasting
    significant changes are targets. ``detections``: change times. ``diurnal``: the detector's
    diurnal alarms, each {"start", "end" (None: still open), "start_hour", "width_h"}. ``span``:
    the series' first and last sample times (an open alarm runs to the last).

    Each detection, in time order, takes the nearest still-unmatched target within ``tol_s``.
    A target left over that lies within ``tol_s`` of a diurnal alarm's window edge, on a UTC day
    the alarm is open, is found by that alarm; a detection left over within ``tol_s`` of such an
    edge is covered by it and is not unmatched.
    """
    targets = sorted(float(lab["t"]) for lab in labels if scored(lab))
    minor = [float(lab["t"]) for lab in labels if not lab.get("daily") and not scored(lab)]
    daily_label_edges = []
    for lab in labels:
        if lab.get("daily"):
            daily_label_edges += daily_edges(lab["start_hour"], lab["width_h"],
                                             lab.get("from", span[0]), lab.get("to", span[1]))
    alarm_edges = []
    for alarm in diurnal:
        end = span[1] if alarm.get("end") is None else alarm["end"]
        alarm_edges += daily_edges(alarm["start_hour"], alarm["width_h"], alarm["start"], end)

    matched = [False] * len(targets)
    leftover = []
    for d in sorted(float(x) for x in detections):
        best = None
        for i, t in enumerate(targets):
            if not matched[i] and abs(t - d) <= tol_s and (best is None or abs(t - d) < abs(targets[best] - d)):
                best = i
        if best is None:
            leftover.append(d)
        else:
            matched[best] = True
    by_detection = sum(matched)
    by_diurnal = 0
    for i, t in enumerate(targets):
        if not matched[i] and _near(t, alarm_edges, tol_s):
            matched[i] = True
            by_diurnal += 1
    unmatched = [d for d in leftover if not _near(d, alarm_edges, tol_s)]
    return {
        "labels": len(targets),
        "found": by_detection + by_diurnal,
        "found_by_diurnal": by_diurnal,
        "detections": len(detections),
        "unmatched": len(unmatched),
        "covered_by_diurnal": len(leftover) - len(unmatched),
        "unmatched_at_daily_label_edges": sum(1 for d in unmatched if _near(d, daily_label_edges, tol_s)),
        "unmatched_near_minor_label": sum(1 for d in unmatched if _near(d, minor, tol_s)),
        "days": (span[1] - span[0]) / DAY,
        "missed_t": [int(t) for i, t in enumerate(targets) if not matched[i]],
        "unmatched_t": [int(d) for d in unmatched],
    }


def aggregate(rows: dict[str, dict]) -> dict:
    """Totals over a split's per-series scores, with its worst series."""
    labels = sum(r["labels"] for r in rows.values())
    found = sum(r["found"] for r in rows.values())
    unmatched = sum(r["unmatched"] for r in rows.values())
    days = sum(r["days"] for r in rows.values())
    with_labels = [(n, r) for n, r in rows.items() if r["labels"]]
    worst_recall = min(with_labels, key=lambda nr: (nr[1]["found"] / nr[1]["labels"], -nr[1]["labels"]), default=None)
    worst_alarms = max(rows.items(), key=lambda nr: nr[1]["unmatched"] / nr[1]["days"], default=None)
    return {
        "recall": round(found / labels, 3) if labels else None,
        "found": found,
        "labels": labels,
        "unmatched": unmatched,
        "unmatched_per_day": round(unmatched / days, 3) if days else None,
        "series": len(rows),
        "series_days": round(days, 2),
        "worst_recall_series": None if worst_recall is None else {
            "series": worst_recall[0], "recall": round(worst_recall[1]["found"] / worst_recall[1]["labels"], 3),
            "found": worst_recall[1]["found"], "labels": worst_recall[1]["labels"]},
        "worst_unmatched_series": None if worst_alarms is None else {
            "series": worst_alarms[0], "unmatched": worst_alarms[1]["unmatched"],
            "unmatched_per_day": round(worst_alarms[1]["unmatched"] / worst_alarms[1]["days"], 3)},
    }


# ---------------------------------------------------------------- methods

def run_pathwatch(name: str, t: np.ndarray, x: np.ndarray) -> tuple[list[float], list[float], list[dict], dict]:
    """The path monitor over one series: latency_shift starts, the ends of those that closed
    because the delay came back, diurnal alarms, and the episodes and other kinds seen."""
    from pathwatch.models.monitor import PathMonitor

    monitor = PathMonitor(name, "bench")
    shifts: dict[str, dict] = {}
    diurnal: dict[str, dict] = {}
    other: dict[str, set] = {}

    def take(anomalies) -> None:
        for a in anomalies:
            if a.kind == "latency_shift":
                s = shifts.setdefault(a.id, {"start": a.start, "end": None, "detected_at": a.detected_at})
                s["end"] = a.end
                s["ended"] = a.evidence.get("ended")
                s["summary"] = a.summary
            elif a.kind == "diurnal_saturation":
                ev = a.evidence
                d = diurnal.setdefault(a.id, {"start": a.start, "end": None,
                                              "start_hour": ev.get("start_hour"), "width_h": ev.get("width_h")})
                d["end"] = a.end
            else:
                other.setdefault(a.kind, set()).add(a.id)

    for ti, xi in zip(t.tolist(), x.tolist()):
        lost = math.isnan(xi)
        take(monitor.observe_record({
            "kind": "latency", "time": from_epoch(ti), "one_way": False, "packets_sent": 3,
            "packets_lost": 3 if lost else 0, "delay_min_ms": None if lost else xi}))
    take(monitor.advance(float(t[-1])))
    alarms = [d for d in diurnal.values() if d["start_hour"] is not None and d["width_h"] is not None]
    # A shift closed because the delay came back is the detector telling that change too (at its end);
    # one closed because the new delay became the normal (after days) is not a change.
    returns = [s["end"] for s in shifts.values() if s["end"] is not None and "returned" in (s.get("ended") or "")]
    return ([s["start"] for s in shifts.values()], returns, alarms,
            {"episodes": list(shifts.values()), "other_kinds": {k: len(v) for k, v in sorted(other.items())}})


def run_pelt(t: np.ndarray, x: np.ndarray) -> list[float]:
    import ruptures as rpt

    ok = ~np.isnan(x)
    tv, xv = t[ok], x[ok]
    if len(xv) < 2 * PELT_MIN_SIZE:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # ruptures' note on the small diagonal it adds
        bkps = rpt.Pelt(model="normal", min_size=PELT_MIN_SIZE, jump=PELT_JUMP).fit(xv).predict(pen=2 * math.log(len(xv)))
    return [float(tv[b]) for b in bkps[:-1]]


def run_baseline(t: np.ndarray, x: np.ndarray, hold: int) -> list[float]:
    """Median of the last 3 samples against the current segment's median; a change once it is
    beyond max(5 ms, 10 %) for ``hold`` samples in a row, dated at the first sample beyond (on the
    same side) among the 3 that first put the median beyond. The new segment starts from the
    samples beyond; the first 3 samples of a segment are taken without a test. Lost samples are
    skipped. Causal: each decision uses samples up to the current one only."""
    out: list[float] = []
    seg: deque[float] = deque()
    ranked: list[float] = []
    last3: deque[tuple[float, float]] = deque(maxlen=3)
    run, run_start, run_vals = 0, 0.0, []

    def add(v: float) -> None:
        seg.append(v)
        bisect.insort(ranked, v)
        if len(seg) > SEGMENT_CAP:
            ranked.pop(bisect.bisect_left(ranked, seg.popleft()))

    for ti, xi in zip(t.tolist(), x.tolist()):
        if math.isnan(xi):
            continue
        last3.append((ti, xi))
        if len(seg) < 3:
            add(xi)
            continue
        n = len(ranked)
        seg_med = ranked[n // 2] if n % 2 else 0.5 * (ranked[n // 2 - 1] + ranked[n // 2])
        threshold = max(ABS_MS, REL * seg_med)
        m3 = sorted(v for _, v in last3)[len(last3) // 2]
        side = (m3 - seg_med >= threshold) - (seg_med - m3 >= threshold)
        if side == 0:
            run, run_vals = 0, []
            add(xi)
            continue
        if run == 0:
            beyond = [(tt, v) for tt, v in last3 if (v - seg_med) * side >= threshold]
            run_start, run_vals = beyond[0][0], [v for _, v in beyond]
        elif (xi - seg_med) * side >= threshold:
            run_vals.append(xi)
        run += 1
        if run >= hold:
            out.append(run_start)
            seg.clear()
            ranked.clear()
            for v in run_vals:
                add(v)
            run, run_vals = 0, []
    return out


# ---------------------------------------------------------------- the bench

def f1(agg: dict) -> float:
    found, labels, unmatched = agg["found"], agg["labels"], agg["unmatched"]
    if not labels or not found:
        return 0.0
    precision = found / (found + unmatched)
    recall = found / labels
    return 2 * precision * recall / (precision + recall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--series", nargs="*", help="only these series (default: all in labels.json)")
    args = ap.parse_args()

    doc = json.loads(LABELS.read_text())
    names = sorted(doc["series"]) if not args.series else args.series
    splits = {n: doc["series"][n]["split"] for n in names}
    started = time.monotonic()
    cpu0 = time.process_time()

    per_series: dict[str, dict] = {}
    baseline_runs: dict[str, dict[int, list[float]]] = {}
    for k, name in enumerate(names, 1):
        t0 = time.monotonic()
        t, x = load_series(name)
        labels = doc["series"][name]["labels"]
        span = (float(t[0]), float(t[-1]))
        starts, returns, diurnal, extra = run_pathwatch(name, t, x)
        shifts = starts + returns
        pelt = run_pelt(t, x)
        baseline_runs[name] = {h: run_baseline(t, x, h) for h in HOLD_GRID}
        per_series[name] = {
            "split": splits[name], "span": span, "labels": labels,
            "pathwatch": score_series(labels, shifts, diurnal, span=span)
            | {"diurnal_alarms": diurnal, "latency_shift_episodes": extra["episodes"], "other_kinds": extra["other_kinds"]},
            "pathwatch_starts_only": score_series(labels, starts, diurnal, span=span),
            "pelt": score_series(labels, pelt, span=span),
        }
        print(f"[{k}/{len(names)}] {name} ({splits[name]}, {len(t)} samples, {span[1] - span[0]:.0f} s): "
              f"pathwatch {len(starts)} shifts ({len(returns)} returns) + {len(diurnal)} diurnal, pelt {len(pelt)}, "
              f"baseline {len(baseline_runs[name][HOLD_GRID[0]])}..{len(baseline_runs[name][HOLD_GRID[-1]])} "
              f"({time.monotonic() - t0:.1f} s)", file=sys.stderr, flush=True)

    # The baseline's one setting, chosen on the tune half alone.
    grid = {}
    for hold in HOLD_GRID:
        rows = {n: score_series(per_series[n]["labels"], baseline_runs[n][hold], span=per_series[n]["span"])
                for n in names if splits[n] == "tune"}
        agg = aggregate(rows)
        grid[hold] = {"f1": round(f1(agg), 3), "recall": agg["recall"], "unmatched_per_day": agg["unmatched_per_day"]}
    hold = max(HOLD_GRID, key=lambda h: (grid[h]["f1"], -(grid[h]["unmatched_per_day"] or 0.0), -h))
    for n in names:
        per_series[n]["baseline"] = score_series(per_series[n]["labels"], baseline_runs[n][hold], span=per_series[n]["span"])

    results: dict[str, dict] = {}
    for split in ("tune", "report"):
        results[split] = {}
        for method in METHODS:
            rows = {n: per_series[n][method] for n in names if splits[n] == split}
            agg = aggregate(rows)
            agg["rows"] = {n: {k: v for k, v in r.items() if k not in ("latency_shift_episodes",)}
                           | {"recall": round(r["found"] / r["labels"], 3) if r["labels"] else None,
                              "unmatched_per_day": round(r["unmatched"] / r["days"], 3)}
                           for n, r in rows.items()}
            results[split][method] = agg
        starts_only = aggregate({n: per_series[n]["pathwatch_starts_only"] for n in names if splits[n] == split})
        results[split]["pathwatch"]["starts_only"] = {k: starts_only[k] for k in ("recall", "found", "unmatched_per_day")}
    worst = {}
    for method in METHODS:
        halves = [results[s][method] for s in ("tune", "report")]
        recalls = [h["recall"] for h in halves if h["recall"] is not None]
        worst[method] = {"recall": min(recalls) if recalls else None,
                         "unmatched_per_day": max(h["unmatched_per_day"] for h in halves)}

    out = {
        "bench": "real_series",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "code": code_state("models", "contract", "pathwatch", "bench/real_series", "bench/real_series_bench.py"),
        "settings": {
            "tolerance_s": TOL_S, "significance": {"abs_ms": ABS_MS, "rel": REL},
            "pelt": {"model": "normal", "penalty": "2*ln(n)", "min_size": PELT_MIN_SIZE, "jump": PELT_JUMP},
            "baseline": {"hold": hold, "segment_cap": SEGMENT_CAP, "tune_grid_f1": grid},
            "pathwatch": {"config": "DetectorConfig() defaults", "packets_sent": 3},
        },
        "splits": results,
        "worst": worst,
        "wall_s": round(time.monotonic() - started, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")

    print(f"\n{'method':<10} {'split':<7} {'recall':>12} {'unmatched/day':>14} {'series':>7} {'days':>7}  worst series")
    for method in METHODS:
        for split in ("tune", "report"):
            a = results[split][method]
            rec = "-" if a["recall"] is None else f"{a['recall']:.2f} ({a['found']}/{a['labels']})"
            wr = a["worst_recall_series"]
            wu = a["worst_unmatched_series"]
            print(f"{method:<10} {split:<7} {rec:>12} {a['unmatched_per_day']:>14.2f} {a['series']:>7} {a['series_days']:>7.1f}  "
                  f"recall {wr['series'] + ' ' + str(wr['recall']) if wr else '-'}; "
                  f"alarms {wu['series']} {wu['unmatched_per_day']}/day")
    print(f"\nbaseline hold={hold} (tune-half F1); worst of the halves: "
          + ", ".join(f"{m} recall {worst[m]['recall']} unmatched/day {worst[m]['unmatched_per_day']}" for m in METHODS))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} in {out['wall_s']} s")


if __name__ == "__main__":
    main()
