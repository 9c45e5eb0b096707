"""Each WLCG/OSG rule of the baseline on focused synthetic record series: it fires where it
should, only at the next daily run, and stays quiet on healthy series."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pathwatch.contract.timefmt import from_epoch
from pathwatch.models.baseline_wlcg import RULES, WlcgParams, collect, run_times, wlcg_alarms

H, D = 3600.0, 86400.0
T0 = 1704067200.0  # 2024-01-01T00:00:00Z, a midnight


def latency(t, src="a", dst="b", *, loss=0.0, median=10.0, one_way=True):
    return {"kind": "latency", "source": src, "destination": dst, "time": from_epoch(t), "one_way": one_way,
            "packets_sent": 600, "loss_ratio": loss, "delay_min_ms": median - 0.2, "delay_median_ms": median}


def throughput(t, bps, src="a", dst="b"):
    return {"kind": "throughput", "source": src, "destination": dst, "time": from_epoch(t), "protocol": "tcp",
            "throughput_bps": bps}


def trace(t, asns, src="a", dst="b", *, reached=True):
    hops = [{"ttl": n + 1, "ip": f"10.{asn % 250}.0.{n + 1}", "asn": asn} for n, asn in enumerate(asns)]
    return {"kind": "trace", "source": src, "destination": dst, "time": from_epoch(t), "hops": hops,
            "hop_count": len(hops), "path_id": "-".join(h["ip"] for h in hops), "reached": reached}


def hourly(days, start=T0, step=H):
    return [start + k * step for k in range(int(days * D / step))]


def only(alarms, rule):
    return [a for a in alarms if a.evidence["wlcg_alarm"] == rule]


def at_runs(alarms):
    """Every alarm is detected on a daily run (00:00 UTC) after its window starts."""
    return all(a.detected_at % D == 0 and a.detected_at > a.start for a in alarms)


# --- runs -----------------------------------------------------------------------------------

def test_runs_are_daily_midnights_after_the_data():
    series = collect([latency(T0 + 5 * H), latency(T0 + 2 * D + 23 * H)])
    assert run_times(series) == [T0 + D, T0 + 2 * D, T0 + 3 * D]
    assert run_times(series, WlcgParams(run_offset_s=6 * H)) == [T0 + k * D + 6 * H for k in range(4)]
    assert run_times({}) == []


# --- packet loss ----------------------------------------------------------------------------

def test_loss_alarm_opens_on_the_next_run_and_closes_when_a_run_no_longer_finds_it():
    # 5 % loss from day 1 12:00 to day 3 00:00: day 1's mean is 2.5 % (fires on day 2's run),
    # day 2's is 5 % (still open on day 3's run), day 3 is clean (closes on day 4's run)
    records = [latency(t, loss=0.05 if T0 + 1.5 * D <= t < T0 + 3 * D else 0.0) for t in hourly(4)]
    [alarm] = wlcg_alarms(records)
    assert (alarm.kind, alarm.evidence["wlcg_alarm"]) == ("loss_step", "high packet loss")
    assert (alarm.start, alarm.detected_at, alarm.end) == (T0 + D, T0 + 2 * D, T0 + 4 * D)
    assert alarm.evidence["runs"] == 2 and alarm.evidence["loss_pct"] == pytest.approx(5.0)


def test_loss_just_under_two_percent_and_a_short_burst_stay_quiet():
    steady = [latency(t, loss=0.019) for t in hourly(3)]
    burst = [latency(t, src="b", dst="a", loss=0.3 if T0 + D <= t < T0 + D + H else 0.0) for t in hourly(3)]
    assert wlcg_alarms(steady + burst) == []      # 30 % for one hour is 1.25 % over the day


def test_complete_loss_is_its_own_alarm():
    records = [latency(t, loss=1.0 if t >= T0 + D else 0.0) for t in hourly(3)]
    alarms = wlcg_alarms(records)
    assert {a.evidence["wlcg_alarm"] for a in alarms} == {"complete packet loss"}
    assert alarms[0].kind == "unreachable" and alarms[0].detected_at == T0 + 2 * D and alarms[0].is_open


# --- throughput -----------------------------------------------------------------------------

def noisy_throughput(drop_at=None, level=0.3, days=21, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for t in hourly(days, step=6 * H):
        bps = 1e9 * (1 + 0.05 * rng.standard_normal())
        out.append(throughput(t, bps * (level if drop_at is not None and t >= drop_at else 1.0)))
    return out


def test_bandwidth_decrease_fires_once_the_last_4_day_bin_is_half_gone():
    # drop to 30 % on day 14: the bin ending on day 17's run is 1 day normal + 3 days low = 47.5 %
    alarms = wlcg_alarms(noisy_throughput(drop_at=T0 + 14 * D))
    [alarm] = only(alarms, "bandwidth decreased")
    assert alarm.kind == "throughput_drop"
    assert alarm.detected_at == T0 + 17 * D and alarm.start == T0 + 13 * D
    assert alarm.evidence["z"] <= -2 and alarm.evidence["change_pct"] <= -50
    assert at_runs(alarms)


def test_healthy_and_moderate_throughput_drops_stay_quiet():
    assert wlcg_alarms(noisy_throughput()) == []
    # a 35 % drop is many sigmas of the bin means, but the peers' pair alarm asks for a 50 % change
    assert wlcg_alarms(noisy_throughput(drop_at=T0 + 10 * D, level=0.65)) == []


# --- one-way delay --------------------------------------------------------------------------

def owd_series(step_at=None, to=35.0, days=10, seed=2):
    rng = np.random.default_rng(seed)
    return [latency(t, median=(to if step_at is not None and t >= step_at else 20.0) + 0.3 * rng.standard_normal())
            for t in hourly(days, step=H / 2)]


def test_one_way_delay_p95_above_one_and_a_half_baseline_p95_fires_at_the_next_run():
    alarms = wlcg_alarms(owd_series(step_at=T0 + 8 * D + 6 * H))
    [alarm] = alarms
    assert (alarm.kind, alarm.evidence["wlcg_alarm"]) == ("latency_shift", "high one-way delay")
    assert (alarm.start, alarm.detected_at) == (T0 + 8 * D, T0 + 9 * D)
    assert alarm.evidence["p95_ms"] > alarm.evidence["threshold_ms"] >= 1.5 * alarm.evidence["baseline_p95_ms"]


def test_healthy_and_smaller_delay_steps_stay_quiet():
    assert wlcg_alarms(owd_series()) == []
    assert wlcg_alarms(owd_series(step_at=T0 + 8 * D, to=27.0)) == []   # +35 %: under 1.5 × p95
    rtt = [dict(r, one_way=False) for r in owd_series(step_at=T0 + 8 * D)]
    assert wlcg_alarms(rtt) == []                                        # the rule reads one-way delay only


# --- new ASN on the path --------------------------------------------------------------------

def test_new_asn_fires_on_the_next_run_and_is_no_longer_new_a_day_later():
    change = T0 + 7 * D + 10 * H
    records = [trace(t, [100, 250, 300] if t >= change else [100, 200, 300]) for t in hourly(9)]
    [alarm] = wlcg_alarms(records)
    assert (alarm.kind, alarm.evidence["wlcg_alarm"], alarm.evidence["new_asns"]) == \
        ("route_change", "ASN path anomalies", [250])
    assert (alarm.start, alarm.detected_at, alarm.end) == (change, T0 + 8 * D, T0 + 9 * D)


def test_stable_alternating_and_blipping_asns_stay_quiet():
    stable = [trace(t, [100, 200, 300]) for t in hourly(8)]
    ecmp = [trace(t, [100, 200 if k % 2 else 201, 300], src="b", dst="a") for k, t in enumerate(hourly(8))]
    blip_at = T0 + 7 * D + 5 * H
    blip = [trace(t, [100, 666, 300] if blip_at <= t < blip_at + 3 * H else [100, 200, 300], src="a", dst="c")
            for t in hourly(8)]                                   # 3 traces: not more than 3
    new_dest = [trace(t, [100, 200, 300] if t < T0 + 7 * D else [100, 200, 301], src="c", dst="a")
                for t in hourly(8)]                               # the last ASN changed: the peers ignore it
    assert wlcg_alarms(stable + ecmp + blip + new_dest) == []


def test_asn_rule_needs_history_older_than_a_day():
    records = [trace(t, [100, 200 if k < 20 else 250, 300]) for k, t in enumerate(hourly(1))]
    assert wlcg_alarms(records) == []


# --- unreachable ----------------------------------------------------------------------------

def mesh_traces(hosts, unreached, days=3):
    return [trace(t, [100, 200], s, d, reached=not unreached(s, d, t))
            for t in hourly(days) for s, d in itertools.permutations(hosts, 2)]


def test_destination_reached_by_no_source_alarms_every_path_to_it():
    dead = T0 + D + 12 * H
    alarms = wlcg_alarms(mesh_traces("abc", lambda s, d, t: d == "c" and t >= dead))
    # day 1's traces to c reached until noon: only day 3's run sees a whole day unreached
    assert {(a.source, a.destination) for a in alarms} == {("a", "c"), ("b", "c")}
    assert {a.evidence["wlcg_alarm"] for a in alarms} == {"destination cannot be reached from any"}
    assert {(a.kind, a.detected_at, a.start) for a in alarms} == {("unreachable", T0 + 3 * D, T0 + 2 * D)}


def test_source_reaching_nothing_alarms_and_one_dead_path_does_not():
    alarms = wlcg_alarms(mesh_traces("abc", lambda s, d, t: s == "b"))
    assert {(a.source, a.destination, a.evidence["wlcg_alarm"]) for a in alarms} == \
        {("b", "a", "source cannot reach any"), ("b", "c", "source cannot reach any")}
    assert wlcg_alarms(mesh_traces("abc", lambda s, d, t: (s, d) == ("a", "c"))) == []


# --- clocks ---------------------------------------------------------------------------------

def mesh_latency(hosts, offset, days=2):
    """One-way delays of 10 ms, skewed by each host's clock offset (ms): receiver − sender."""
    return [latency(t, s, d, median=10.0 + offset.get(d, 0.0) - offset.get(s, 0.0))
            for t in hourly(days) for s, d in itertools.permutations(hosts, 2)]


