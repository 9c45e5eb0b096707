"""The WLCG/OSG "Alarms & Alerts" rules as a batch baseline: what peers detect today.

The peers run batch jobs once a day over the measurements archived before the run. This
module replays those jobs over canonical records (the JSON form of
:mod:`pathwatch.contract.records`): a run at every 00:00 UTC from the first record to the first
midnight after the last one, each run seeing only records older than itself. A rule that fires
on a run opens an alarm (``detected_at`` = the run); the alarm stays open while later runs
keep finding it and closes (``end``) at the first run that no longer does.

Rules, as the peers run them (parameters in :class:`WlcgParams`, defaults in brackets):

* **high packet loss** / **complete packet loss**: mean loss of the path's latency results
  in the last 24 h ≥ 2 % (= 100 % for complete loss). [loss_window_s, loss_threshold]
* **bandwidth decreased**: the path's TCP throughput in the last 21 days is cut into 4-day
  bins ending at the run (the oldest is a 1-day remnant); the last bin's mean against the
  earlier bins' means has z ≤ −2 and is ≥ 50 % below their mean (the peers' pair alarm also
  asks for a 50 % change). The z-score is taken against the *earlier* bins only: the peers
  include the last bin in its own mean and spread, which caps |z| at (n−1)/√n ≈ 2.04 for six
  bins so that z ≥ 2 almost never fires — we are generous here on purpose.
* **high one-way delay**: p95 of the one-way delay medians in the last 24 h above
  max(1.5 × p95, mean + 2 × IQR) of the 7 days before that; ≥ 10 results in both windows,
  and pairs whose 24 h mean is ≤ −1 s or ≥ 50 s (clock trouble) or whose baseline p95 is not
  positive are left to the clock rules.
* **ASN path anomalies**: over the last 6 days of traces (≥ 11 with AS numbers), an ASN first
  seen in the last 24 h, on fewer than 30 % of the traces but on at least 4, and never the
  last ASN of a trace. Runs whose traces all fall in the last 24 h skip the rule (nothing to
  call an ASN new against).
* **destination cannot be reached from any** / **source cannot reach any**: a host whose
  traces of the last 24 h from (to) at least 2 other hosts never reached the destination;
  every such path gets the alarm.
* **bad owd measurements**: a one-way delay median ≤ −100 s or ≥ 100 s in the last 24 h.
* **large clock correction**: per host, (mean one-way delay as sender − mean as receiver) / 2
  over the last 24 h exceeds 100 ms in size; every path to or from the host gets the alarm.

The peers' multi-site grouping (one alarm for a host with trouble to ≥ 5 sites) is left out:
the grouped alarm names the same paths, so scoring per path is unchanged.

Each alarm is an :class:`~pathwatch.models.anomaly.Anomaly` of the pathwatch kind its rule
most resembles, with ``evidence["wlcg_alarm"]`` naming the rule; :data:`RULES` also lists the
label kinds the evaluation credits each rule for (generous on purpose). WLCG has no "no data"
alarm.

>>> day = 86400.0
>>> records = [{"kind": "latency", "source": "a", "destination": "b", "one_way": True,
...             "time": from_epoch(day + h * 3600), "packets_sent": 600, "packets_lost": 18}
...            for h in range(24)]
>>> [alarm] = wlcg_alarms(records)
>>> alarm.kind, alarm.evidence["wlcg_alarm"], from_epoch(alarm.detected_at), alarm.evidence["loss_pct"]
('loss_step', 'high packet loss', '1970-01-03T00:00:00Z', 3.0)
"""

from __future__ import annotations

import math
import uuid
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats

from pathwatch.contract.ids import PATHWATCH_NAMESPACE
from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.anomaly import Anomaly
from pathwatch.models.observe import LatencyObs, ThroughputObs, TraceObs, observe

__all__ = ["RULES", "Rule", "WlcgParams", "PathSeries", "collect", "covers", "run_baseline", "run_times",
           "series_extent", "time_window", "wlcg_alarms"]

DAY = 86400.0
BASELINE_VERSION = "wlcg-1"

Path = tuple[str, str]


@dataclass(frozen=True)
class Rule:
    """One WLCG alarm: its name, the pathwatch kind it resembles, the label kinds it is credited for."""

    name: str
    kind: str
    covers: frozenset[str]


_LOSS = frozenset({"loss_step", "rising_loss", "unreachable"})
_THROUGHPUT = frozenset({"throughput_drop", "diurnal_saturation", "window_limited", "mtu_blackhole", "rising_loss"})
_CLOCK = frozenset({"clock_error"})
_UNREACHABLE = frozenset({"unreachable"})

