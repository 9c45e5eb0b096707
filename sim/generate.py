"""The whole simulation as data: plan the mesh, episodes and schedule, then produce every raw
envelope line in collection-time order, a day at a time (pure: no files).

Randomness comes from ``numpy``'s Generator seeded with ``[seed, stage, ...]``: the mesh, the
episodes, the schedule and each path's tests draw from their own streams, so the same seed
and options give the same bytes.

>>> from pathwatch.sim.config import SimConfig
>>> sim = plan(SimConfig(seed=5, hosts=3, days=1))
>>> lines = list(envelope_lines(sim))
>>> len(lines) > 500, lines[0].collected_at <= lines[-1].collected_at
(True, True)
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import orjson

from . import benign as benign_catalogue
from .benign import Catalogue, asymmetric_mesh, draw_catalogue, thin_schedule
from .clock import rfc3339
from .config import DAY_S, SimConfig
from .effects import modifiers, silenced
from .measure_latency import measure_latency
from .measure_throughput import measure_throughput
from .measure_trace import PathRoutes, measure_trace
from .mesh import THROUGHPUT_FORMAT, SimulatedMesh, Path, build_mesh
from .render_iperf3 import iperf3_payload
from .render_pscheduler import latency_payload, throughput_payload, trace_payload
from .render_tracepath import tracepath_text
from .episode import Episode, for_path
from .pathologies import choose_episodes
from .schedule import Schedule, build_schedule

MESH_NAME = "pathwatch-sim"
TESTS = ("latency", "throughput", "traceroute", "tracepath")


@dataclass(frozen=True)
class Simulation:
    config: SimConfig
    mesh: SimulatedMesh
    episodes: list[Episode]
    schedule: Schedule
    routes: dict[int, PathRoutes]   # by path index: the routes its traces can take
    benign: Catalogue | None = None  # the benign behaviours (None: catalogue off)

    def with_episodes(self, episodes: list[Episode]) -> Simulation:
        """The same mesh and schedule with other episodes (hand-placed ones, in tests and notebooks)."""
        return replace(self, episodes=episodes, routes=_routes(self.mesh, episodes))


@dataclass(frozen=True, slots=True)
class Line:
    """One raw envelope, serialised, with what the writer counts."""

    collected_at: int
    order: tuple
    format: str
    test: str
    data: bytes


def plan(config: SimConfig) -> Simulation:
    """Mesh, episodes and test schedule for ``config`` (deterministic in the seed)."""
    mesh = build_mesh(config.hosts, np.random.default_rng([config.seed, 1]))
    catalogue = None
    if config.benign:
        catalogue = draw_catalogue(mesh, config)
        mesh = asymmetric_mesh(mesh, config, catalogue)
    episodes = choose_episodes(mesh, config, np.random.default_rng([config.seed, 2]))
    schedule = build_schedule(mesh, config, np.random.default_rng([config.seed, 3]))
    if catalogue is not None:
        schedule = Schedule(thin_schedule(schedule.times, catalogue, config, mesh))
    return Simulation(config, mesh, episodes, schedule, _routes(mesh, episodes), catalogue)


def _routes(mesh: SimulatedMesh, episodes: list[Episode]) -> dict[int, PathRoutes]:
    """Every path's routes, built in path order (router addresses are handed out in call order)."""
    return {path.index: PathRoutes.of(path, mesh, for_path(episodes, path.src.name, path.dst.name))
            for path in mesh.paths}