def test_large_clock_correction_alarms_every_path_of_the_host():
    alarms = wlcg_alarms(mesh_latency("abcde", {"c": 300.0}))
    assert {a.evidence["wlcg_alarm"] for a in alarms} == {"large clock correction"}
    assert {(a.source, a.destination) for a in alarms} == \
        {(s, d) for s, d in itertools.permutations("abcde", 2) if "c" in (s, d)}
    assert {a.kind for a in alarms} == {"clock_error"}
    assert [a.evidence["correction_ms"] for a in alarms] == [pytest.approx(-300.0)] * len(alarms)
    assert at_runs(alarms)


def test_small_clock_offsets_stay_quiet_and_absurd_delays_are_bad_owd():
    assert wlcg_alarms(mesh_latency("abcde", {"c": 80.0})) == []
    records = [latency(t, median=200000.0 if t >= T0 + 20 * H else 10.0) for t in hourly(2)]
    [alarm] = wlcg_alarms(records)
    assert (alarm.evidence["wlcg_alarm"], alarm.detected_at) == ("bad owd measurements", T0 + D)


# --- the whole baseline ---------------------------------------------------------------------

def test_healthy_mesh_of_every_kind_stays_quiet():
    rng = np.random.default_rng(7)
    records = []
    for s, d in itertools.permutations("abc", 2):
        for t in hourly(9, step=2 * H):
            records.append(latency(t, s, d, loss=0.001 * rng.random(), median=15 + rng.random()))
            records.append(trace(t, [100, 200 + (int(t / H) % 2), 300], s, d))
            records.append(throughput(t, 9e8 * (1 + 0.1 * rng.standard_normal()), s, d))
    assert wlcg_alarms(records) == []


def test_every_rule_names_a_kind_and_covers_it():
    for rule in RULES.values():
        assert rule.covers, rule.name
        assert "no_data" not in rule.covers
