"""The detectors' incremental and shared computations give exactly what they replace.

Running sums kept as bins arrive and leave are compared with sums taken afresh, a computation
shared between two searches with what each search computed alone, the busy windows' medians with
numpy's, and depth_bound's vectorised path with its loop; on random inputs.
"""

from __future__ import annotations

import math
import pickle
import random

import numpy as np

from pathwatch.models.detectors.diurnal import _depth_bound_loop, busy_window, depth_bound, window_medians
from pathwatch.models.detectors.loss import LossDetector, _reference_sums


def _reference_of(detector: LossDetector) -> list:
    bins = list(detector.bins)
    return bins[: max(0, len(bins) - detector.p.recent_hours)]


def test_loss_reference_sums_kept_as_bins_move_equal_sums_taken_afresh():
    rng = random.Random(5)
    detector = LossDetector("a", "b")
    for hour in range(400):
        lost = rng.choice((0, 0, 1, 3, 4, 5, 6, 40, 700))
        detector._add_bin((hour, lost, rng.randint(1, 40_000)))
        assert detector.reference_sums == _reference_sums(_reference_of(detector))


def test_loss_state_pickled_before_the_reference_sums_restores_them():
    rng = random.Random(6)
    detector = LossDetector("a", "b")
    for hour in range(100):
        detector._add_bin((hour, rng.choice((0, 2, 9)), 36_000))
    old = {k: v for k, v in detector.__dict__.items() if k != "reference_sums"}
    restored = LossDetector.__new__(LossDetector)
    restored.__setstate__(old)
    assert restored.reference_sums == detector.reference_sums
    copy = pickle.loads(pickle.dumps(detector))
    assert copy.reference_sums == detector.reference_sums


def test_busy_window_on_shared_medians_equals_busy_window_alone():
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(2, 120))
        t = np.sort(rng.uniform(0, 4 * 86400.0, n))
        if rng.random() < 0.3:
            t = np.round(t / 3600.0) * 3600.0        # on the hour: the windows' edges
        x = rng.choice((rng.uniform(0.5, 10.0, n), rng.integers(1, 4, n).astype(float)))
        if rng.random() < 0.1:
            x[rng.integers(0, n)] = np.nan
        medians = window_medians(t, x)
        for lower_is_worse in (True, False):
            for min_in in (3, 4):
                assert busy_window(t, x, lower_is_worse, min_in, medians) == busy_window(t, x, lower_is_worse, min_in)


def test_depth_bound_on_long_inputs_equals_its_loop():
    rng = random.Random(3)
    for _ in range(400):
        n = rng.randint(100, 400)
        awkward = rng.random() < 0.3
        values = sorted(rng.choice((rng.uniform(0.1, 10.0), float(rng.randint(1, 4)), math.inf, 1e308, 5e-324))
                        if awkward else rng.uniform(0.1, 10.0) for _ in range(n))
        for lower_is_worse in (True, False):
            for min_in in (3, 4, 60):
                assert depth_bound(values, lower_is_worse, min_in) == _depth_bound_loop(values, lower_is_worse, min_in)


def test_window_medians_are_the_medians_inside_and_outside_each_window():
    from pathwatch.models.detectors.diurnal import _STARTS, _WIDTHS, DAY

    rng = np.random.default_rng(12)
    for _ in range(100):
        n = int(rng.integers(1, 150))
        t = np.sort(rng.uniform(0, 4 * 86400.0, n))
        x = rng.choice((rng.uniform(0.5, 10.0, n), rng.integers(1, 4, n).astype(float)))
        n_in, m_in, m_out = window_medians(t, x)
        hours = (t % DAY) / 3600.0
        for row, (start, width) in enumerate(zip(_STARTS, _WIDTHS)):
            inside = ((hours - start) % 24) < width
            assert n_in[row] == inside.sum()
            if inside.any():
                assert m_in[row] == np.median(x[inside])
            if not inside.all():
                assert m_out[row] == np.median(x[~inside])