RULES: dict[str, Rule] = {rule.name: rule for rule in (
    Rule("high packet loss", "loss_step", _LOSS),
    Rule("complete packet loss", "unreachable", _LOSS),
    Rule("bandwidth decreased", "throughput_drop", _THROUGHPUT),
    Rule("high one-way delay", "latency_shift", frozenset({"latency_shift", "route_change"})),
    Rule("ASN path anomalies", "route_change", frozenset({"route_change"})),
    Rule("destination cannot be reached from any", "unreachable", _UNREACHABLE),
    Rule("source cannot reach any", "unreachable", _UNREACHABLE),
    Rule("bad owd measurements", "clock_error", _CLOCK),
    Rule("large clock correction", "clock_error", _CLOCK),
)}


def covers(alarm: Anomaly) -> frozenset[str]:
    """Label kinds a baseline alarm is credited for (by its ``evidence["wlcg_alarm"]``)."""
    return RULES[alarm.evidence["wlcg_alarm"]].covers


@dataclass(frozen=True)
class WlcgParams:
    run_offset_s: float = 0.0            # runs at 00:00 UTC (+ this offset) every day
    loss_window_s: float = DAY
    loss_threshold: float = 0.02
    throughput_history_s: float = 21 * DAY
    throughput_bin_s: float = 4 * DAY
    throughput_z: float = 2.0
    throughput_min_drop: float = 0.5     # last bin at least this far below the history mean
    owd_window_s: float = DAY
    owd_baseline_s: float = 7 * DAY
    owd_p95_factor: float = 1.5
    owd_iqr_factor: float = 2.0
    owd_min_results: int = 10
    owd_sane_ms: tuple[float, float] = (-1000.0, 50000.0)
    asn_lookback_s: float = 6 * DAY
    asn_new_within_s: float = DAY
    asn_max_on_path: float = 0.3
    asn_min_traces_with: int = 4
    asn_min_traces: int = 11
    reach_window_s: float = DAY
    reach_min_peers: int = 2
    clock_window_s: float = DAY
    bad_owd_ms: float = 100000.0
    clock_correction_ms: float = 100.0


# --- the series the rules read ------------------------------------------------------------

@dataclass
class PathSeries:
    """One path's measurements as columns in time order (NaN where a value is missing).

    The plots read the same columns, so it also keeps what only they need (``delay_min``,
    ``hop_count``, ``pmtu``, ``path_ids``).
    """

    throughput_t: np.ndarray
    throughput_bps: np.ndarray          # successful TCP runs only
    latency_t: np.ndarray
    loss: np.ndarray                    # ratio 0..1
    delay_min: np.ndarray
    delay_median: np.ndarray
    one_way: np.ndarray                 # bool
    trace_t: np.ndarray
    reached: np.ndarray                 # 1.0, 0.0 or NaN (cannot tell)
    hop_count: np.ndarray
    pmtu: np.ndarray                    # path MTU the trace reported (NaN: none)
    path_ids: list[str]
    asns: list[tuple[int, ...]]         # the known (non-null, non-zero) AS numbers in hop order

    def times(self) -> np.ndarray:
        return np.concatenate([self.throughput_t, self.latency_t, self.trace_t])


@dataclass
class _Columns:
    number: dict[str, array] = field(default_factory=lambda: defaultdict(lambda: array("d")))
    path_ids: list[str] = field(default_factory=list)
    asns: list[tuple[int, ...]] = field(default_factory=list)

    def add(self, **values: float | None) -> None:
        for name, value in values.items():
            self.number[name].append(math.nan if value is None else float(value))

    def column(self, name: str, order: np.ndarray) -> np.ndarray:
        return np.frombuffer(self.number[name], dtype=float)[order] if len(order) else np.empty(0)

    def freeze(self) -> PathSeries:
        tp = np.argsort(np.frombuffer(self.number["tp_t"], dtype=float), kind="stable")
        lat = np.argsort(np.frombuffer(self.number["lat_t"], dtype=float), kind="stable")
        tr = np.argsort(np.frombuffer(self.number["tr_t"], dtype=float), kind="stable")
        return PathSeries(
            throughput_t=self.column("tp_t", tp), throughput_bps=self.column("bps", tp),
            latency_t=self.column("lat_t", lat), loss=self.column("loss", lat),
            delay_min=self.column("dmin", lat), delay_median=self.column("dmed", lat),
            one_way=self.column("one_way", lat) > 0.5,
            trace_t=self.column("tr_t", tr), reached=self.column("reached", tr),
            hop_count=self.column("hops", tr), pmtu=self.column("pmtu", tr),
            path_ids=[self.path_ids[i] for i in tr], asns=[self.asns[i] for i in tr],
        )


