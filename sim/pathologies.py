"""Which pathologies hit which paths, when, and how hard: the ground truth of a simulation.

Every kind is injected on ``max(1, round(paths / 21))`` paths (2 with the default 7 hosts),
with its onset between 30 % and 70 % of the period. ``no_data`` and ``clock_error`` strike a
host and so every path it sources (no_data) or takes part in (clock_error; the one path from
the silent host to the clock's host carries both, one after the other or overlapping);
throughput-only pathologies may share a path with a clock error (which touches only one-way
delays); nothing else shares a path. About 30 % of the paths stay healthy (never under 20 %:
small meshes go without some kinds).

>>> import numpy as np
>>> from pathwatch.sim.config import SimConfig
>>> from pathwatch.sim.mesh import build_mesh
>>> config = SimConfig(seed=1)
>>> mesh = build_mesh(config.hosts, np.random.default_rng(1))
>>> episodes = choose_episodes(mesh, config, np.random.default_rng(2))
>>> sorted({e.kind for e in episodes}) == sorted(KINDS)
True
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .benign import untuned_host_episodes
from .config import DAY_S, SimConfig
from .episode import Episode
from .mesh import SimulatedMesh, Path

KINDS = ("route_change", "diurnal_saturation", "rising_loss", "mtu_blackhole", "window_limited",
         "throughput_drop", "latency_shift", "loss_step", "clock_error", "unreachable", "no_data")
# Kinds that leave one-way delay, loss and traceroute alone: they may share a path with a clock error.
THROUGHPUT_ONLY = ("mtu_blackhole", "window_limited", "throughput_drop")
HEALTHY_SHARE = 0.3          # aimed at
HEALTHY_FLOOR = 0.2          # never fewer healthy paths, even when a kind is left out
_WINDOWS = (256 * 1024, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)
# (chance an episode ends before the data does, its shortest and longest length in days)
_RECOVERY = {
    "route_change": (0.35, 2.0, 6.0), "throughput_drop": (0.4, 2.0, 6.0), "latency_shift": (0.3, 1.0, 5.0),
    "loss_step": (0.25, 2.0, 6.0), "clock_error": (0.3, 1.0, 4.0), "unreachable": (0.5, 0.1, 3.0),
    "no_data": (0.4, 0.25, 4.0),
}


class _Plan:
    """Paths taken so far and by what, against the budget that keeps ~30 % healthy."""

    def __init__(self, mesh: SimulatedMesh):
        self.mesh = mesh
        self.uses: dict[int, set[str]] = {}
        self.budget = len(mesh.paths) - math.floor(HEALTHY_SHARE * len(mesh.paths))
        self.hard_budget = len(mesh.paths) - math.ceil(HEALTHY_FLOOR * len(mesh.paths))

    def free(self, path: Path) -> bool:
        return path.index not in self.uses

    def overlay_ok(self, path: Path) -> bool:
        return self.uses.get(path.index) == {"clock_error"}

    def take(self, path: Path, kind: str) -> None:
        self.uses.setdefault(path.index, set()).add(kind)


def _onset(config: SimConfig, rng: np.random.Generator) -> int:
    span = config.end - config.start
    return config.start + int(rng.uniform(0.3, 0.7) * span) // 60 * 60


def _end(kind: str, start: int, config: SimConfig, rng: np.random.Generator) -> int | None:
    chance, shortest, longest = _RECOVERY.get(kind, (0.0, 0.0, 0.0))
    if rng.random() >= chance:
        return None
    end = start + int(rng.uniform(shortest, longest) * DAY_S) // 60 * 60
    return end if end < config.end - 3600 else None


def _eligible(kind: str, path: Path) -> bool:
    if kind == "mtu_blackhole":
        return path.mtu == 9000 and path.narrow_hop is None and "tracepath" in path.src.tools
    if kind == "window_limited":
        return path.rtt_ms >= 25 and any(w * 8 / (path.rtt_ms / 1000) < 0.4 * path.rate_bps for w in _WINDOWS)
    if kind == "route_change":
        return path.src.site != path.dst.site and len(path.route) >= 6
    if kind in ("rising_loss", "loss_step"):  # BBR shrugs off random loss: its runs would not show the signature
        return path.src.congestion != "bbr"
    if kind in ("diurnal_saturation", "throughput_drop"):
        return not path.nic_limited
    return True


def _params(kind: str, path: Path, rng: np.random.Generator) -> dict:
    """The injected magnitudes (also what scorers may print)."""
    uniform = lambda a, b: round(float(rng.uniform(a, b)), 4)  # noqa: E731
    middle = max(2, len(path.route) // 3)
    if kind == "route_change":
        delta = uniform(1.5, 8.0)
        if rng.random() < 0.4 and path.rtt_ms * path.fwd_share > delta + 1:  # the old route was the longer one
            delta = -delta
        via = [None, "transit", "he"][int(rng.integers(0, 3))]
        return {"rtt_delta_ms": delta, "owd_delta_ms": round(delta * uniform(0.6, 1.0), 4),
                "diverge_ttl": int(rng.integers(middle, max(middle + 1, len(path.route) - 3))) + 1,
                "new_as": via, "extra_hops": int(rng.integers(-1, 3))}
    if kind == "diurnal_saturation":
        local = uniform(12.0, 16.0)
        return {"busy_utc_h": round((local - path.src.site.utc_offset_h) % 24, 4), "busy_hours": uniform(3.0, 6.0),
                "keep": uniform(0.2, 0.6), "loss": round(float(10 ** rng.uniform(-3.7, -2.5)), 6),
                "queue_ms": uniform(2.0, 12.0), "queue_weight": uniform(0.4, 0.9)}
    if kind == "rising_loss":
        return {"ramp_days": uniform(7.0, 21.0), "final_loss": round(float(10 ** rng.uniform(-2.7, -2.0)), 6),
                "shape": uniform(1.0, 2.0), "members": int(rng.integers(2, 9))}
    if kind == "mtu_blackhole":
        return {"narrow_ttl": int(rng.integers(middle, len(path.route) - 1)) + 1,
                "tracepath": "pmtu" if rng.random() < 0.5 else "silent",
                "stall_s": int(rng.integers(2, 7)), "rate_after_bps": round(float(rng.uniform(8e6, 60e6)))}
    if kind == "window_limited":
        fits = [w for w in _WINDOWS if w * 8 / (path.rtt_ms / 1000) < 0.4 * path.rate_bps]
        return {"window_bytes": int(rng.choice(fits))}
    if kind == "throughput_drop":
        return {"keep": uniform(0.2, 0.7), "retransmit_factor": uniform(1.0, 2.0)}
    if kind == "latency_shift":
        delta = uniform(2.0, 30.0)
        if rng.random() < 0.3 and path.rtt_ms * path.fwd_share > delta + 1:
            delta = -delta
        return {"owd_delta_ms": delta, "rtt_delta_ms": round(delta * int(rng.choice([1, 2])), 4),
                "from_ttl": int(rng.integers(2, len(path.route))) + 1}
    if kind == "loss_step":
        return {"loss": round(float(10 ** rng.uniform(math.log10(5e-4), math.log10(2e-2))), 6)}
    if kind == "unreachable":
        flag = rng.random() < 0.4
        return {"last_ttl": int(rng.integers(len(path.route) // 2, len(path.route) - 1)) + 1,
                "flag": str(rng.choice(["!H", "!N"])) if flag else None,
                "error": str(rng.choice(["No route to host", "Connection timed out"]))}
    raise ValueError(f"no per-path parameters for {kind}")


def _clock_params(rng: np.random.Generator) -> dict:
    if rng.random() < 0.5:
        return {"mode": "unsynced", "drift_ppm": round(float(rng.uniform(3, 30) * rng.choice([-1, 1])), 3)}
    return {"mode": "step", "step_ms": round(float(rng.uniform(50, 500) * rng.choice([-1, 1])), 3),
            "error_ms": round(float(rng.uniform(50, 400)), 3)}


def _host_episodes(mesh: SimulatedMesh, config: SimConfig, plan: _Plan, rng: np.random.Generator) -> list[Episode]:
    """no_data on one host's outgoing paths; clock_error on every path of another host (if the mesh is big enough)."""
    order = [mesh.hosts[i] for i in rng.permutation(len(mesh.hosts))]
    silent, episodes = order[0], []
    start = _onset(config, rng)
    end = _end("no_data", start, config, rng)
    for path in mesh.paths:
        if path.src is silent:
            episodes.append(Episode("no_data", path.src.name, path.dst.name, start, end, {"host": silent.name}))
            plan.take(path, "no_data")
    if len(mesh.hosts) < 6:
        return episodes
    clock = order[1]
    start = _onset(config, rng)
    end = _end("clock_error", start, config, rng)
    params = {"host": clock.name, **_clock_params(rng)}
    quiet = next(e for e in episodes)  # the no_data window, to skip a path silent throughout
    for path in mesh.paths:
        if clock not in (path.src, path.dst):
            continue
        if path.src is silent and quiet.start <= start and (quiet.end is None or (end is not None and quiet.end >= end)):
            continue
        episodes.append(Episode("clock_error", path.src.name, path.dst.name, start, end, params))
        plan.take(path, "clock_error")
    return episodes