class _PathTests:
    """One path's tests over the days: its episodes, routes and random streams."""

    def __init__(self, sim: Simulation, path: Path):
        self.sim = sim
        self.path = path
        self.episodes = for_path(sim.episodes, path.src.name, path.dst.name)
        self.routes = sim.routes[path.index]
        self.rngs = {test: np.random.default_rng([sim.config.seed, 4, path.index, n]) for n, test in enumerate(TESTS)}
        self.benign_rngs = {test: np.random.default_rng([sim.config.seed, benign_catalogue.STREAM_TRACE, path.index, n])
                            for n, test in enumerate(TESTS)}

    def lines(self, start: float, end: float) -> list[Line]:
        out: list[Line] = []
        tests = ("latency", "throughput", *self.path.src.tools)
        for test in tests:
            times = self.sim.schedule.between((self.path.index, test), start, end)
            times = times[~silenced(self.episodes, times)]
            if self.sim.benign is not None:
                times = times[~self.sim.benign.outage(self.path, times)]
            if len(times):
                out.extend(self._render(test, times))
        return out

    def _render(self, test: str, times: np.ndarray) -> Iterator[Line]:
        path, rng, cad = self.path, self.rngs[test], self.sim.config.cadences
        mods = modifiers(self.episodes, path.src.name, times)
        if self.sim.benign is not None:
            benign_catalogue.apply(self.sim.benign, path, times, mods)
        if test == "latency":
            hops = self.routes.hop_count(mods.route_changed)
            results = measure_latency(path, times, mods, rng, packets=cad.latency_packets, hops=hops)
            payloads = [("pscheduler", latency_payload(r, path, window_s=cad.latency_s)) for r in results]
            delays = cad.latency_s + rng.uniform(2, 30, len(times))
        elif test == "throughput":
            fmt = THROUGHPUT_FORMAT[path.src.profile]
            render = iperf3_payload if fmt == "iperf3" else throughput_payload
            runs = measure_throughput(path, times, mods, rng, duration_s=cad.throughput_run_s)
            payloads = [(fmt, render(run, path)) for run in runs]
            delays = cad.throughput_run_s + rng.uniform(5, 20, len(times))
        else:
            traces = measure_trace(path, self.routes, times, mods, rng, test, catalogue=self.sim.benign,
                                   benign_rng=self.benign_rngs[test])
            if test == "tracepath":
                payloads = [("tracepath", tracepath_text(tr, names=path.src.tracepath_names, asymm=path.asymm))
                            for tr in traces]
            else:
                payloads = [("pscheduler", trace_payload(tr, path)) for tr in traces]
            delays = rng.uniform(4, 25, len(times))
        order = TESTS.index(test)
        for t, delay, (fmt, payload) in zip(times, delays, payloads):
            collected = int(t + delay)
            envelope = {"format": fmt, "source": path.src.name, "destination": path.dst.name,
                        "collected_at": rfc3339(collected), "payload": payload,
                        "meta": {"mesh": MESH_NAME, "collector": path.src.name}}
            yield Line(collected, (collected, path.index, order, float(t)), fmt, test, orjson.dumps(envelope))


def envelope_lines(sim: Simulation, on_progress: Callable[[int], None] | None = None) -> Iterator[Line]:
    """Every raw envelope of the simulation, ascending in ``collected_at``."""
    config = sim.config
    tests = [_PathTests(sim, path) for path in sim.mesh.paths]
    pending: list[Line] = []
    for day in range(config.days):
        start = config.start + day * DAY_S
        for path_tests in tests:
            pending.extend(path_tests.lines(start, start + DAY_S))
            if on_progress is not None:
                on_progress(1)
        pending.sort(key=lambda line: line.order)
        # nothing of a later day can be collected before that day starts
        cut = len(pending) if day == config.days - 1 else bisect_left(pending, start + DAY_S, key=_collected)
        yield from pending[:cut]
        pending = pending[cut:]


def path_lines(sim: Simulation, src: str, dst: str) -> list[Line]:
    """The lines of one path, in order: exactly that path's share of :func:`envelope_lines`."""
    tests = _PathTests(sim, sim.mesh.path(src, dst))
    lines: list[Line] = []
    for day in range(sim.config.days):
        start = sim.config.start + day * DAY_S
        lines.extend(tests.lines(start, start + DAY_S))
    return sorted(lines, key=lambda line: line.order)


def window_lines(sim: Simulation, start: float, end: float) -> list[Line]:
    """Every path's lines of the tests that start in [start, end), in collection order (e.g. a few
    minutes of a dense mesh, without rendering its whole days)."""
    lines = [line for path in sim.mesh.paths for line in _PathTests(sim, path).lines(start, end)]
    return sorted(lines, key=lambda line: line.order)


def _collected(line: Line) -> int:
    return line.collected_at
