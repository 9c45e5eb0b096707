"""Matching and scoring on small hand-made label/anomaly sets whose answers are worked out by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pathwatch.evaluation.matching import Label, make_anomaly, match
from pathwatch.evaluation.metrics import ALL, human_duration, score
from pathwatch.models.baseline_wlcg import covers

H, D = 3600.0, 86400.0
EOD = 10 * D


def statuses(labels, found, **kw):
    m = match(labels, found, end_of_data=EOD, **kw)
    return [m.status(j) for j in range(len(found))], m


# --- matching -------------------------------------------------------------------------------

def test_tolerance_edge_is_inclusive_and_a_second_more_misses():
    label = Label("route_change", "a", "b", start=D, end=2 * D)
    ends_at_edge = make_anomaly("route_change", "a", "b", D - 2 * H, end=D - H)        # touches start − 1 h
    ends_before = make_anomaly("route_change", "a", "b", D - 2 * H, end=D - H - 1)     # one second short
    got, m = statuses([label], [ends_at_edge, ends_before])
    assert got == ["match", "false"]
    assert m.hits == ((0,),)


def test_tolerance_is_a_parameter():
    label = Label("route_change", "a", "b", start=D, end=2 * D)
    early = make_anomaly("route_change", "a", "b", D - 3 * H, end=D - 2.5 * H)
    assert statuses([label], [early])[0] == ["false"]
    assert statuses([label], [early], tolerance_s=3 * H)[0] == ["match"]


def test_no_tolerance_after_the_label_end():
    label = Label("loss_step", "a", "b", start=D, end=2 * D)
    assert statuses([label], [make_anomaly("loss_step", "a", "b", 2 * D)])[0] == ["match"]        # touches end
    assert statuses([label], [make_anomaly("loss_step", "a", "b", 2 * D + 1)])[0] == ["false"]


def test_open_label_lasts_to_end_of_data_and_open_anomaly_too():
    label = Label("rising_loss", "a", "b", start=D, end=None)
    late = make_anomaly("rising_loss", "a", "b", 9 * D)                  # open, long after the start
    assert statuses([label], [late])[0] == ["match"]
    # an open anomaly that started before the label overlaps it through the end of data
    closed_label = Label("loss_step", "a", "b", start=5 * D, end=6 * D)
    assert statuses([closed_label], [make_anomaly("loss_step", "a", "b", 2 * D)])[0] == ["match"]


def test_kind_and_direction_must_match():
    label = Label("loss_step", "a", "b", start=D, end=2 * D)
    found = [make_anomaly("loss_step", "b", "a", D), make_anomaly("rising_loss", "a", "b", D)]
    assert statuses([label], found)[0] == ["false", "false"]


def test_consequence_of_the_labelled_kind_is_explained_not_false():
    labels = [Label("route_change", "a", "b", start=D, end=2 * D)]
    found = [make_anomaly("throughput_drop", "a", "b", D + H),   # route_change → throughput_drop: explained
             make_anomaly("latency_shift", "a", "b", D),          # route_change → latency_shift: explained
             make_anomaly("clock_error", "a", "b", D),            # not a consequence: false
             make_anomaly("throughput_drop", "a", "b", 3 * D)]    # after the label: false
    assert statuses(labels, found)[0] == ["explained", "explained", "false", "false"]


def test_a_match_beats_explained():
    labels = [Label("route_change", "a", "b", D, 2 * D), Label("throughput_drop", "a", "b", D, 2 * D)]
    assert statuses(labels, [make_anomaly("throughput_drop", "a", "b", D)])[0] == ["match"]


def test_baseline_alarm_is_credited_for_every_kind_its_rule_covers():
    labels = [Label("diurnal_saturation", "a", "b", D, 3 * D), Label("mtu_blackhole", "a", "b", D, 3 * D),
              Label("latency_shift", "a", "b", D, 3 * D)]
    alarm = make_anomaly("throughput_drop", "a", "b", 2 * D)
    alarm = replace(alarm, evidence={"wlcg_alarm": "bandwidth decreased"})
    got, m = statuses(labels, [alarm], credits=covers)
    assert got == ["match"] and m.matched == ((0, 1),)


# --- scoring --------------------------------------------------------------------------------

def scenario():
    """Three paths, 10 days of data (30 path-days); answers worked out by hand below."""
    labels = [
        Label("loss_step", "a", "b", start=D, end=2 * D),          # found twice; first detection 30 min in
        Label("loss_step", "b", "a", start=4 * D, end=None),       # open; found 2 h after the start
        Label("loss_step", "c", "a", start=5 * D, end=6 * D),      # missed
        Label("route_change", "a", "b", start=7 * D, end=7 * D + H),  # found 0 s late (detected before start)
    ]
    found = [
        make_anomaly("loss_step", "a", "b", D + 600, detected_at=D + 1800),        # TP
        make_anomaly("loss_step", "a", "b", D + 7200, detected_at=D + 7200),       # TP (same label)
        make_anomaly("loss_step", "b", "a", 4 * D + H, detected_at=4 * D + 2 * H),  # TP, open
        make_anomaly("loss_step", "a", "c", 5 * D),                                # FP (wrong direction)
        make_anomaly("route_change", "a", "b", 7 * D - 1800, detected_at=7 * D - 900),  # TP within tolerance
        make_anomaly("latency_shift", "a", "b", 7 * D),                            # explained by route_change
        make_anomaly("latency_shift", "c", "b", 8 * D),                            # FP
        make_anomaly("throughput_drop", "c", "b", 9 * D),                          # FP
    ]
    return labels, found


def test_per_kind_arithmetic():
    labels, found = scenario()
    scores = score(labels, found, match(labels, found, end_of_data=EOD), path_days=30.0)
    loss = scores["loss_step"]
    # recall 2/3; precision 3 TP / (3 TP + 1 FP); F1 = 2·(3/4)(2/3) / (3/4 + 2/3) = 12/17
    assert (loss.labels, loss.detected, loss.true_alarms, loss.false_alarms) == (3, 2, 3, 1)
    assert loss.recall == pytest.approx(2 / 3)
    assert loss.precision == pytest.approx(3 / 4)
    assert loss.f1 == pytest.approx(12 / 17)
    # delays: 1800 s and 7200 s → median 4500 s, max 7200 s
    assert (loss.delay_median_s, loss.delay_max_s) == (4500.0, 7200.0)
    assert loss.false_alarms_per_100_path_days == pytest.approx(100 / 30)

    route = scores["route_change"]
    assert (route.recall, route.precision, route.f1, route.delay_max_s) == (1.0, 1.0, 1.0, 0.0)

    shift = scores["latency_shift"]
    # one explained, one false; no labels: recall undefined, precision 0, F1 0
    assert (shift.explained, shift.false_alarms, shift.recall, shift.precision, shift.f1) == (1, 1, None, 0.0, 0.0)

    drop = scores["throughput_drop"]
    assert (drop.false_alarms, drop.f1) == (1, 0.0)

    assert scores["no_data"].f1 is None      # neither labels nor alarms


def test_all_kinds_row():
    labels, found = scenario()
    total = score(labels, found, match(labels, found, end_of_data=EOD), path_days=30.0)[ALL]
    # 4 labels, 3 found; 4 TP anomalies, 3 FP, 1 explained
    assert (total.labels, total.detected, total.true_alarms, total.false_alarms, total.explained) == (4, 3, 4, 3, 1)
    assert total.precision == pytest.approx(4 / 7)
    assert total.recall == pytest.approx(3 / 4)
    assert total.f1 == pytest.approx(2 * (4 / 7) * (3 / 4) / (4 / 7 + 3 / 4))
    assert total.delays_s == (1800.0, 7200.0, 0.0)
    assert total.delay_median_s == 1800.0
    assert total.false_alarms_per_100_path_days == pytest.approx(10.0)


def test_labels_without_alarms_score_zero():
    labels = [Label("unreachable", "a", "b", D, 2 * D)]
    s = score(labels, [], match(labels, [], end_of_data=EOD), path_days=1.0)["unreachable"]
    assert (s.recall, s.precision, s.f1, s.delay_median_s) == (0.0, None, 0.0, None)


def test_baseline_alarm_counts_as_true_for_each_kind_it_matched_but_once_overall():
    labels = [Label("diurnal_saturation", "a", "b", D, 3 * D), Label("mtu_blackhole", "a", "b", D, 3 * D)]
    alarm = make_anomaly("throughput_drop", "a", "b", 2 * D)
    alarm = replace(alarm, evidence={"wlcg_alarm": "bandwidth decreased"})
    scores = score(labels, [alarm], match(labels, [alarm], end_of_data=EOD, credits=covers), path_days=10.0)
    assert scores["diurnal_saturation"].true_alarms == scores["mtu_blackhole"].true_alarms == 1
    assert scores["throughput_drop"].true_alarms == 0
    assert scores[ALL].true_alarms == 1


def test_human_units():
    assert [human_duration(s) for s in (0, 89, 90, 5399, 5400, 36 * 3600)] == \
        ["0 s", "89 s", "2 min", "90 min", "1.5 h", "1.5 d"]
