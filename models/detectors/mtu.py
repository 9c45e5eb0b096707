"""mtu_blackhole: a path MTU drop that swallows big packets.

Two signatures, either enough when seen twice in a row, or together once: tracepath reports a
path MTU below what the path used to carry (``pmtu 1500`` on a 9000-byte path) and then hears
nothing past that hop; throughput runs stall at the start — seconds with almost no bytes and
retransmits while TCP waits for a frag-needed that never comes — and then crawl. Traceroute's
small probes and owamp look fine, which is why operators miss it. It closes when a run starts
cleanly and the path MTU is back.

A stall is a black hole's only when its seconds retransmit (``stall_retransmits_min``): every
full-size segment vanishes, so nothing is acknowledged and each retransmission timeout resends
the head segment (RTO ≈ RTT + 4 RTT-variance, at least 200 ms, doubling each time: two or more
expiries in a 2 s stall on any terrestrial path). A slow start on a long fat path also moves
little of the run's rate in its first seconds (from ten segments, the window doubles once a
round trip: ~13 round trips, over 2 s at 170 ms, to reach 6 Gb/s; an RTT raised by a busy
hour's queue lengthens it), and where it overshoots a queue it loses a few segments too. What
only a hole does is keep the run crawling: every timeout resets the window to one segment, so
the run never regains the path's window, where a congestion loss halves it once and the run
carries on within a few times of its usual rate (the path's one judge, :mod:`pathwatch.models.stall`,
built from the ``context`` parameters: under ``crawl_fraction`` of the path's usual runs' window,
or rate where no window is reported).
"""

from __future__ import annotations

from dataclasses import dataclass

from pathwatch.models.anomaly import Anomaly
from pathwatch.models.base import Detector
from pathwatch.models.params import Params
from pathwatch.models.observe import ThroughputObs, TraceObs


@dataclass(frozen=True)
class MtuParams(Params):
    evidence_needed: int = 2    # signatures in a row before opening (one of each kind also does)
    clean_needed: int = 2       # clean observations in a row that close it


class MtuDetector(Detector):
    name = "mtu"
    kinds = ("mtu_blackhole",)
    reads = (ThroughputObs, TraceObs)
    Params = MtuParams

    def __init__(self, source, destination, params=None, context=None):
        super().__init__(source, destination, params, context)
        self.path_mtu: int | None = None      # the largest path MTU a trace has shown
        self.signs: list[tuple[float, str, dict]] = []
        self.clean = 0

    def observe(self, obs) -> list[Anomaly]:
        sign = self._trace_sign(obs) if isinstance(obs, TraceObs) else self._run_sign(obs)
        return self._judge(obs, sign)

    def handlers(self) -> dict[type, object]:
        return {TraceObs: self._observe_trace, ThroughputObs: self._observe_run}

    def _observe_trace(self, obs: TraceObs) -> list[Anomaly]:
        return self._judge(obs, self._trace_sign(obs))

    def _observe_run(self, obs: ThroughputObs) -> list[Anomaly]:
        return self._judge(obs, self._run_sign(obs))

    def _judge(self, obs, sign) -> list[Anomaly]:
        if sign is None:
            return []
        if sign is False:
            if self.signs:
                self.signs.clear()
            self.clean += 1
            if self.clean >= self.p.clean_needed and "mtu_blackhole" in self.episodes:
                return self.close("mtu_blackhole", obs.t, {"recovered": "clean runs and traces"})
            return []
        self.clean = 0
        if "mtu_blackhole" in self.episodes:
            # Open already: nothing to add. (Signs gathered now would only be cleared by the clean
            # observation that has to come before it closes, unread.)
            return []
        self.signs.append((obs.t, *sign))
        kinds = {kind for _, kind, _ in self.signs}
        if len(self.signs) < self.p.evidence_needed and len(kinds) < 2:
            return []
        evidence: dict = {}
        for _, _, facts in self.signs:
            evidence.update(facts)
        evidence["signatures"] = sorted(kinds)
        return self.open("mtu_blackhole", start=self.signs[0][0], at=obs.t, severity="major",
                         score=0.9 if len(kinds) == 2 else 0.7, summary=_summary(evidence), evidence=evidence)

    def _trace_sign(self, obs: TraceObs):
        """(kind, facts) for an MTU drop, False for a trace that shows the full MTU, None for no opinion."""
        pmtu, hop_mtu = obs.pmtu_bytes, obs.min_hop_mtu
        if not obs.ok or (pmtu is None and hop_mtu is None):
            return None
        # The smaller reported MTU (min() over none left, e.g. pmtu 0, raises as it always did).
        mtu = min(pmtu, hop_mtu) if pmtu and hop_mtu else pmtu or hop_mtu or min(m for m in (pmtu, hop_mtu) if m)
        if obs.reached and (self.path_mtu is None or mtu >= self.path_mtu):
            self.path_mtu = max(self.path_mtu or 0, mtu)
            return False
        if self.path_mtu is None or mtu >= self.path_mtu:
            return None
        ttl = obs.min_hop_mtu_ttl
        hop = obs.hops[ttl - 1] if ttl and ttl <= len(obs.hops) else None
        return "trace", {"path_mtu_before": self.path_mtu, "path_mtu_now": mtu, "mtu_drop_ttl": ttl, "mtu_drop_hop": hop,
                         "silent_after_drop": obs.reached is False}

    def _run_sign(self, obs: ThroughputObs):
        if not obs.ok or obs.udp or not obs.bps:
            return None
        if self.context.stalls.black_hole(obs):
            return "throughput", {"stall_s": obs.stall_s, "stall_retransmits": obs.stall_retransmits,
                                  "run_bps": round(obs.bps)}
        return False


def _summary(e: dict) -> str:
    parts = []
    if "path_mtu_now" in e:
        where = f" at hop {e['mtu_drop_ttl']} ({e['mtu_drop_hop']})" if e.get("mtu_drop_ttl") else ""
        silent = " and silence beyond it" if e.get("silent_after_drop") else ""
        parts.append(f"path MTU falls from {e['path_mtu_before']} to {e['path_mtu_now']}{where}{silent}")
    if "stall_s" in e:
        parts.append(f"throughput runs stall {e['stall_s']:.0f} s at the start ({e['stall_retransmits']} retransmits) "
                     f"then crawl at {e['run_bps'] / 1e6:,.1f} Mb/s")
    return "MTU black hole: " + "; ".join(parts) + "."
