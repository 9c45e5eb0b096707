"""bench/real_series_bench.py: the scoring (matching within 1 h, each label once, the daily-pattern
rule), the totals, and the causal baseline, on hand-made inputs worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

import bench.real_series_bench as rs
from bench.real_series_bench import aggregate, daily_edges, run_baseline, score_series

H = 3600.0
DAY = 86400.0
D0 = 18000 * DAY                 # a UTC midnight (2019-04-14)
SPAN = (D0, D0 + 10 * DAY)


def change(t: float, **extra) -> dict:
    return {"t": t, "before_ms": 100.0, "after_ms": 150.0, "lasting": True, "significant": True, "note": ""} | extra


def test_a_detection_matches_a_label_within_an_hour_inclusive():
    got = score_series([change(D0 + 5 * H)], [D0 + 6 * H], span=SPAN)
    assert (got["labels"], got["found"], got["unmatched"]) == (1, 1, 0)
    got = score_series([change(D0 + 5 * H)], [D0 + 6 * H + 1], span=SPAN)
    assert (got["found"], got["unmatched"], got["missed_t"]) == (0, 1, [int(D0 + 5 * H)])


def test_a_label_is_matched_once_and_the_second_detection_is_unmatched():
    got = score_series([change(D0 + 10 * H)], [D0 + 10 * H - 1000, D0 + 10 * H + 500], span=SPAN)
    assert (got["found"], got["detections"], got["unmatched"]) == (1, 2, 1)
    assert got["unmatched_t"] == [int(D0 + 10 * H + 500)]


def test_each_detection_takes_the_nearest_unmatched_label():
    # Labels 2000 s apart. The first detection is 1200 s after A and 800 s before B: it takes B;
    # the second, 1900 s after A, then takes A. Matching the first to A would have left B to the
    # second (100 s away) as well, so only the count tells little: check what is missed instead.
    a, b = D0 + 20 * H, D0 + 20 * H + 2000
    got = score_series([change(a), change(b)], [a + 1200, a + 1900], span=SPAN)
    assert (got["found"], got["unmatched"]) == (2, 0)
    # With B gone, the detection 1200 s after A still matches A, and one 3700 s after it nothing.
    got = score_series([change(a)], [a + 1200, a + 3700], span=SPAN)
    assert (got["found"], got["unmatched"], got["unmatched_t"]) == (1, 1, [int(a + 3700)])
    # Nearest, not first in time: one detection between two labels goes to the closer (B).
    got = score_series([change(a), change(b)], [a + 1500], span=SPAN)
    assert got["missed_t"] == [int(a)]


def test_labels_not_lasting_or_not_significant_are_no_targets():
    labels = [change(D0 + 30 * H, lasting=False), change(D0 + 40 * H, significant=False), change(D0 + 50 * H)]
    got = score_series(labels, [D0 + 30 * H, D0 + 40 * H + 600, D0 + 80 * H], span=SPAN)
    assert (got["labels"], got["found"], got["unmatched"]) == (1, 0, 3)
    assert got["unmatched_near_minor_label"] == 2


def test_daily_edges_wrap_past_midnight():
    assert daily_edges(22, 4, D0 + 10 * H, D0 + 30 * H) == [D0 + 22 * H, D0 + 26 * H, D0 + DAY + 22 * H, D0 + DAY + 26 * H]


def test_a_diurnal_alarm_covers_its_window_edges_on_the_days_it_is_open():
    # Busy window 18:00-22:00 UTC, open from day 0 noon to day 1 23:00: its edges on days 0 and 1.
    alarm = {"start": D0 + 12 * H, "end": D0 + DAY + 23 * H, "start_hour": 18, "width_h": 4}
    labels = [
        change(D0 + DAY + 18.5 * H),      # 30 min after day 1's rise: found by the alarm
        change(D0 + DAY + 12 * H),        # noon: no edge near, no detection: missed
        change(D0 + 5 * DAY + 18 * H),    # on a rise, but day 5 is after the alarm closed: missed
    ]
    detections = [
        D0 + DAY + 21.5 * H,              # 30 min before day 1's fall: covered, not unmatched
        D0 + DAY + 10 * H,                # unmatched
        D0 + 4 * DAY + 18 * H,            # on day 4's rise, alarm closed: unmatched
    ]
    got = score_series(labels, detections, [alarm], span=SPAN)
    assert (got["labels"], got["found"], got["found_by_diurnal"]) == (3, 1, 1)
    assert (got["detections"], got["unmatched"], got["covered_by_diurnal"]) == (3, 2, 1)
    assert got["missed_t"] == [int(D0 + DAY + 12 * H), int(D0 + 5 * DAY + 18 * H)]


def test_an_open_diurnal_alarm_runs_to_the_end_of_the_series_and_detections_match_first():
    alarm = {"start": D0, "end": None, "start_hour": 6, "width_h": 2}
    label = change(D0 + 9 * DAY + 6 * H)
    got = score_series([label], [], [alarm], span=SPAN)
    assert (got["found"], got["found_by_diurnal"]) == (1, 1)
    got = score_series([label], [D0 + 9 * DAY + 6.2 * H], [alarm], span=SPAN)
    assert (got["found"], got["found_by_diurnal"], got["covered_by_diurnal"]) == (1, 0, 0)


def test_a_detection_at_a_labelled_daily_pattern_is_still_unmatched_but_counted_as_such():
    daily = {"daily": True, "start_hour": 19, "width_h": 3, "note": "evening queue"}
    got = score_series([daily], [D0 + 2 * DAY + 19.25 * H, D0 + 2 * DAY + 8 * H], span=SPAN)
    assert (got["labels"], got["unmatched"], got["unmatched_at_daily_label_edges"]) == (0, 2, 1)


def test_aggregate_totals_and_worst_series():
    rows = {
        "a": score_series([change(D0 + H), change(D0 + 30 * H)], [D0 + H], span=(D0, D0 + 2 * DAY)),
        "b": score_series([change(D0 + H)], [D0 + H, D0 + 20 * H, D0 + 40 * H], span=(D0, D0 + 4 * DAY)),
        "c": score_series([], [D0 + 5 * H], span=(D0, D0 + DAY)),
    }
    agg = aggregate(rows)
    assert (agg["labels"], agg["found"], agg["recall"]) == (3, 2, round(2 / 3, 3))
    assert (agg["unmatched"], agg["series"], agg["series_days"]) == (3, 3, 7.0)
    assert agg["unmatched_per_day"] == round(3 / 7, 3)
    assert agg["worst_recall_series"]["series"] == "a"          # 1/2 against b's 1/1
    assert agg["worst_unmatched_series"]["series"] == "c"       # 1 a day against b's 2 in 4 days


def test_baseline_dates_a_step_at_its_first_sample_and_waits_for_hold():
    t = np.arange(100) * 60.0
    x = np.r_[np.full(50, 100.0), np.full(50, 120.0)]
    assert run_baseline(t, x, hold=3) == [50 * 60.0]
    # A step of 8 ms on 100 ms is under max(5 ms, 10 %): no change.
    assert run_baseline(t, np.r_[np.full(50, 100.0), np.full(50, 108.0)], hold=1) == []
    # A 2-sample spike puts the median of 3 beyond for 2 samples in a row (at the 2nd and 3rd):
    # hold=3 lets it pass; hold=2 takes it as a change at its first sample, and the fall back
    # as another at the first sample after it.
    spike = np.full(100, 100.0)
    spike[40:42] = 300.0
    assert run_baseline(t, spike, hold=3) == []
    assert run_baseline(t, spike, hold=2) == [40 * 60.0, 42 * 60.0]
    # Lost samples are skipped.
    x_lost = x.copy()
    x_lost[50] = np.nan
    assert run_baseline(t, x_lost, hold=3) == [51 * 60.0]


def test_the_committed_labels_are_well_formed():
    doc = json.loads(rs.LABELS.read_text())
    assert {v["split"] for v in doc["series"].values()} == {"tune", "report"}
    for name, entry in doc["series"].items():
        assert (rs.DATA / f"{name}.csv.gz").exists(), name
        for lab in entry["labels"]:
            if lab.get("daily"):
                assert 0 <= lab["start_hour"] < 24 and 0 < lab["width_h"] < 24
                continue
            threshold = max(rs.ABS_MS, rs.REL * lab["before_ms"])
            if lab["lasting"] and lab["significant"]:
                assert abs(lab["after_ms"] - lab["before_ms"]) >= threshold, (name, lab["t"])


@pytest.mark.parametrize("name", ["pm_hk_kz", "netrics_south_shore_aug"])
def test_series_load_in_time_order_with_lost_samples_as_nan(name):
    t, x = rs.load_series(name)
    assert len(t) == len(x) > 1000 and np.all(np.diff(t) > 0)
    assert np.isnan(x).any() or name.startswith("netrics")
