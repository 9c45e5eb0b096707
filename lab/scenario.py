"""Scenarios: a fault injected into the running lab while its collectors measure, judged by the
running pipeline (``pathwatch lab scenario NAME``).

Each run names its hosts afresh (``a1.<tag>.lab``: new paths, so no detector state carries over
from an earlier run; the tag is drawn until the run's paths reach every partition of the
records topic, see ``partitions.py``) and runs on the lab clock (``clock.py``, ``factor`` lab seconds per real
second). Runs follow each other on the lab clock, an hour apart (``<state>/clock.json``: the
detect job releases records once the newest record it has seen has moved past them, so a run
placed before an earlier one would be late from its first record), starting 30 days in the past
when the clock is new (``lab scenario --fresh`` starts it anew, and the pipeline with it), and
never running into the future: the pipeline refuses records ahead of its clock. It measures ``baseline_h`` lab hours
(the detectors learn a path's routes and levels), injects the fault for ``fault_h``, removes
it, measures ``after_h`` more, and then reads the anomalies the pipeline stored for its hosts:

- detected: an anomaly of an expected kind on an affected path, starting after the injection
  began (or within ``RUN_SLACK_S`` real seconds before it: a run stamped with its start that
  began just before the injection sent its probes after it; a loss anomaly from the start of the
  injection's hour, the loss detector's hourly bins); its delay is from the injection to its
  start (lab hours) and to the row (real seconds);
- false alarms: every other anomaly of the run (a benign scenario expects none at all).

>>> SCENARIOS["route_change"].expect, SCENARIOS["benign"].fault is None
(('route_change',), True)
>>> affected(SCENARIOS["host_dark"], "t1", "a1.t1.lab", "b2.t1.lab"), affected(SCENARIOS["host_dark"], "t1", "a1.t1.lab", "b1.t1.lab")
(True, False)
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pathwatch.contract.keys import path_key

from .collectors import host_name
from .partitions import tag_feeding_every_partition
from .topology import SITE_A_HOSTS, SITE_B_HOSTS

RUN_SLACK_S = 2.0   # real seconds a run may have started before the injection and still probe after it
HOURLY_KINDS = frozenset({"loss_step", "rising_loss"})   # dated from the hour bin their loss began in
FIRST_RUN_DAYS = 30.0  # how far in the past a new lab clock starts


@dataclass(frozen=True)
class Scenario:
    """A fault (None: a benign run), what names it, which paths it touches, how long each phase lasts."""

    name: str
    does: str
    fault: str | None
    params: dict = field(default_factory=dict)
    expect: tuple[str, ...] = ()
    touches: str = "between-sites"      # "between-sites", or a host whose paths (both ways) it touches
    ramp: tuple[dict, ...] = ()         # parameters applied one after another in equal parts of the fault
                                        # phase (a share that rises); none: ``params`` throughout
    baseline_h: float = 30.0
    fault_h: float = 8.0
    after_h: float = 4.0
    busy_hours: tuple[float, float] | None = None   # the fault in force only in these lab hours of
                                                    # each day of the fault phase (a busy afternoon) ...
    bursts: tuple[tuple[float, float], ...] = ()    # ... or only in these spans, lab hours after the
                                                    # injection (one-off bursts)
    setup: tuple[str, dict] | None = None   # a fault in force for the whole run, baseline included:
                                            # part of the network the detectors learn, not the fault
    inject_at_h: float | None = None    # the lab hour of day (UTC) to inject at: the run's lab clock
                                        # starts later (never earlier) to make it so
    short: tuple[float, float, float] = (26.0, 4.0, 0.5)   # the short version's (baseline_h, fault_h, after_h)
    version: str = "full"               # "short": the phases of ``short`` (see :meth:`shortened`)

    def shortened(self) -> "Scenario":
        """The short version (CI's): the phases of ``short``, the fault phase ending once the fault is
        named (a benign run keeps its whole length: its result is that nothing was named).

        >>> short = SCENARIOS["route_change"].shortened()
        >>> (short.baseline_h, short.fault_h, short.after_h, short.until_named)
        (26.0, 4.0, 0.5, True)
        """
        baseline_h, fault_h, after_h = self.short
        return replace(self, baseline_h=baseline_h, fault_h=fault_h, after_h=after_h, version="short")

    @property
    def until_named(self) -> bool:
        """Whether the fault phase ends as soon as the fault is named (a short version's)."""
        return self.version == "short" and bool(self.expect)


# Short versions (``short``): the routes' and the throughput tests' detectors learn for a day or for
# several runs, the others within hours. A route change and the runs that must stay quiet after a
# day of learnt routes keep a 26-hour baseline (the route detector takes a tool's routes of its
# first day without question), and so do the loss scenarios (the loss detector's reference is a
# path's first 24 hourly bins until it has more: with less baseline, fault hours fill it); the
# rest measure 8 hours first. A fault's phase is as long as its signature takes to show (a window
# limit: four runs of a throughput test, ~6 lab hours apart; a daily pattern: two afternoons, and a
# third in the phase for when a busy machine blurred the first, the injection at 06:00, a baseline
# at night, so that its noisy hours cannot widen the busy hours back to before the injection; a 1 %
# loss: the ~20 lost packets a path needs for a step take ~14 lab hours at a ping test of 100
# packets every 45 minutes, so the phase is the full version's 24) and ends as soon as the fault
# is named.
SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("route_change", "site-to-site traffic moves to the backup path", "route_change", expect=("route_change",)),
    Scenario("mtu_black_hole", "a 1500-byte link between 9000-byte hosts, ICMP frag-needed dropped", "mtu_black_hole",
             expect=("mtu_blackhole",), short=(8.0, 6.0, 0.5)),
    Scenario("lag_member_loss", "one aggregate member drops a rising share, 0.5 % to 4 % (flows hashed onto it "
             "suffer)", "lag_member_loss", {"member": "0"}, expect=("rising_loss", "loss_step"),
             ramp=tuple({"percent": p} for p in ("0.5", "1", "2", "4")), fault_h=36.0, short=(26.0, 40.0, 0.5)),
    Scenario("small_buffers", "a1's TCP buffers capped at 64 kB", "small_buffers", {"host": "a1", "window_kb": "64"},
             expect=("window_limited", "throughput_drop"), touches="a1", fault_h=60.0, short=(8.0, 56.0, 0.5)),
    Scenario("firewall_loss", "ra drops 1 % of site-to-site packets", "firewall_loss", {"percent": "1"},
             expect=("loss_step",), fault_h=24.0, short=(26.0, 24.0, 0.5)),
    # The link is faster than two of the lab's own throughput tests at once (200 Mbit/s each), so
    # that only the cross traffic fills its queue, as on a real path whose tests do not saturate it.
    Scenario("saturation", "rp→rb is a 500 Mbit/s link with a 40 ms queue; every lab afternoon (13–18 h) a "
             "bulk transfer a2→b2 (4 TCP streams) fills it", "cross_traffic", {"from": "a2", "to": "b2"},
             expect=("diurnal_saturation",), setup=("saturation", {"rate_mbit": "500", "queue_ms": "40"}),
             busy_hours=(13.0, 18.0), inject_at_h=6.0, fault_h=96.0, short=(8.0, 68.0, 0.5)),
    Scenario("benign_bursts", "benign: the same 500 Mbit/s link; a bulk transfer a2→b2 fills it three times, "
             "for 1 to 2 lab hours, at no time of day in particular", "cross_traffic", {"from": "a2", "to": "b2"},
             setup=("saturation", {"rate_mbit": "500", "queue_ms": "40"}),
             bursts=((2.0, 3.0), (9.5, 11.5), (19.0, 20.5)), fault_h=24.0, short=(8.0, 12.0, 0.5)),
    Scenario("host_dark", "b2 goes dark", "host_dark", {"host": "b2"}, expect=("unreachable", "no_data"), touches="b2",
             short=(8.0, 3.0, 0.5)),
    Scenario("benign", "no fault: the lab as it is", None, short=(26.0, 2.0, 0.5)),
    Scenario("benign_flaky_router", "benign: rp answers about 95 % of trace probes", "flaky_router",
             {"percent": "5"}),
)}  # fmt: skip