def collect(records: Iterable[dict[str, Any]]) -> dict[Path, PathSeries]:
    """Per directed path, the columns the rules and plots read; records without both endpoints are skipped."""
    columns: dict[Path, _Columns] = defaultdict(_Columns)
    for record in records:
        source, destination = record.get("source"), record.get("destination")
        if source is None or destination is None:
            continue
        obs = observe(record)
        if obs is None:
            continue
        cols = columns[(source, destination)]
        if isinstance(obs, ThroughputObs):
            usable = obs.ok and not obs.udp
            cols.add(tp_t=obs.t, bps=obs.bps if usable else None)
        elif isinstance(obs, LatencyObs):
            cols.add(lat_t=obs.t, loss=obs.loss, dmin=obs.delay_min_ms, dmed=obs.delay_median_ms,
                     one_way=1.0 if obs.one_way else 0.0)
        elif isinstance(obs, TraceObs):
            reached = None if obs.reached is None else float(obs.reached)
            cols.add(tr_t=obs.t, reached=reached, hops=len(obs.hops), pmtu=obs.pmtu_bytes)
            cols.path_ids.append(obs.path_id)
            cols.asns.append(tuple(asn for asn in obs.asns if asn))
    return {path: cols.freeze() for path, cols in columns.items()}


# --- the rules: each returns findings for one run -----------------------------------------

@dataclass(frozen=True)
class _Finding:
    rule: str
    path: Path
    start: float
    score: float
    summary: str
    evidence: dict[str, Any]


def time_window(times: np.ndarray, lo: float, hi: float) -> slice:
    """Indices of ``times`` (sorted) in [lo, hi)."""
    i, j = np.searchsorted(times, (lo, hi), side="left")
    return slice(int(i), int(j))


def _finite(values: np.ndarray) -> np.ndarray:
    return values[~np.isnan(values)]


def _loss(path: Path, s: PathSeries, run: float, p: WlcgParams) -> Iterator[_Finding]:
    start = run - p.loss_window_s
    loss = _finite(s.loss[time_window(s.latency_t, start, run)])
    if loss.size == 0:
        return
    mean = float(loss.mean())
    evidence = {"loss_pct": round(100 * mean, 3), "results": int(loss.size)}
    if mean >= 1.0 - 1e-9:
        yield _Finding("complete packet loss", path, start, mean, "Complete packet loss over the last 24 h.", evidence)
    elif mean >= p.loss_threshold:
        yield _Finding("high packet loss", path, start, mean,
                       f"24 h mean packet loss {100 * mean:.2f} % ≥ {100 * p.loss_threshold:g} %.", evidence)


def _throughput(path: Path, s: PathSeries, run: float, p: WlcgParams) -> Iterator[_Finding]:
    oldest = run - p.throughput_history_s
    means: list[float | None] = []
    hi = run
    while hi > oldest:
        values = _finite(s.throughput_bps[time_window(s.throughput_t, max(hi - p.throughput_bin_s, oldest), hi)])
        means.append(float(values.mean()) if values.size else None)
        hi -= p.throughput_bin_s
    last, history = means[0], np.array([m for m in means[1:] if m is not None])
    if last is None or history.size < 2:
        return
    mean, spread = float(history.mean()), float(history.std(ddof=1))
    z = (last - mean) / spread if spread > 0 else (-math.inf if last < mean else 0.0)
    drop = 1.0 - last / mean if mean > 0 else 0.0
    if z <= -p.throughput_z and drop >= p.throughput_min_drop:
        yield _Finding("bandwidth decreased", path, run - p.throughput_bin_s, min(-z, 1e6),
                       f"Throughput of the last 4 days {last / 1e6:,.0f} Mb/s, {100 * drop:.0f} % below the "
                       f"21-day bins' {mean / 1e6:,.0f} Mb/s (z = {z:.1f}).",
                       {"last_bin_mbps": round(last / 1e6, 3), "history_mbps": round(mean / 1e6, 3),
                        "z": round(max(z, -1e6), 2), "change_pct": round(-100 * drop, 1)})


