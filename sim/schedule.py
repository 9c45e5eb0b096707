"""When every test runs: latency windows, traces, and throughput runs that never overlap on a host.

Each path gets its own phase for each test; throughput runs slip a few minutes at random
and are then queued so that a host takes part in at most one run at a time (pscheduler
reserves the time slot on both ends).

>>> import numpy as np
>>> from pathwatch.sim.config import SimConfig
>>> from pathwatch.sim.mesh import build_mesh
>>> config = SimConfig(seed=1, hosts=4, days=1)
>>> mesh = build_mesh(4, np.random.default_rng(1))
>>> plan = build_schedule(mesh, config, np.random.default_rng(3))
>>> len(plan.times[(0, "latency")]), len(plan.times[(0, "throughput")])
(144, 12)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import SimConfig
from .mesh import SimulatedMesh

_SETUP_S = 15.0  # pscheduler's slot around an iperf3 run


@dataclass(frozen=True)
class Schedule:
    """Test start times (Unix seconds, ascending) by (path index, test).

    Tests: ``latency``, ``throughput`` and one per trace tool the source runs
    (``traceroute``, ``tracepath``).
    """

    times: dict[tuple[int, str], np.ndarray]

    def between(self, key: tuple[int, str], start: float, end: float) -> np.ndarray:
        times = self.times.get(key)
        if times is None:
            return np.empty(0)
        lo, hi = np.searchsorted(times, [start, end])
        return times[lo:hi]


def _periodic(start: int, end: int, every: int, rng: np.random.Generator, slip_s: float) -> np.ndarray:
    phase = rng.uniform(0, every)
    times = start + phase + np.arange(0, (end - start) // every + 1) * every
    times = times + rng.uniform(0, slip_s, size=len(times))
    return times[times < end]


def _throughput(mesh: SimulatedMesh, config: SimConfig, rng: np.random.Generator) -> dict[tuple[int, str], np.ndarray]:
    cad = config.cadences
    wanted = []
    for path in mesh.paths:
        phase = rng.uniform(0, cad.throughput_s - 2 * cad.throughput_jitter_s)
        nominal = config.start + phase + np.arange(0, config.days * 86400 // cad.throughput_s + 1) * cad.throughput_s
        slips = rng.uniform(-cad.throughput_jitter_s, cad.throughput_jitter_s, size=len(nominal))
        wanted.extend((float(t), path.index) for t in nominal + slips if config.start <= t < config.end)
    wanted.sort()
    busy_until: dict[str, float] = {}
    placed: dict[int, list[float]] = {path.index: [] for path in mesh.paths}
    slot = cad.throughput_run_s + _SETUP_S
    for desired, index in wanted:
        path = mesh.paths[index]
        at = max(desired, busy_until.get(path.src.name, 0.0), busy_until.get(path.dst.name, 0.0))
        if at >= config.end:
            continue
        busy_until[path.src.name] = busy_until[path.dst.name] = at + slot
        placed[index].append(round(at, 3))
    return {(index, "throughput"): np.array(sorted(times)) for index, times in placed.items()}


def build_schedule(mesh: SimulatedMesh, config: SimConfig, rng: np.random.Generator) -> Schedule:
    cad = config.cadences
    times: dict[tuple[int, str], np.ndarray] = {}
    for path in mesh.paths:
        times[(path.index, "latency")] = config.start + rng.uniform(0, 60) + np.arange(
            0, config.days * 86400 // cad.latency_s) * float(cad.latency_s)
        for number, tool in enumerate(path.src.tools):
            every = cad.trace_s if number == 0 else cad.tracepath_s
            times[(path.index, tool)] = _periodic(config.start, config.end, every, rng, 20.0)
    times.update(_throughput(mesh, config, rng))
    return Schedule(times)