def affected(scenario: Scenario, tag: str, source: str | None, destination: str | None) -> bool:
    """Whether the path ``source``→``destination`` is one the scenario's fault touches."""
    ends = {source, destination}
    if scenario.touches == "between-sites":
        a = {host_name(h, tag) for h in SITE_A_HOSTS}
        b = {host_name(h, tag) for h in SITE_B_HOSTS}
        return bool(ends & a) and bool(ends & b)
    return host_name(scenario.touches, tag) in ends


@dataclass
class Outcome:
    """What one scenario run found."""

    scenario: str
    tag: str
    factor: float
    expected: tuple[str, ...]
    version: str = "full"                   # or "short" (:meth:`Scenario.shortened`)
    injected_lab: str | None = None
    detected: dict | None = None            # the first anomaly of an expected kind on an affected path
    delay_lab_h: float | None = None        # from the injection to its start
    delay_real_s: float | None = None       # from the injection until its row was there
    false_alarms: list[dict] = field(default_factory=list)
    lab_hours: float = 0.0                  # lab time the collectors measured
    records: int = 0
    late: int = 0                           # of them, stored but not analysed (arrived after their path moved on)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        if not self.expected:
            return not self.false_alarms
        return self.detected is not None

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {**asdict(self), "passed": self.passed}


