"""The soak's judgement of its samples (tests/faults/soak.py), on made-up samples."""

from __future__ import annotations

import pytest

from tests.faults.soak import Sample, verdict


def _samples(rss, fds, lag, every=10.0, shared=None, checkpoint=None, threads=None, names=("kafka",)):
    """Samples of the processes ``names``, all alike."""
    shared = shared or [0] * len(rss)
    checkpoint = checkpoint or [1000] * len(rss)
    threads = threads or [40] * len(rss)
    return [Sample(i * every, {name: {"rss_kb": r + m, "own_kb": r, "shared_kb": m, "fds": f, "threads": t}
                               for name in names},
                   {"store": l}, {"store": c}, 0)
            for i, (r, f, l, m, c, t) in enumerate(zip(rss, fds, lag, shared, checkpoint, threads))]


def test_flat_memory_bounded_lag_and_steady_descriptors_pass():
    result = verdict(_samples([100] * 3 + [500, 510, 505, 500, 508, 503, 501, 506, 504, 502],
                              [80] * 13, [0, 900, 50, 120, 30, 200, 10, 150, 40, 90, 20, 60, 5]), warm_up_s=30)
    assert result.flat_memory() and result.lag_bounded
    assert result.fd_growth == {"kafka": 0} and result.thread_growth == {"kafka": 0}
    assert result.checkpoint_bytes_max == {"store": 1000} and result.checkpoints_bounded


def test_growing_memory_growing_lag_and_leaking_descriptors_are_named():
    n = 15
    result = verdict(_samples([500 + 40 * i for i in range(n)], [80 + 5 * i for i in range(n)],
                              [100 * i for i in range(n)]), warm_up_s=0)
    assert not result.flat_memory() and result.memory_growth_pct["kafka"] > 10
    assert not result.lag_bounded
    assert result.fd_growth["kafka"] > 16


def test_a_sawtooth_lag_with_its_highest_tooth_in_the_last_fifth_is_bounded():
    # Each job commits at its checkpoints: a sample can catch the highest tooth late in the run.
    n = 15
    teeth = [0, 400, 800, 0, 400, 800, 0, 400, 800, 0, 400, 800, 0, 400, 1200]
    result = verdict(_samples([500] * n, [80] * n, teeth), warm_up_s=0)
    assert result.lag_max_last_fifth > result.lag_max_before_last_fifth and result.lag_bounded
    # A lag rising faster than its teeth never comes back down to where it was.
    rising = verdict(_samples([500] * n, [80] * n, [t + 1000 * i for i, t in enumerate(teeth)]), warm_up_s=0)
    assert not rising.lag_bounded


def test_shared_memory_touched_for_the_first_time_is_reported_not_counted_as_growth():
    # PostgreSQL's backends reaching more of the shared buffers: summed RSS grows, own memory is flat.
    n = 15
    result = verdict(_samples([500] * n, [80] * n, [0] * n, shared=[100 + 60 * i for i in range(n)]), warm_up_s=0)
    assert result.rss_growth_pct["kafka"] > 10 and result.memory_growth_pct["kafka"] == 0
    assert result.flat_memory() and result.shared_kb_last == {"kafka": 100 + 60 * (n - 1)}


def test_a_checkpoint_that_keeps_growing_is_not_bounded():
    n = 15
    growing = verdict(_samples([500] * n, [80] * n, [0] * n, checkpoint=[1000 * (i + 1) for i in range(n)]), warm_up_s=0)
    assert not growing.checkpoints_bounded
    wobbling = verdict(_samples([500] * n, [80] * n, [0] * n, checkpoint=[1000 + 50 * (i % 3) for i in range(n)]),
                       warm_up_s=0)
    assert wobbling.checkpoints_bounded


def test_a_short_lived_child_alive_at_the_last_sample_is_no_leak():
    # PostgreSQL's tree: an autovacuum or TimescaleDB job worker (17 descriptors) came and went
    # mid-run, and another was alive when the last sample was taken (the CI soak of session 38).
    n = 15
    fds = [80 + (17 if i in (7, n - 1) else 0) for i in range(n)]
    result = verdict(_samples([500] * n, fds, [0] * n), warm_up_s=0)
    assert result.fd_growth == {"kafka": 0} and result.steady_handles


def test_postgresql_opening_a_new_chunks_files_is_no_leak_but_a_backend_more_is():
    # The stream crossed a 7-day chunk boundary: the store's backends opened the new chunks' files.
    n, both = 15, ("postgresql", "kafka")
    step = [300] * 7 + [358] * 8
    chunk = verdict(_samples([500] * n, step, [0] * n, threads=[12] * n, names=both), warm_up_s=0)
    assert chunk.fd_growth["postgresql"] == 58 and chunk.leaking("fds") == {"kafka": 58}
    backends = [12 + i for i in range(n)]
    leak = verdict(_samples([500] * n, [300] * n, [0] * n, threads=backends, names=("postgresql",)), warm_up_s=0)
    assert leak.leaking("threads") == {"postgresql": 10} and not leak.steady_handles  # 24 against 14


def test_too_few_samples_after_the_warm_up_is_an_error():
    with pytest.raises(ValueError, match="too few"):
        verdict(_samples([1] * 6, [1] * 6, [0] * 6), warm_up_s=30)
