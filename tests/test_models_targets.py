"""Detection quality on a simulated mesh whose seed the detectors were not tuned on.

Simulate → parse → detectors and the WLCG baseline → score. These are regression guards on
what the detectors reach today, not the issue's full target list: the scorecard's
``missed_targets`` (per-kind F1 ≥ 0.95 grouped on the worst seed, ≤ 1 false alarm per 100
path-days, rising loss before 0.1 %, ...) is reported by ``bench/evaluate_bench.py`` into
``bench/results/evaluation.json``, and not every held-out seed meets all of it yet.

Two guards on one seed: the mesh as the simulator drew it before its benign catalogue (clean
paths, where every kind was tuned to F1 ≥ 0.9), and the same seed with the catalogue's benign
behaviours (standing queues, routers that skip answers, NTP slews, loaded hosts, ...), where
pathwatch must still find every kind and beat the WLCG/OSG rules on F1 and on false alarms.

Marker ``slow``: two 7-host, 21-day meshes simulated, detected and scored (over a minute on
two cores); a plain ``pytest`` leaves them out, ``./run test`` runs them.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from pathwatch.evaluation.metrics import ALL
from pathwatch.evaluation.scorecard import FALSE_ALARMS_PER_100_PATH_DAYS, score_seed

pytestmark = pytest.mark.slow

HELD_OUT_SEED = 6262


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    """The seed scored without and with the benign catalogue, both at once (a process each: CI has
    two cores, and each scoring is a few minutes of one)."""
    clean, benign = tmp_path_factory.mktemp("clean"), tmp_path_factory.mktemp("benign")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        without = pool.submit(score_seed, HELD_OUT_SEED, clean, hosts=7, days=21, benign=False)
        with_benign = pool.submit(score_seed, HELD_OUT_SEED, benign, hosts=7, days=21)
        return {"clean": without.result(), "benign": with_benign.result()}


def test_simulated_mesh_detection_quality(scores):
    result = scores["clean"]
    ours, wlcg = result.ours, result.baseline
    labelled = [kind for kind, s in ours.items() if s.labels and kind != ALL]
    assert len(labelled) == 11, f"the simulator labelled only {sorted(labelled)}"
    for kind in labelled:
        assert ours[kind].recall >= 0.5, f"{kind}: recall {ours[kind].recall}"
    assert ours[ALL].f1 >= 0.9, ours[ALL].to_dict()
    assert ours[ALL].f1 > wlcg[ALL].f1
    assert ours[ALL].delay_median_s < wlcg[ALL].delay_median_s
    assert ours[ALL].false_alarms_per_100_path_days <= FALSE_ALARMS_PER_100_PATH_DAYS
    # One of this mesh's route changes shows only as a router that stopped answering (no new
    # answering hop): one silent trace is what a hop that skips an answer now and then also gives, so
    # it is named once the silence outlasts chance, three to four traces on (issue 16).
    route = ours["route_change"]
    assert route.delay_max_s <= 4.25 * result.trace_interval_s, "a silent router must be found by its 4th trace"


def test_detection_on_a_mesh_with_benign_behaviours_beats_the_wlcg_rules(scores):
    result = scores["benign"]
    ours, grouped, wlcg = result.ours, result.grouped, result.baseline
    labelled = [kind for kind, s in ours.items() if s.labels and kind != ALL]
    assert len(labelled) == 11, f"the simulator labelled only {sorted(labelled)}"
    for kind in labelled:
        assert ours[kind].recall >= 0.9, f"{kind}: recall {ours[kind].recall}"
    assert ours[ALL].f1 > wlcg[ALL].f1, (ours[ALL].to_dict(), wlcg[ALL].to_dict())
    assert grouped[ALL].false_alarms_per_100_path_days < wlcg[ALL].false_alarms_per_100_path_days
    route = ours["route_change"]
    assert route.delay_max_s <= 1.25 * result.trace_interval_s, "route changes must be found on the first trace"