def _pick(kind: str, mesh: SimulatedMesh, plan: _Plan, rng: np.random.Generator, *, over_budget: bool) -> Path | None:
    eligible = [p for p in mesh.paths if _eligible(kind, p)]
    pools = []
    if kind in THROUGHPUT_ONLY:
        pools.append([p for p in eligible if plan.overlay_ok(p)])
    if len(plan.uses) < (plan.hard_budget if over_budget else plan.budget):
        pools.append([p for p in eligible if plan.free(p)])
    for pool in pools:
        if pool:
            if kind == "window_limited":  # where it matters: the longer half of the candidates
                pool = sorted(pool, key=lambda p: -p.rtt_ms)[: max(1, (len(pool) + 1) // 2)]
            return pool[int(rng.integers(len(pool)))]
    return None


def choose_episodes(mesh: SimulatedMesh, config: SimConfig, rng: np.random.Generator) -> list[Episode]:
    """Every injected episode, one per (kind, path), in a stable order."""
    if config.benign_only:
        return []
    plan = _Plan(mesh)
    episodes = _host_episodes(mesh, config, plan, rng)
    if config.benign and len(mesh.hosts) >= 6:  # the catalogue's untuned host: window-limited from the first day
        taken = {index for index, uses in plan.uses.items() if uses != {"clock_error"}}
        untuned = untuned_host_episodes(mesh, config, taken, episodes[0].params["host"] if episodes else None)
        for episode in untuned:
            path = mesh.path(episode.src, episode.dst)
            if plan.free(path):  # on top of the budget: the other kinds keep their paths
                plan.budget += 1
                plan.hard_budget += 1
            plan.take(path, "window_limited")
        episodes += untuned
    per_kind = max(1, round(len(mesh.paths) / 21))
    path_kinds = [k for k in KINDS if k not in ("clock_error", "no_data")]
    first = ["mtu_blackhole", "window_limited", "throughput_drop", "route_change"]
    rest = [path_kinds[i] for i in rng.permutation(len(path_kinds)) if path_kinds[i] not in first]
    placed: Counter = Counter()
    for over_budget in (False, True):
        for _ in range(per_kind):
            for kind in first + rest:
                if placed[kind] >= per_kind:
                    continue
                path = _pick(kind, mesh, plan, rng, over_budget=over_budget)
                if path is None:
                    continue
                plan.take(path, kind)
                placed[kind] += 1
                start = _onset(config, rng)
                params = _params(kind, path, rng)
                if kind == "diurnal_saturation":
                    start = _busy_start(start, params["busy_utc_h"])
                if kind == "rising_loss":  # the first two show both: probes on the bad member, and beside it
                    params["owamp_on_bad_member"] = placed[kind] == 1 if placed[kind] <= 2 else bool(rng.random() < 0.5)
                end = _end(kind, start, config, rng)
                episodes.append(Episode(kind, path.src.name, path.dst.name, start, end, params))
    return sorted(episodes, key=lambda e: (KINDS.index(e.kind), e.src, e.dst))


def _busy_start(onset: int, busy_utc_h: float) -> int:
    """The first busy window that starts at or after the onset: the label's start.

    >>> _busy_start(1_000_000 * 60, 14.5) % DAY_S / 3600
    14.5
    """
    start = onset - onset % DAY_S + int(busy_utc_h * 3600) // 60 * 60
    return start if start >= onset else start + DAY_S