def _anomalies(database_url: str, tag: str) -> list[dict]:
    import psycopg
    from psycopg.rows import dict_row

    pattern = f"%.{tag}.lab"
    with psycopg.connect(database_url, row_factory=dict_row) as connection:
        return connection.execute(
            "SELECT id::text, kind, source, destination, start, end_time, summary FROM anomalies "
            "WHERE source LIKE %s OR destination LIKE %s ORDER BY start", (pattern, pattern)).fetchall()


def _records(database_url: str, tag: str) -> tuple[int, int]:
    """(records stored for the run's hosts, those the detectors did not analyse because they were late)."""
    import psycopg
    from psycopg import sql

    pattern = f"%.{tag}.lab"
    with psycopg.connect(database_url) as connection:
        stored = sum(connection.execute(sql.SQL("SELECT count(*) FROM {} WHERE source LIKE %s").format(sql.Identifier(table)),
                                        (pattern,)).fetchone()[0]
                     for table in ("latency", "trace", "throughput"))  # fmt: skip
        late = connection.execute("SELECT count(*) FROM dead_letters WHERE stage = 'detect' AND reason LIKE 'late%%' "
                                  "AND input LIKE %s", (f"%.{tag}.lab%",)).fetchone()[0]  # fmt: skip
    return stored, late


def hourly_table(database_url: str, scenario: Scenario, tag: str) -> list[dict]:
    """What the fault's paths measured, per lab hour (:func:`by_lab_hour` of the store's own hourly
    rollups, ``path_hourly``) — the table a run that did not name its fault is read by (``lab
    scenario`` prints it)."""
    import psycopg

    pattern = f"%.{tag}.lab"
    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT bucket, source, destination, latency_runs, delay_p95_ms - delay_min_ms, packets_lost, "
            "packets_sent, throughput_runs - throughput_failed, throughput_mean_bps FROM path_hourly "
            "WHERE source LIKE %s", (pattern,)).fetchall()  # fmt: skip
    return by_lab_hour(rows, lambda source, destination: affected(scenario, tag, source, destination))


