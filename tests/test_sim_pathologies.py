"""The simulator's plan: which pathologies go where and when, and the test schedule."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from pathwatch.sim.config import SimConfig
from pathwatch.sim.generate import plan
from pathwatch.sim.pathologies import KINDS, THROUGHPUT_ONLY, choose_episodes


@pytest.fixture(scope="module", params=[1, 2, 3])
def default_plan(request):
    return plan(SimConfig(seed=request.param))


def test_every_kind_on_at_least_two_paths_at_the_defaults(default_plan):
    per_kind = Counter(e.kind for e in default_plan.episodes)
    assert {kind: per_kind[kind] for kind in KINDS if per_kind[kind] < 2} == {}
    assert set(per_kind) == set(KINDS)


def test_onsets_leave_history_and_ends_follow_starts(default_plan):
    config = default_plan.config
    span = config.end - config.start
    for e in default_plan.episodes:
        onset = (e.start - config.start) / span
        assert e.end is None or e.start < e.end < config.end
        if "untuned_host" in e.params:  # the benign catalogue's untuned host: limited from the first run
            assert e.kind == "window_limited" and e.start == config.start and e.end is None, e
            continue
        # a diurnal episode starts at the first busy window after its onset (at most a day later)
        upper = 0.7 + (1 / config.days if e.kind == "diurnal_saturation" else 0)
        assert 0.3 <= onset <= upper, e


def test_one_pathology_per_path_except_throughput_only_ones_beside_a_clock(default_plan):
    kinds = defaultdict(set)
    for e in default_plan.episodes:
        kinds[(e.src, e.dst)].add(e.kind)
    for path, found in kinds.items():
        if len(found) > 1:
            assert "clock_error" in found, (path, found)
            assert found - {"clock_error"} <= set(THROUGHPUT_ONLY) or found - {"clock_error"} == {"no_data"}, (path, found)
    untuned = {(e.src, e.dst) for e in default_plan.episodes if "untuned_host" in e.params}
    healthy = len(default_plan.mesh.paths) - len(kinds)
    assert healthy >= 0.2 * len(default_plan.mesh.paths) - len(untuned)  # the untuned host's paths come on top


def test_host_wide_kinds_cover_the_host(default_plan):
    silent = {e.params["host"] for e in default_plan.episodes if e.kind == "no_data"}
    assert len(silent) == 1
    host = silent.pop()
    paths = {(e.src, e.dst) for e in default_plan.episodes if e.kind == "no_data"}
    assert paths == {p.key for p in default_plan.mesh.paths if p.src.name == host}
    clock = {e.params["host"] for e in default_plan.episodes if e.kind == "clock_error"}
    assert len(clock) == 1 and clock != {host}
    labelled = {(e.src, e.dst) for e in default_plan.episodes if e.kind == "clock_error"}
    assert all(next(iter(clock)) in path for path in labelled) and len(labelled) >= 2 * (len(default_plan.mesh.hosts) - 1) - 1


def test_mtu_blackholes_only_where_tracepath_and_jumbo_frames_are(default_plan):
    for e in default_plan.episodes:
        if e.kind == "mtu_blackhole":
            path = default_plan.mesh.path(e.src, e.dst)
            assert path.mtu == 9000 and "tracepath" in path.src.tools


def test_window_limits_are_far_below_the_normal_rate(default_plan):
    for e in default_plan.episodes:
        if e.kind == "window_limited" and "untuned_host" not in e.params:  # untuned hosts: test_sim_benign.py
            path = default_plan.mesh.path(e.src, e.dst)
            assert e.params["window_bytes"] * 8 / (path.rtt_ms / 1000) < 0.4 * path.rate_bps
            assert path.rtt_ms >= 25


def test_rising_loss_both_with_and_without_the_owamp_flow_on_the_bad_member(default_plan):
    crossing = [e.params["owamp_on_bad_member"] for e in default_plan.episodes if e.kind == "rising_loss"]
    assert True in crossing and False in crossing
    assert all(2 <= e.params["members"] <= 8 for e in default_plan.episodes if e.kind == "rising_loss")


def test_small_meshes_still_get_episodes_and_keep_healthy_paths():
    config = SimConfig(seed=4, hosts=4, days=5)
    sim = plan(config)
    kinds = {e.kind for e in sim.episodes}
    assert "no_data" in kinds and len(kinds) >= 5
    assert len({(e.src, e.dst) for e in sim.episodes}) < len(sim.mesh.paths)


def test_the_plan_depends_only_on_the_seed():
    first = plan(SimConfig(seed=9, hosts=5, days=6))
    second = plan(SimConfig(seed=9, hosts=5, days=6))
    assert first.episodes == second.episodes
    assert [p.params for p in first.episodes] == [p.params for p in second.episodes]
    mesh = first.mesh
    again = choose_episodes(mesh, first.config, np.random.default_rng([9, 2]))
    assert again == first.episodes


@pytest.fixture(scope="module", params=[1, 2])
def classic_plan(request):
    """Without the benign catalogue: every scheduled run happens (skips: tests/test_sim_benign.py)."""
    return plan(SimConfig(seed=request.param, benign=False))


def test_a_host_runs_one_throughput_test_at_a_time(classic_plan):
    default_plan = classic_plan
    config = default_plan.config
    runs = defaultdict(list)
    for path in default_plan.mesh.paths:
        for t in default_plan.schedule.times[(path.index, "throughput")]:
            runs[path.src.name].append(t)
            runs[path.dst.name].append(t)
    for host, times in runs.items():
        gaps = np.diff(np.sort(times))
        assert gaps.min() >= config.cadences.throughput_run_s + 10, host
    per_path = [len(default_plan.schedule.times[(p.index, "throughput")]) for p in default_plan.mesh.paths]
    expected = config.days * 86400 / config.cadences.throughput_s
    assert min(per_path) >= expected - 2 and max(per_path) <= expected + 1


def test_cadences_per_path(classic_plan):
    default_plan = classic_plan
    config = default_plan.config
    path = default_plan.mesh.paths[0]
    latency = default_plan.schedule.times[(path.index, "latency")]
    assert len(latency) == config.days * 144 and set(np.diff(latency).round()) == {600.0}
    first_tool = path.src.tools[0]
    traces = default_plan.schedule.times[(path.index, first_tool)]
    assert abs(len(traces) - config.days * 72) <= 1
