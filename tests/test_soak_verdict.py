"""The soak's judgement of its samples (tests/faults/soak.py), on made-up samples."""

from __future__ import annotations

import pytest

from tests.faults.soak import Sample, verdict


def _samples(rss, fds, lag, every=10.0):
    return [Sample(i * every, {"kafka": {"rss_kb": r, "fds": f, "threads": 40}}, {"store": l}, {"store": 1000}, 0)
            for i, (r, f, l) in enumerate(zip(rss, fds, lag))]


def test_flat_memory_bounded_lag_and_steady_descriptors_pass():
    result = verdict(_samples([100] * 3 + [500, 510, 505, 500, 508, 503, 501, 506, 504, 502],
                              [80] * 13, [0, 900, 50, 120, 30, 200, 10, 150, 40, 90, 20, 60, 5]), warm_up_s=30)
    assert result.flat_memory() and result.lag_bounded
    assert result.fd_growth == {"kafka": 0} and result.thread_growth == {"kafka": 0}
    assert result.checkpoint_bytes_max == {"store": 1000}


def test_growing_memory_growing_lag_and_leaking_descriptors_are_named():
    n = 15
    result = verdict(_samples([500 + 40 * i for i in range(n)], [80 + 5 * i for i in range(n)],
                              [100 * i for i in range(n)]), warm_up_s=0)
    assert not result.flat_memory() and result.rss_growth_pct["kafka"] > 10
    assert not result.lag_bounded
    assert result.fd_growth["kafka"] > 16


def test_too_few_samples_after_the_warm_up_is_an_error():
    with pytest.raises(ValueError, match="too few"):
        verdict(_samples([1] * 6, [1] * 6, [0] * 6), warm_up_s=30)