def throughput_runs(database_url: str, scenario: Scenario, tag: str) -> list[dict]:
    """The throughput runs on the fault's paths, one row each (:func:`run_row`), as the throughput
    detectors read them — the table a throughput fault that was not named is read by."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        rows = connection.execute(
            "SELECT t.source, t.destination, t.time, t.succeeded, t.throughput_bps, t.retransmits, t.rtt_ms, "
            "t.rtt_min_ms, t.tcp_window_bytes, t.receive_window_bytes, t.send_buffer_bytes, t.streams, "
            "(SELECT json_agg(json_build_object('start_s', i.start_s, 'end_s', i.end_s, 'throughput_bps', "
            "  i.throughput_bps, 'retransmits', i.retransmits, 'omitted', i.omitted) ORDER BY i.start_s) "
            " FROM throughput_intervals i WHERE i.id = t.id AND i.time = t.time) "
            "FROM throughput t WHERE t.source LIKE %s ORDER BY t.time", (f"%.{tag}.lab",)).fetchall()  # fmt: skip
    columns = ("time", "succeeded", "throughput_bps", "retransmits", "rtt_ms", "rtt_min_ms", "tcp_window_bytes",
               "receive_window_bytes", "send_buffer_bytes", "streams", "intervals")
    return [run_row(source, destination, {"kind": "throughput", **dict(zip(columns, measured)),
                                          "time": measured[0].isoformat(), "intervals": measured[-1] or []})
            for source, destination, *measured in rows if affected(scenario, tag, source, destination)]


def run_row(source: str, destination: str, record: dict) -> dict:
    """One throughput run (its stored ``record``) as the throughput detectors read it
    (:func:`pathwatch.models.observe.observe`): rate, retransmits, mean and lowest RTT, the three
    windows iperf3 reports and the bytes in flight per round trip
    (:func:`pathwatch.models.tcp.bytes_in_flight`; sizes in KiB), and the flatness of its interval
    rates (``interval_cv``: the first moving second left out) — as :func:`throughput_runs` prints it.

    >>> row = run_row("a1.x.lab", "b1.x.lab", {"kind": "throughput", "time": "2026-10-30T05:00:00+00:00",
    ...     "succeeded": True, "throughput_bps": 46e6, "retransmits": 1, "rtt_ms": 11.0, "rtt_min_ms": 10.5,
    ...     "send_buffer_bytes": 65_536,
    ...     "intervals": [{"end_s": s, "throughput_bps": b} for s, b in ((1, 52e6), (2, 46e6), (3, 46e6))]})
    >>> row["path"], row["in_flight_kib"], row["sndbuf_kib"], row["interval_cv"]
    ('a1→b1', 61.8, 64.0, 0.0)
    """
    from pathwatch.models.observe import observe
    from pathwatch.models.tcp import bytes_in_flight

    run = observe(record)
    moved = bytes_in_flight(run)

    def kib(size):
        return None if size is None else round(size / 1024, 1)

    def rounded(value, digits):
        return None if value is None else round(value, digits)

    return {"time": record["time"][:16].replace("T", " "),
            "path": f"{source.split('.')[0]}→{destination.split('.')[0]}", "succeeded": run.ok,
            "mbps": None if run.bps is None else round(run.bps / 1e6, 1), "retransmits": run.retransmits,
            "rtt_ms": rounded(run.rtt_ms, 2), "rtt_min_ms": rounded(run.rtt_min_ms, 2),
            "cwnd_kib": kib(run.window_bytes), "rwnd_kib": kib(run.receive_window_bytes),
            "sndbuf_kib": kib(run.send_buffer_bytes), "in_flight_kib": kib(moved[0]) if moved else None,
            "interval_cv": rounded(run.interval_cv, 3)}


def by_lab_hour(rows: list[tuple], chosen: Callable[[str, str], bool]) -> list[dict]:
    """Per hour, the ``chosen`` paths' latency tests (the median over the paths of their mean
    95th-percentile delay above the hour's minimum, the queueing; and their loss) and throughput
    runs (their mean rate).

    ``rows``: one per path and hour, (hour, source, destination, latency tests, p95 queueing ms,
    packets lost, packets sent, throughput runs, mean bits/s) — ``path_hourly``'s columns.

    >>> rows = by_lab_hour([("01h", "a", "b", 2, 20.0, 1, 200, 0, None), ("01h", "c", "b", 1, 40.0, 1, 100, 1, 1e8),
    ...                     ("01h", "a", "a2", 1, 99.0, 0, 100, 0, None), ("02h", "a", "b", 0, None, None, None, 3, 2e8)],
    ...                    lambda source, destination: destination == "b")
    >>> [(r["lab_hour"], r["tests"], r["p95_queueing_ms"], r["loss_pct"], r["runs"], r["mbps"]) for r in rows]
    [('01h', 3, 30.0, 0.67, 1, 100.0), ('02h', 0, None, None, 3, 200.0)]
    """
    import statistics
    from collections import defaultdict

    paths = defaultdict(list)
    for hour, source, destination, *measured in rows:
        if chosen(source, destination):
            paths[hour].append(measured)
    table = []
    for hour, measured in sorted(paths.items()):
        tests, queueing, lost, sent, runs, mean_bps = zip(*measured)     # (columns over the paths)
        queueing = [q for q in queueing if q is not None]
        sent_all, rated = sum(n or 0 for n in sent), [(n, bps) for n, bps in zip(runs, mean_bps) if bps is not None]
        rated_runs = sum(n for n, _ in rated)
        table.append({"lab_hour": f"{hour:%Y-%m-%d %H}h" if hasattr(hour, "strftime") else str(hour),
                      "tests": sum(tests),
                      "p95_queueing_ms": round(statistics.median(queueing), 1) if queueing else None,
                      "loss_pct": round(100 * sum(n or 0 for n in lost) / sent_all, 2) if sent_all else None,
                      "runs": sum(runs),
                      "mbps": round(sum(n * bps for n, bps in rated) / rated_runs / 1e6, 1) if rated_runs else None})
    return table


def run(scenario: Scenario, lab, settings, factor: float = 600.0,
        report: Callable[[str], None] = lambda line: None, poll_s: float = 5.0) -> Outcome:
    """Run ``scenario`` in the running ``lab`` against the running pipeline of ``settings``."""
    from pathwatch.contract.timefmt import from_epoch

    tag = tag_feeding_every_partition(lambda tag: _path_keys(lab, tag), _partitions(settings, "records"),
                                      lambda: uuid.uuid4().hex[:6])
    phases = (scenario.baseline_h, scenario.fault_h, scenario.after_h)
    total_lab_s = sum(phases) * 3600
    started = time.time()
    last_end = _last_end(lab.state_dir)
    lab_origin = last_end + 3600 if last_end else started - FIRST_RUN_DAYS * 86400
    if scenario.inject_at_h is not None:   # (the collectors take a second or two real to start, so a bit later)
        lab_origin += until_hour_of_day(lab_origin + scenario.baseline_h * 3600, scenario.inject_at_h)
    if lab_origin + 1.5 * total_lab_s + 86400 > started:  # with room for a run that overruns its plan
        raise RuntimeError(f"the lab clock has caught up with the wall clock (the last run ended at lab "
                           f"{from_epoch(int(last_end))}): `pathwatch lab scenario --fresh` starts it anew")
    outcome = Outcome(scenario.name, tag, factor, scenario.expect, scenario.version)
    log = (lab.state_dir / f"collectors-{tag}.log").open("wb")
    collectors = subprocess.Popen([sys.executable, "-m", "pathwatch.lab.collectors", "--state", str(lab.state_dir),
                                   "--tag", tag, "--bootstrap", settings.bootstrap, "--topic", settings.topics["raw"],
                                   "--factor", f"{factor:g}", "--lab-origin", f"{lab_origin:.3f}"],
                                  stdout=subprocess.PIPE, stderr=log, start_new_session=True)  # fmt: skip
    if collectors.stdout.readline().strip() != b"ready":
        collectors.kill()
        raise RuntimeError(f"the lab's collectors did not start: see {log.name}")
    report(f"{scenario.name} [{tag}]: hosts *.{tag}.lab measuring at {factor:g}× "
           f"({phases[0]:g} h baseline, {phases[1]:g} h fault, {phases[2]:g} h after, lab time; "
           f"{total_lab_s / factor / 60:.1f} min real"
           + ("; the short version: the fault phase ends once the fault is named" if scenario.until_named else "")
           + ")")  # fmt: skip
    injected_real = None
    try:
        if scenario.setup:      # (the collectors' first tests, a moment before, are not faster than the link)
            applied = lab.fault(scenario.setup[0], scenario.setup[1])
            report(f"{scenario.name} [{tag}]: the network has {scenario.setup[0]} {applied} for the whole run")
        time.sleep(phases[0] * 3600 / factor)
        steps = scenario.ramp or ({},)
        step_s = phases[1] * 3600 / factor / len(steps)
        # a scheduled fault (busy hours, bursts) is switched within 10 lab minutes of each span's ends
        scheduled = bool(scenario.busy_hours or scenario.bursts)
        tick = min(poll_s, 600 / factor) if scheduled else poll_s
        named = False
        for index, step in enumerate(steps):
            params = {**scenario.params, **step}
            if index == 0:       # the injection begins with its first command (applying takes a second or two)
                injected_real = time.time()
            if scenario.fault:
                if index:
                    lab.fault(scenario.fault, on=False)
                if not scheduled:
                    applied = lab.fault(scenario.fault, params)
            if index == 0:
                outcome.injected_lab = from_epoch(int(lab_origin + (injected_real - started) * factor))
                report(f"{scenario.name} [{tag}]: " + (f"{scenario.fault} injected at lab {outcome.injected_lab}"
                                                      if scenario.fault else "no fault (benign run)")
                       + (" (in force from {:g} to {:g} h of each lab day)".format(*scenario.busy_hours)
                          if scenario.busy_hours else "")
                       + (" (in force {} lab hours after it)".format(", ".join(f"{a:g}–{b:g}" for a, b in scenario.bursts))
                          if scenario.bursts else ""))  # fmt: skip
            if scenario.ramp and scenario.fault:
                report(f"{scenario.name} [{tag}]: step {index + 1} of {len(steps)}: {applied}")
            end_step, judged = injected_real + (index + 1) * step_s, time.time()
            while time.time() < end_step:
                if scheduled:
                    now = time.time()
                    _follow_schedule(scenario, lab, params, lab_origin + (now - started) * factor,
                                     (now - injected_real) * factor / 3600, report)
                time.sleep(min(tick, max(0.0, end_step - time.time())))
                if time.time() - judged >= poll_s or time.time() >= end_step:
                    _judge(outcome, scenario, settings, injected_real, report)
                    judged = time.time()
                    named = scenario.until_named and outcome.detected is not None
                    if named:
                        break
            if named:
                report(f"{scenario.name} [{tag}]: named: the fault phase ends here (a short version)")
                break
        if scenario.fault and scenario.fault in lab.faults:
            lab.fault(scenario.fault, on=False)
            report(f"{scenario.name} [{tag}]: {scenario.fault} removed")
        time.sleep(phases[2] * 3600 / factor)
    finally:
        collectors.terminate()
        collectors.wait(120)
        outcome.lab_hours = round((time.time() - started) * factor / 3600, 1)
        _save_end(lab.state_dir, lab_origin + (time.time() - started) * factor)
        for fault in (scenario.fault, scenario.setup[0] if scenario.setup else None):
            if fault and fault in lab.faults:
                lab.fault(fault, on=False)
    _wait_stored(settings)
    _judge(outcome, scenario, settings, injected_real, report, final=True)
    outcome.records, outcome.late = _records(settings.database_url, tag)
    outcome.seconds = round(time.time() - started, 1)
    return outcome


def until_hour_of_day(t: float, hour: float) -> float:
    """Seconds from ``t`` (epoch s) to the next ``hour`` of the day, UTC (0 when it is that hour).

    >>> until_hour_of_day(86400 + 10 * 3600, 12.0) / 3600, until_hour_of_day(86400 + 13 * 3600, 12.0) / 3600
    (2.0, 23.0)
    """
    return (hour * 3600 - t) % 86400


def in_schedule(scenario: Scenario, lab_t: float, since_injection_h: float) -> bool:
    """Whether the scenario's fault is due at lab time ``lab_t`` (epoch s, UTC), ``since_injection_h``
    lab hours into its fault phase: in its busy hours of the day, or in one of its bursts.

    >>> in_schedule(SCENARIOS["saturation"], 13.5 * 3600, 0), in_schedule(SCENARIOS["saturation"], 18 * 3600, 0)
    (True, False)
    >>> in_schedule(SCENARIOS["benign_bursts"], 0, 2.5), in_schedule(SCENARIOS["benign_bursts"], 0, 3.5)
    (True, False)
    """
    if scenario.busy_hours:
        start, end = scenario.busy_hours
        return start <= (lab_t % 86400) / 3600 < end
    return any(start <= since_injection_h < end for start, end in scenario.bursts)


def _follow_schedule(scenario: Scenario, lab, params: dict, lab_t: float, since_injection_h: float, report) -> None:
    """Switch the scenario's fault on when its busy hours or a burst begin, and off when they end."""
    from pathwatch.contract.timefmt import from_epoch

    due, active = in_schedule(scenario, lab_t, since_injection_h), scenario.fault in lab.faults
    if due != active:
        lab.fault(scenario.fault, params, on=due)
        report(f"{scenario.name}: lab {from_epoch(int(lab_t))}: {'busy hours' if scenario.busy_hours else 'a burst'} "
               f"{'begin' if due else 'end'}{'s' if not scenario.busy_hours else ''}, "
               f"{scenario.fault} {'on' if due else 'off'}")