def _owd(path: Path, s: PathSeries, run: float, p: WlcgParams) -> Iterator[_Finding]:
    start = run - p.owd_window_s
    delay = np.where(s.one_way, s.delay_median, np.nan)
    current = _finite(delay[time_window(s.latency_t, start, run)])
    baseline = _finite(delay[time_window(s.latency_t, start - p.owd_baseline_s, start)])
    if min(current.size, baseline.size) < p.owd_min_results:
        return
    low, high = p.owd_sane_ms
    base_p95 = float(np.percentile(baseline, 95))
    if not low < float(current.mean()) < high or base_p95 <= 0:
        return
    threshold = max(p.owd_p95_factor * base_p95, float(baseline.mean()) + p.owd_iqr_factor * float(stats.iqr(baseline)))
    now_p95 = float(np.percentile(current, 95))
    if now_p95 > threshold:
        yield _Finding("high one-way delay", path, start, now_p95 / base_p95,
                       f"One-way delay p95 {now_p95:.1f} ms over the last 24 h, above {threshold:.1f} ms "
                       f"(baseline p95 {base_p95:.1f} ms).",
                       {"p95_ms": round(now_p95, 3), "baseline_p95_ms": round(base_p95, 3),
                        "threshold_ms": round(threshold, 3)})


def _asn(path: Path, s: PathSeries, run: float, p: WlcgParams) -> Iterator[_Finding]:
    window = time_window(s.trace_t, run - p.asn_lookback_s, run)
    new_since = run - p.asn_new_within_s
    traces = [(t, asns) for t, asns in zip(s.trace_t[window], s.asns[window]) if asns]
    if len(traces) < p.asn_min_traces or traces[0][0] >= new_since:
        return
    first_seen: dict[int, float] = {}
    seen_on: Counter = Counter()
    last_hops = {asns[-1] for _, asns in traces}
    for t, asns in traces:
        for asn in set(asns):
            seen_on[asn] += 1
            first_seen.setdefault(asn, float(t))
    new = sorted(asn for asn, count in seen_on.items()
                 if first_seen[asn] >= new_since and count / len(traces) < p.asn_max_on_path
                 and count >= p.asn_min_traces_with and asn not in last_hops)
    if new:
        first = min(first_seen[a] for a in new)
        yield _Finding("ASN path anomalies", path, first, float(len(new)),
                       f"New ASN(s) {', '.join(map(str, new))} on the path since {from_epoch(first)}.",
                       {"new_asns": new, "traces": len(traces)})


def _unreachable(series: dict[Path, PathSeries], run: float, p: WlcgParams) -> Iterator[_Finding]:
    start = run - p.reach_window_s
    # host -> {peer: any trace reached}, for the host as destination and as source
    as_destination: dict[str, dict[str, bool]] = defaultdict(dict)
    as_source: dict[str, dict[str, bool]] = defaultdict(dict)
    for (source, destination), s in series.items():
        reached = _finite(s.reached[time_window(s.trace_t, start, run)])
        if reached.size:
            as_destination[destination][source] = as_source[source][destination] = bool(reached.any())
    for rule, table in (("destination cannot be reached from any", as_destination),
                        ("source cannot reach any", as_source)):
        for host, peers in table.items():
            if len(peers) < p.reach_min_peers or any(peers.values()):
                continue
            for peer in peers:
                path = (peer, host) if table is as_destination else (host, peer)
                yield _Finding(rule, path, start, 1.0,
                               f"No trace between {host} and any of its {len(peers)} peers reached its "
                               "destination in the last 24 h.", {"host": host, "peers": len(peers)})


def _clock(series: dict[Path, PathSeries], run: float, p: WlcgParams) -> Iterator[_Finding]:
    start = run - p.clock_window_s
    sent: dict[str, list[np.ndarray]] = defaultdict(list)
    received: dict[str, list[np.ndarray]] = defaultdict(list)
    touching: dict[str, list[Path]] = defaultdict(list)
    for path, s in series.items():
        window = time_window(s.latency_t, start, run)
        delay = _finite(np.where(s.one_way[window], s.delay_median[window], np.nan))
        if delay.size == 0:
            continue
        bad = np.abs(delay) >= p.bad_owd_ms
        if bad.any():
            worst = float(delay[bad][np.argmax(np.abs(delay[bad]))])
            yield _Finding("bad owd measurements", path, start, abs(worst) / 1000,
                           f"{int(bad.sum())} one-way delays beyond ±{p.bad_owd_ms / 1000:g} s in the last 24 h "
                           f"(worst {worst / 1000:,.1f} s).", {"bad_results": int(bad.sum()), "worst_ms": worst})
        sane = delay[~bad]
        if sane.size:
            sent[path[0]].append(sane)
            received[path[1]].append(sane)
            touching[path[0]].append(path)
            touching[path[1]].append(path)
    for host in sorted(set(sent) & set(received)):
        correction = (np.concatenate(sent[host]).mean() - np.concatenate(received[host]).mean()) / 2
        if abs(correction) > p.clock_correction_ms:
            for path in touching[host]:
                yield _Finding("large clock correction", path, start, abs(float(correction)),
                               f"{host} needs a clock correction of {correction:,.0f} ms.",
                               {"host": host, "correction_ms": round(float(correction), 3)})