def _path_keys(lab, tag: str) -> list[str]:
    """The message keys of a run's paths (the lab's mesh: every host to every other)."""
    names = [host_name(host, tag) for host in lab.topology.hosts]
    return [path_key(source, destination) for source in names for destination in names if source != destination]


def _partitions(settings, role: str) -> int:
    """How many partitions the stack's topic of ``role`` has (its security settings as
    :func:`pathwatch.streaming.pipeline.job_lag` reads them, from the stack of ``settings.home``)."""
    from confluent_kafka.admin import AdminClient

    from pathwatch.stack.config import resolve
    from pathwatch.stack.kafka_security import client_config

    topic = settings.topics[role]
    admin = AdminClient(client_config(settings.bootstrap, resolve(home=settings.home)))
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


def _last_end(state_dir: Path) -> float:
    """The lab time at which the last run ended (0 when none ran)."""
    import json

    try:
        return float(json.loads((state_dir / "clock.json").read_text())["lab_end"])
    except FileNotFoundError:
        return 0.0


def reset_clock(state_dir: Path) -> None:
    """Start the lab clock anew (with a pipeline started afresh: its detectors forgot the last runs)."""
    (state_dir / "clock.json").unlink(missing_ok=True)


def _save_end(state_dir: Path, lab_end: float) -> None:
    import json

    (state_dir / "clock.json").write_text(json.dumps({"lab_end": max(lab_end, _last_end(state_dir))}) + "\n")