_PATH_RULES = (_loss, _throughput, _owd, _asn)
_MESH_RULES = (_unreachable, _clock)


# --- daily runs and alarm episodes --------------------------------------------------------

def series_extent(series: dict[Path, PathSeries]) -> tuple[float, float] | tuple[()]:
    """(earliest, latest) record time over all paths; () when there are no records."""
    times = np.concatenate([s.times() for s in series.values()]) if series else np.empty(0)
    return (float(times.min()), float(times.max())) if times.size else ()


def run_times(series: dict[Path, PathSeries], params: WlcgParams = WlcgParams()) -> list[float]:
    """The daily runs: from the first after the earliest record to the first after the latest.

    >>> s = collect([{"kind": "latency", "source": "a", "destination": "b", "time": t, "one_way": True}
    ...              for t in ("2024-01-01T05:00:00Z", "2024-01-02T23:00:00Z")])
    >>> [from_epoch(t) for t in run_times(s)]
    ['2024-01-02T00:00:00Z', '2024-01-03T00:00:00Z']
    """
    extent = series_extent(series)
    if not extent:
        return []
    off = params.run_offset_s

    def next_run(t: float) -> float:
        return math.floor((t - off) / DAY + 1) * DAY + off

    first, last = next_run(extent[0]), next_run(extent[1])
    return [first + k * DAY for k in range(int(round((last - first) / DAY)) + 1)]


def _alarm_id(rule: str, path: Path, start: float) -> str:
    return str(uuid.uuid5(PATHWATCH_NAMESPACE, f"wlcg|{rule}|{path[0]}|{path[1]}|{round(start * 1000)}"))


def _opened(finding: _Finding, run: float) -> Anomaly:
    rule = RULES[finding.rule]
    alarm = Anomaly.open(rule.kind, *finding.path, start=finding.start, detected_at=run,
                         severity="critical" if rule.kind == "unreachable" else "warning",
                         score=finding.score, summary=f"WLCG '{rule.name}': {finding.summary}",
                         evidence={"wlcg_alarm": rule.name, "runs": 1, **finding.evidence})
    return replace(alarm, id=_alarm_id(rule.name, finding.path, finding.start), detector_version=BASELINE_VERSION)


def run_baseline(series: dict[Path, PathSeries], params: WlcgParams = WlcgParams()) -> list[Anomaly]:
    """Every alarm episode of the daily runs over ``series`` (closed ones with ``end``), by start."""
    episodes: dict[tuple[str, Path], Anomaly] = {}
    done: list[Anomaly] = []
    for run in run_times(series, params):
        found: dict[tuple[str, Path], _Finding] = {}
        for rule in _PATH_RULES:
            for path, s in series.items():
                for finding in rule(path, s, run, params):
                    found.setdefault((finding.rule, finding.path), finding)
        for mesh_rule in _MESH_RULES:
            for finding in mesh_rule(series, run, params):
                found.setdefault((finding.rule, finding.path), finding)
        for key in [key for key in episodes if key not in found]:
            done.append(episodes.pop(key).closed(run))
        for key, finding in found.items():
            alarm = episodes.get(key)
            if alarm is None:
                episodes[key] = _opened(finding, run)
            else:
                runs = alarm.evidence["runs"] + 1
                episodes[key] = alarm.grown(severity=alarm.severity, score=finding.score, summary=alarm.summary,
                                            evidence={"wlcg_alarm": finding.rule, "runs": runs, **finding.evidence})
    done.extend(episodes.values())
    return sorted(done, key=lambda a: (a.start, a.kind, a.source or "", a.destination or "", a.id))


def wlcg_alarms(records: Iterable[dict[str, Any]], params: WlcgParams = WlcgParams()) -> list[Anomaly]:
    """The baseline's alarms over canonical record dicts."""
    return run_baseline(collect(records), params)