def _wait_stored(settings, timeout: float = 120) -> None:
    from pathwatch.streaming.pipeline import job_lag

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(job_lag(settings, name) for name in ("normalise", "detect", "store")):
            return
        time.sleep(2)


def _judge(outcome: Outcome, scenario: Scenario, settings, injected_real: float | None,
           report: Callable[[str], None], final: bool = False) -> None:
    from pathwatch.contract.timefmt import format_utc

    from pathwatch.models.observe import epoch

    rows = _anomalies(settings.database_url, outcome.tag)
    injected = epoch(outcome.injected_lab) if outcome.injected_lab else None
    hits = [row for row in rows if scenario.fault and row["kind"] in scenario.expect
            and affected(scenario, outcome.tag, row["source"], row["destination"])
            and injected is not None and row["start"].timestamp() >= _earliest(row["kind"], injected, outcome.factor)]  # fmt: skip
    if hits and outcome.detected is None:
        first = hits[0]
        outcome.detected = {key: (format_utc(value) if hasattr(value, "tzinfo") else value)
                            for key, value in first.items()}  # fmt: skip
        outcome.delay_lab_h = round((first["start"].timestamp() - injected) / 3600, 2)
        outcome.delay_real_s = round(time.time() - injected_real, 1)
        report(f"{scenario.name} [{outcome.tag}]: detected {first['kind']} {first['source']}→{first['destination']} "
               f"({outcome.delay_lab_h} lab h after the injection, row {outcome.delay_real_s} s after it): "
               f"{first['summary']}")  # fmt: skip
    if final:
        hit_ids = {row["id"] for row in hits}
        outcome.false_alarms = [{"kind": row["kind"], "source": row["source"], "destination": row["destination"],
                                 "start": format_utc(row["start"]), "summary": row["summary"]}
                                for row in rows if row["id"] not in hit_ids]  # fmt: skip


def _earliest(kind: str, injected: float, factor: float) -> float:
    """The earliest start (lab epoch) an anomaly of ``kind`` may have and still be the injected fault's.

    >>> _earliest("route_change", 7200.0 + 2700.0, 900.0), _earliest("loss_step", 7200.0 + 2700.0, 900.0)
    (8100.0, 7200.0)
    """
    earliest = injected - RUN_SLACK_S * factor
    return min(earliest, injected // 3600 * 3600) if kind in HOURLY_KINDS else earliest


def results_path(home: Path) -> Path:
    return home / "lab" / "scenarios.jsonl"
